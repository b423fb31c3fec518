%% scp_sub_sup: one SCP sub-supervisor: owns pairs/supervisors server children.
%%
%% one_for_one, intensity 1000000 per 1 s so it never gives up under the
%% injected kill rates. Child i is the server of pair (group, i); it is
%% `transient` when the run has recovery = true (restarted after the brutal
%% kill, whose exit reason `killed` is abnormal) and `temporary` when
%% recovery = false (never restarted: progressive permanent failures).
%% Shutdown is brutal_kill: servers hold no resources to clean up, and
%% scp_injector relies on it for actions with restart = false (see there).
%% Registered as scp_sub_<group> so the injector can address it.
-module(scp_sub_sup).
-behaviour(supervisor).

-export([start_link/2, init/1, name/1]).

name(G) -> list_to_atom("scp_sub_" ++ integer_to_list(G)).

start_link(G, Config) ->
    supervisor:start_link({local, name(G)}, ?MODULE, {G, Config}).

init({G, #{pairs_per_sup := PPS, recovery := Recovery,
           delay_ms := Delay, payload_bytes := PayloadBytes}}) ->
    Restart = case Recovery of true -> transient; false -> temporary end,
    Children = [#{id => {server, G, I},
                  start => {scp_server, start_link, [G, I, Delay, PayloadBytes]},
                  restart => Restart, shutdown => brutal_kill, type => worker}
                || I <- lists:seq(0, PPS - 1)],
    {ok, {#{strategy => one_for_one, intensity => 1000000, period => 1}, Children}}.
