%% scp_server: the server half of one SCP pair, and its client.
%%
%% Rules (workloads.md §1 and the peer contract):
%%  1. On start the server spawn_links its client, so a brutal kill of the
%%     server (exit(Pid, kill)) takes the client down with it; the server
%%     does not trap exits, so a dying client takes the server down too.
%%  2. Exchange loop: server sends {ping, Server, Payload} (payload_bytes
%%     bytes); the client arms erlang:send_after(delay_ms) - a timer, no
%%     thread is blocked - and on its expiry replies {pong, Client, Payload};
%%     the server casts `exchange` to the aggregator and sends the next ping.
%%  3. Every start of slot (group, slot) is counted in an atomic counter that
%%     survives restarts; the 2nd and later starts emit
%%     restarted {target:"g<group>/s<slot>", attempt:<number of restarts>}.
%%  4. The server publishes its pid in the public ETS table scp_pids under
%%     {Group, Slot}, which is how the injector finds a slot's live server
%%     without calling (and so perturbing) the supervisor.
-module(scp_server).
-behaviour(gen_server).

-export([start_link/4, target/2]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

start_link(G, I, DelayMs, PayloadBytes) ->
    gen_server:start_link(?MODULE, {G, I, DelayMs, PayloadBytes}, []).

target(G, I) ->
    iolist_to_binary([$g, integer_to_binary(G), "/s", integer_to_binary(I)]).

init({G, I, DelayMs, PayloadBytes}) ->
    {Starts, PPS} = persistent_term:get(scp_starts),
    case counters:get(Starts, G * PPS + I + 1) of
        0 -> ok;
        Before -> troupe_events:emit(restarted, [{target, target(G, I)}, {attempt, Before}])
    end,
    counters:add(Starts, G * PPS + I + 1, 1),
    ets:insert(scp_pids, {{G, I}, self()}),
    Payload = binary:copy(<<$x>>, PayloadBytes),
    Server = self(),
    Client = spawn_link(fun() -> client_loop(DelayMs) end),
    Client ! {ping, Server, Payload},
    {ok, #{client => Client, payload => Payload}}.

handle_info({pong, Client, Payload}, #{client := Client} = S) ->
    gen_server:cast(scp_aggregator, exchange),
    Client ! {ping, self(), Payload},
    {noreply, S};
handle_info(_Other, S) ->
    {noreply, S}.

handle_call(_Req, _From, S) -> {reply, {error, unknown_call}, S}.
handle_cast(_Msg, S) -> {noreply, S}.

%% The client: a plain linked process.
client_loop(DelayMs) ->
    receive
        {ping, Server, Payload} ->
            erlang:send_after(DelayMs, self(), {reply, Server, Payload}),
            client_loop(DelayMs);
        {reply, Server, Payload} ->
            Server ! {pong, self(), Payload},
            client_loop(DelayMs)
    end.
