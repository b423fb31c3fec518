%% scp_injector: carries out the lab's fault schedule against the SCP SUB.
%%
%% Where it runs is the config key `injector` (docs/scp.md, "Where the
%% injector runs"):
%%  - in_process: an Erlang process of the measured VM (start/3), sharing its
%%    schedulers and memory with the SUB; the events it writes are the VM's
%%    (node TROUPE_NODE, default erlang-scp).
%%  - node: a process of its own Erlang node, a separate OS process started by
%%    scp_injector_node (start_remote/4), reaching the SUB over Erlang
%%    distribution; it writes its own events as node `injector`.
%% Either way it is spawned with priority `high`, so its VM's schedulers run it
%% ahead of normal-priority work whenever it is runnable; it sleeps in
%% `receive ... after` until each action's absolute deadline T0 + at_ms on its
%% VM's monotonic clock (no drift accumulates), and does nothing else.
%%
%% Rules:
%%  1. Each action targets the server of (group, slot). If that server is not
%%     alive, the next slot in index order inside the same group is tried,
%%     wrapping around; if no server of the group is alive the action is
%%     skipped and counted (skipped_faults). The SUB's VM answers this from the
%%     scp_pids ETS table (pick/3: no call into the supervisors); a node
%%     injector asks it with one erpc call per action, as seed 001's injector
%%     asked the SUB across the wire.
%%  2. The kill is brutal: exit(Pid, kill), across distribution for a node
%%     injector; the linked client dies with it. If the run has
%%     recovery = true and the action says restart = false (a permanent kill),
%%     the kill goes through supervisor:terminate_child/2 instead, which with
%%     the brutal_kill shutdown of scp_sub_sup is also exit(Pid, kill) but
%%     tells the supervisor not to restart that child.
%%  3. After a kill it emits fault_injected {id, target:"g<g>/s<s>", kind:"kill"}
%%     naming the slot actually killed, stamped with the instant just before
%%     the kill was issued (so it sorts before the victim's restarted event),
%%     by its own VM's event writer.
%%  4. On {stop, From} (end of the window) it first carries out the actions
%%     already due (a loaded machine can deliver the stop before a kill
%%     scheduled just before the window's end), leaves later ones undone
%%     (counted as not_run) and replies {injector_done, Summary}; a node
%%     injector writes its node's run_finished first.
-module(scp_injector).

-export([start/3, start_remote/4, pick/3]).

%% start(Actions, T0Ms, Config) -> Pid: the in_process injector; T0Ms is on
%% this VM's monotonic clock.
start(Actions, T0, #{pairs_per_sup := PPS, recovery := Recovery}) ->
    spawn_opt(fun() -> loop(Actions, T0, {local, PPS, Recovery}, sum0()) end, [{priority, high}]).

%% start_remote(Actions, T0Us, Config, SubNode) -> Pid: the node injector,
%% called on the injector's node. T0Us is the window start in OS system time
%% (us since the epoch): the monotonic clocks of two VMs are not comparable.
start_remote(Actions, T0Us, #{pairs_per_sup := PPS, recovery := Recovery}, SubNode) ->
    Where = {remote, SubNode, PPS, Recovery},
    spawn_opt(fun() ->
                      T0 = (erlang:monotonic_time(microsecond) + T0Us - os:system_time(microsecond)) div 1000,
                      loop(Actions, T0, Where, sum0())
              end, [{priority, high}]).

sum0() -> #{done => 0, skipped => 0, errors => 0}.

loop([], _T0, Where, Sum) ->
    receive {stop, From} -> reply(Where, From, Sum#{not_run => 0}) end;
loop([#{at_ms := At} = A | Rest] = All, T0, Where, Sum) ->
    Wait = max(0, T0 + At - erlang:monotonic_time(millisecond)),
    receive
        {stop, From} ->
            Now = erlang:monotonic_time(millisecond),
            {Due, Later} = lists:splitwith(fun(#{at_ms := T}) -> T0 + T =< Now end, All),
            Sum1 = lists:foldl(fun(Act, S) -> act(Act, Where, S) end, Sum, Due),
            reply(Where, From, Sum1#{not_run => length(Later)})
    after Wait ->
            loop(Rest, T0, Where, act(A, Where, Sum))
    end.

%% Rule 4: a node injector ends its node's event stream before it answers.
reply({local, _, _}, From, Sum) ->
    From ! {injector_done, Sum};
reply({remote, _, _, _}, From, #{done := Done, skipped := Skipped, errors := Errors, not_run := NotRun} = Sum) ->
    Final = fun(Dropped) -> [{dropped_events, Dropped}, {errors, Errors}, {killed, Done},
                             {not_killed, Skipped + NotRun}] end,
    Sum1 = case troupe_events:finish(run_finished, Final) of
               {ok, _, 0} -> Sum;
               Other ->
                   io:format(standard_error, "scp_injector: event writer: ~p~n", [Other]),
                   Sum#{errors := Errors + 1}
           end,
    From ! {injector_done, Sum1}.

act(#{id := Id, group := G, slot := Slot, restart := Restart}, Where, Sum) ->
    try
        case find(Where, G, Slot) of
            none ->
                skipped;
            {S, Pid} ->
                Ts = os:system_time(microsecond),
                kill(Where, G, S, Pid, recovery(Where) andalso not Restart),
                troupe_events:emit_at(Ts, fault_injected, [{id, Id}, {target, scp_server:target(G, S)},
                                                            {kind, <<"kill">>}]),
                done
        end
    of
        Outcome -> incr(Outcome, Sum)
    catch
        C:E ->
            io:format(standard_error, "scp_injector: action ~p failed: ~p:~p~n", [Id, C, E]),
            incr(errors, Sum)
    end.

recovery({local, _, Recovery}) -> Recovery;
recovery({remote, _, _, Recovery}) -> Recovery.

%% Rule 1.
find({local, PPS, _}, G, Slot) -> pick(G, Slot, PPS);
find({remote, Sub, PPS, _}, G, Slot) -> erpc:call(Sub, ?MODULE, pick, [G, Slot, PPS], 5000).

%% Rule 2.
kill(_Where, _G, _S, Pid, false) ->
    exit(Pid, kill);
kill({local, _, _}, G, S, _Pid, true) ->
    ok = supervisor:terminate_child(scp_sub_sup:name(G), {server, G, S});
kill({remote, Sub, _, _}, G, S, _Pid, true) ->
    ok = supervisor:terminate_child({scp_sub_sup:name(G), Sub}, {server, G, S}).

%% pick(Group, Slot, PairsPerSup) -> {Slot, Pid} | none, on the SUB's VM (rule 1).
pick(G, Slot, PPS) -> live_slot(G, Slot, PPS, 0).

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
