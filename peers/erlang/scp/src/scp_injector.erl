%% scp_injector: carries out the lab's fault schedule against the SCP SUB.
%%
%% Footing (the brief allows the same VM for now): the injector is its own
%% Erlang process, spawned with priority `high`, so the BEAM schedulers run it
%% ahead of the normal-priority servers, clients, supervisors and aggregator
%% whenever it is runnable; it sleeps in `receive ... after` until each
%% action's absolute deadline T0 + at_ms on the monotonic clock (no drift
%% accumulates), finds its target in the scp_pids ETS table (no call into the
%% supervisors), and does nothing else. It is not a separate OS process or
%% node: it shares the VM, its schedulers and its memory with the SUB.
%%
%% Rules:
%%  1. Each action targets the server of (group, slot). If that server is not
%%     alive, the next slot in index order inside the same group is tried,
%%     wrapping around; if no server of the group is alive the action is
%%     skipped and counted (skipped_faults).
%%  2. The kill is brutal: exit(Pid, kill); the linked client dies with it.
%%     If the run has recovery = true and the action says restart = false
%%     (a permanent kill), the kill goes through
%%     supervisor:terminate_child/2 instead, which with the brutal_kill
%%     shutdown of scp_sub_sup is also exit(Pid, kill) but tells the
%%     supervisor not to restart that child.
%%  3. After a kill it emits fault_injected {id, target:"g<g>/s<s>", kind:"kill"}
%%     naming the slot actually killed, stamped with the instant just before
%%     the kill was issued (so it sorts before the victim's restarted event).
%%  4. On {stop, From} (end of the window) it first carries out the actions
%%     already due (a loaded machine can deliver the stop before a kill
%%     scheduled just before the window's end), leaves later ones undone
%%     (counted as not_run) and replies {injector_done, Summary}.
-module(scp_injector).

-export([start/3]).

%% start(Actions, T0Ms, Config) -> Pid.
start(Actions, T0, #{pairs_per_sup := PPS, recovery := Recovery}) ->
    spawn_opt(fun() -> loop(Actions, T0, PPS, Recovery, #{done => 0, skipped => 0, errors => 0}) end,
              [{priority, high}]).

loop([], _T0, _PPS, _Recovery, Sum) ->
    receive {stop, From} -> From ! {injector_done, Sum#{not_run => 0}} end;
loop([#{at_ms := At} = A | Rest] = All, T0, PPS, Recovery, Sum) ->
    Wait = max(0, T0 + At - erlang:monotonic_time(millisecond)),
    receive
        {stop, From} ->
            Now = erlang:monotonic_time(millisecond),
            {Due, Later} = lists:splitwith(fun(#{at_ms := T}) -> T0 + T =< Now end, All),
            Sum1 = lists:foldl(fun(Act, S) -> act(Act, PPS, Recovery, S) end, Sum, Due),
            From ! {injector_done, Sum1#{not_run => length(Later)}}
    after Wait ->
            loop(Rest, T0, PPS, Recovery, act(A, PPS, Recovery, Sum))
    end.

act(#{id := Id, group := G, slot := Slot, restart := Restart}, PPS, Recovery, Sum) ->
    case live_slot(G, Slot, PPS, 0) of
        none ->
            incr(skipped, Sum);
        {S, Pid} ->
            try
                Ts = os:system_time(microsecond),
                kill(G, S, Pid, Recovery andalso not Restart),
                troupe_events:emit_at(Ts, fault_injected, [{id, Id}, {target, scp_server:target(G, S)},
                                                    {kind, <<"kill">>}]),
                incr(done, Sum)
            catch
                C:E ->
                    io:format(standard_error, "scp_injector: action ~p failed: ~p:~p~n", [Id, C, E]),
                    incr(errors, Sum)
            end
    end.

kill(_G, _S, Pid, false) ->
    exit(Pid, kill);
kill(G, S, _Pid, true) ->
    ok = supervisor:terminate_child(scp_sub_sup:name(G), {server, G, S}).

live_slot(_G, _Slot, PPS, K) when K >= PPS -> none;
live_slot(G, Slot, PPS, K) ->
    S = (Slot + K) rem PPS,
    case ets:lookup(scp_pids, {G, S}) of
        [{_, Pid}] ->
            case is_process_alive(Pid) of
                true -> {S, Pid};
                false -> live_slot(G, Slot, PPS, K + 1)
            end;
        [] -> live_slot(G, Slot, PPS, K + 1)
    end.

incr(K, Sum) -> maps:update_with(K, fun(V) -> V + 1 end, Sum).
