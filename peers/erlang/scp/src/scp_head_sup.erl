%% scp_head_sup: the head supervisor of the SCP SUB (workloads.md §1, seed 001 fig. 2).
%%
%% one_for_one over the aggregator (started first, so the servers can report
%% to it from their first exchange) and `supervisors` sub-supervisors, started
%% in index order. Restart intensity/period are OTP's defaults (1 in 5 s): the
%% injector never targets these children, so a restart here means a bug and
%% should not be papered over.
-module(scp_head_sup).
-behaviour(supervisor).

-export([start_link/1, init/1]).

%% Config: the map from scp_config:load_config/1.
start_link(Config) ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, Config).

init(#{supervisors := S} = Config) ->
    Aggregator = #{id => aggregator,
                   start => {scp_aggregator, start_link, []},
                   restart => permanent, shutdown => 5000, type => worker},
    Subs = [#{id => {sub, G},
              start => {scp_sub_sup, start_link, [G, Config]},
              restart => permanent, shutdown => infinity, type => supervisor}
            || G <- lists:seq(0, S - 1)],
    {ok, {#{strategy => one_for_one}, [Aggregator | Subs]}}.
