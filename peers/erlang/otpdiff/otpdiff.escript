#!/usr/bin/env escript
%% -*- erlang -*-
%%! -noshell
%% otpdiff.escript: runs supervisor scenarios on OTP's own `supervisor` and prints a normalised
%% trace per scenario, for Troupe's differential test
%% (crates/troupe/tests/supervision_otp_diff.rs runs the same scenarios on Troupe and compares).
%%
%% Usage: escript otpdiff.escript SCENARIO_FILE
%%
%% The scenario language (one item a line; see README.md next to this file):
%%   scenario NAME
%%   sup STRATEGY INTENSITY PERIOD_S [AUTO]     one_for_one | one_for_all | rest_for_one;
%%                                               AUTO: never | any_significant | all_significant
%%                                               (a RESTART written with a trailing "*", e.g.
%%                                               transient*, marks a significant child)
%%   child ID RESTART SHUTDOWN FAILS             static child; SHUTDOWN brutal | infinity | MS;
%%                                               FAILS: "-" or comma-separated start numbers
%%                                               (1-based, per id) whose init fails, or, with
%%                                               a trailing "i", returns ignore
%%   supchild ID RESTART STRATEGY INTENSITY PERIOD_S
%%                                               a child supervisor (shutdown infinity), whose
%%                                               children follow as:
%%   nested SUPID ID RESTART SHUTDOWN FAILS      a worker of child supervisor SUPID (ids are
%%                                               unique over the whole tree)
%%   simple RESTART SHUTDOWN INTENSITY PERIOD_S  instead of `sup`: a simple_one_for_one supervisor,
%%                                               whose children are started by
%%   step start_child NAME FAILS                 (a child made from the argument NAME; names
%%                                               are unique; `which` lists children by name,
%%                                               sorted)
%%   step crash ID REASON                        REASON normal | shutdown | shutdown_term | boom | killed
%%   step terminate ID | step restart ID | step delete ID
%%   step start_child ID RESTART SHUTDOWN FAILS
%%   step stop
%%   step crash_which ID REASON                  a crash, then one which_children call that reaches
%%                                               the supervisor during its restart (the restart's
%%                                               first failing start waits until the call is
%%                                               queued), printed as answered: "=> ok now ..."
%%   step tick                                   waits until the monotonic clock (the intensity
%%                                               clock) begins a whole second: the mark
%%   step at MS                                  waits until MS milliseconds after the mark
%%   end
%% Output, per scenario: "scenario NAME", then for the start and each step a line
%% "START|<step> => RESULT", the children's lifecycle events since the previous line
%% ("  log ID:started" / "ID:failed" / "ID:stopped:REASON"), and the settled children
%% ("  which ID=running|undefined|restarting ...", a running child supervisor followed by its
%% children in brackets); "  down REASON" when the supervisor died.
-mode(compile).

-export([main/1, init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2, start_child_proc/2]).

main([File]) ->
    %% Supervisor, crash and error reports would interleave with the trace.
    logger:set_primary_config(level, none),
    {ok, Bin} = file:read_file(File),
    Lines = [string:trim(L) || L <- string:split(binary_to_list(Bin), "\n", all)],
    ets:new(otpdiff_log, [named_table, public, ordered_set]),
    ets:new(otpdiff_starts, [named_table, public, set]),
    ets:new(otpdiff_fails, [named_table, public, set]),
    ets:new(otpdiff_names, [named_table, public, set]),
    ets:new(otpdiff_gate, [named_table, public, set]),
    process_flag(trap_exit, true),
    run_all([L || L <- Lines, L =/= ""]),
    halt(0);
main(_) ->
    io:format(standard_error, "usage: otpdiff.escript SCENARIO_FILE~n", []),
    halt(2).

run_all([]) -> ok;
run_all(Lines) ->
    {Scenario, Rest} = take_scenario(Lines, []),
    run_scenario(Scenario),
    run_all(Rest).

take_scenario(["end" | Rest], Acc) -> {lists:reverse(Acc), Rest};
take_scenario([L | Rest], Acc) -> take_scenario(Rest, [L | Acc]).

run_scenario(Lines) ->
    ets:delete_all_objects(otpdiff_log),
    ets:delete_all_objects(otpdiff_starts),
    ets:delete_all_objects(otpdiff_fails),
    ets:delete_all_objects(otpdiff_gate),
    {Name, Sup, Children, Steps} = parse(Lines, undefined, undefined, [], []),
    io:format("scenario ~s~n", [Name]),
    put(simple, element(1, Sup) =:= simple),
    {Flags, Specs} = case Sup of
        {simple, R, Sd, I, P} ->
            [T] = [maps:remove(id, child_spec(["template", R, Sd, "-"]))],
            {#{strategy => simple_one_for_one, intensity => I, period => P},
             [T#{id => template, start => {?MODULE, start_child_proc, []}}]};
        {Strategy, Intensity, Period, Auto} ->
            {#{strategy => Strategy, intensity => Intensity, period => Period, auto_shutdown => Auto},
             [child_spec(C) || C <- Children]}
    end,
    case supervisor:start_link(?MODULE, {sup, Flags, Specs}) of
        {ok, Pid} ->
            unlink(Pid),
            Mon = monitor(process, Pid),
            io:format("START => ok~n", []),
            settle_and_print(Pid, Mon),
            run_steps(Steps, Pid, Mon);
        {error, {shutdown, {failed_to_start_child, Id, _}}} ->
            io:format("START => start_failed ~s~n", [Id]),
            flush_exits(),
            print_log()
    end.

parse([], Name, Sup, Cs, Ss) -> {Name, Sup, lists:reverse(Cs), lists:reverse(Ss)};
parse([L | Rest], Name, Sup, Cs, Ss) ->
    case string:lexemes(L, " ") of
        ["scenario", N] -> parse(Rest, N, Sup, Cs, Ss);
        ["simple", R, Sd, I, P] -> parse(Rest, Name, {simple, R, Sd, list_to_integer(I), list_to_integer(P)}, Cs, Ss);
        ["sup", St, I, P] -> parse(Rest, Name, {list_to_atom(St), list_to_integer(I), list_to_integer(P), never}, Cs, Ss);
        ["sup", St, I, P, A] ->
            parse(Rest, Name, {list_to_atom(St), list_to_integer(I), list_to_integer(P), list_to_atom(A)}, Cs, Ss);
        ["child" | C] -> parse(Rest, Name, Sup, [C | Cs], Ss);
        ["supchild" | C] -> parse(Rest, Name, Sup, [["sup" | C] | Cs], Ss);
        ["nested", Parent | C] ->
            Cs1 = [case X of ["sup", Parent | _] -> X ++ [C]; _ -> X end || X <- Cs],
            parse(Rest, Name, Sup, Cs1, Ss);
        ["step" | S] -> parse(Rest, Name, Sup, Cs, [S | Ss])
    end.

child_spec(["sup", Id, Restart, St, I, P | Nested]) ->
    Flags = #{strategy => list_to_atom(St), intensity => list_to_integer(I), period => list_to_integer(P)},
    #{id => Id, start => {supervisor, start_link, [?MODULE, {sup, Flags, [child_spec(C) || C <- Nested]}]},
      restart => list_to_atom(Restart), shutdown => infinity, type => supervisor};
child_spec([Id, Restart, Shutdown, Fails]) ->
    Fs = case Fails of "-" -> []; _ -> [start_outcome(F) || F <- string:lexemes(Fails, ",")] end,
    ets:insert(otpdiff_fails, {Id, Fs}),
    Sd = case Shutdown of "brutal" -> brutal_kill; "infinity" -> infinity; Ms -> list_to_integer(Ms) end,
    {R, Significant} = case lists:reverse(Restart) of
                           "*" ++ R0 -> {lists:reverse(R0), true};
                           _ -> {Restart, false}
                       end,
    #{id => Id, start => {?MODULE, start_child_proc, [Id, self()]}, restart => list_to_atom(R),
      significant => Significant, shutdown => Sd, type => worker}.

run_steps([], _Pid, _Mon) -> ok;
run_steps([Step | Rest], Pid, Mon) ->
    Result = step(Step, Pid, Mon),
    io:format("~s => ~s~n", [string:join(Step, " "), Result]),
    case Result of
        "stopped" ->
            %% A simple_one_for_one supervisor stops its children all at once: their ends
            %% come in no fixed order, so they are printed sorted.
            print_log(get(simple) =:= true),
            down(Mon);
        _ ->
            case settle_and_print(Pid, Mon) of
                alive -> run_steps(Rest, Pid, Mon);
                dead -> ok
            end
    end.

start_outcome(F) ->
    case lists:reverse(F) of
        "i" ++ N -> {list_to_integer(lists:reverse(N)), ignore};
        _ -> {list_to_integer(F), fail}
    end.

step(["crash", Id, Reason], Pid, _Mon) ->
    case running(Pid, Id) of
        undefined -> "not_running";
        C ->
            CM = monitor(process, C),
            case Reason of
                "killed" -> exit(C, kill);
                _ -> gen_server:cast(C, {exit, reason(Reason)})
            end,
            receive {'DOWN', CM, process, C, _} -> ok end,
            "ok"
    end;
step(["crash_which", Id, Reason], Pid, Mon) ->
    %% The next failing start waits (the gate) until this which_children call is in the
    %% supervisor's mailbox: the call reaches the supervisor while its restart is under way.
    ets:insert(otpdiff_gate, {armed}),
    R = step(["crash", Id, Reason], Pid, Mon),
    Me = self(),
    Helper = spawn(fun() -> Me ! {now, self(), catch supervisor:which_children(Pid)} end),
    release_gate(Pid, Helper, 10000),
    ets:delete(otpdiff_gate, armed),
    Now = receive
        {now, Helper, Kids} when is_list(Kids) -> lists:flatten(describe(Kids));
        {now, Helper, _} -> "dead"
    end,
    R ++ " now " ++ Now;
step(["tick"], _Pid, _) ->
    %% Until just after the VM's monotonic clock (OTP's intensity clock) begins a whole second.
    put(mark, wait_second(erlang:monotonic_time(second)) * 1000),
    "ok";
step(["at", Ms], _Pid, _) ->
    Wait = get(mark) + list_to_integer(Ms) - erlang:monotonic_time(millisecond),
    case Wait > 0 of
        true -> timer:sleep(Wait);
        false -> ok
    end,
    "ok";
step(["terminate", Id], Pid, _) ->
    case simple(Pid) of
        true ->
            case running(Pid, Id) of
                undefined -> "not_found";
                C -> result(supervisor:terminate_child(Pid, C))
            end;
        false -> result(supervisor:terminate_child(Pid, Id))
    end;
step(["start_child", Name, Fails], Pid, _) ->
    child_spec([Name, "permanent", "brutal", Fails]),
    result(supervisor:start_child(Pid, [Name, self()]));
step(["restart", Id], Pid, _) -> result(supervisor:restart_child(Pid, Id));
step(["delete", Id], Pid, _) -> result(supervisor:delete_child(Pid, Id));
step(["start_child" | C], Pid, _) -> result(supervisor:start_child(Pid, child_spec(C)));
step(["stop"], Pid, _) ->
    ok = gen_server:stop(Pid, shutdown, infinity),
    "stopped".

wait_second(S) ->
    case erlang:monotonic_time(second) of
        S -> timer:sleep(1), wait_second(S);
        S1 -> S1
    end.

%% Lets the gated start go once it waits and the helper's call is queued (or after N ms).
release_gate(Pid, Helper, N) ->
    Queued = case process_info(Pid, messages) of
        {messages, Msgs} -> lists:any(fun({'$gen_call', {From, _}, which_children}) -> From =:= Helper;
                                         (_) -> false end, Msgs);
        undefined -> true
    end,
    case ets:lookup(otpdiff_gate, waiting) of
        [{waiting, G}] when Queued -> G ! go, ets:delete(otpdiff_gate, waiting);
        [{waiting, G}] when N =< 0 -> G ! go, ets:delete(otpdiff_gate, waiting);
        _ when N =< 0 -> ok;
        _ -> timer:sleep(1), release_gate(Pid, Helper, N - 1)
    end.

reason("normal") -> normal;
reason("shutdown") -> shutdown;
reason("shutdown_term") -> {shutdown, x};
reason("boom") -> boom.

result(ok) -> "ok";
result({ok, P}) when is_pid(P) -> "ok";
result({ok, undefined}) -> "ignore";
result({error, {already_started, _}}) -> "already_started";
result({error, already_present}) -> "already_present";
result({error, running}) -> "running";
result({error, restarting}) -> "restarting";
result({error, not_found}) -> "not_found";
result({error, _}) -> "error".

%% The running child `Id`, looked for in the tree (one level of child supervisors).
running(Pid, Id) ->
    Kids = [{name(K, C), C, T, M} || {K, C, T, M} <- supervisor:which_children(Pid)],
    case lists:keyfind(Id, 1, Kids) of
        {_, C, _, _} when is_pid(C) -> C;
        {_, _, _, _} -> undefined;
        false ->
            Found = [running(S, Id) || {_, S, supervisor, _} <- Kids, is_pid(S)],
            case [C || C <- Found, C =/= undefined] of
                [C | _] -> C;
                [] -> undefined
            end
    end.

%% Children not yet settled (restarting, or listed but dead), at this level and in running child
%% supervisors.
unsettled(Kids) ->
    [K || {_, C, _, _} = K <- Kids, C =:= restarting orelse (is_pid(C) andalso not is_process_alive(C))]
    ++ lists:append([case catch supervisor:which_children(S) of
                         L when is_list(L) -> unsettled(L);
                         _ -> [S]
                     end || {_, S, supervisor, _} <- Kids, is_pid(S), is_process_alive(S)]).

%% A simple_one_for_one supervisor's children have no id: they go by the name they were started
%% with, sorted (OTP lists them in no particular order).
describe(Kids) ->
    case Kids of
        [{undefined, _, _, _} | _] ->
            string:join(lists:sort([describe_one({name(undefined, C), C, T, M}) || {_, C, T, M} <- Kids]), " ");
        _ ->
            string:join([describe_one(K) || K <- lists:reverse(Kids)], " ")
    end.

name(undefined, C) when is_pid(C) ->
    case ets:lookup(otpdiff_names, C) of [{_, N}] -> N; [] -> "?" end;
name(Id, _) -> Id.

simple(_Pid) -> get(simple) =:= true.

describe_one({Id, S, supervisor, _}) when is_pid(S) ->
    Inner = case catch supervisor:which_children(S) of L when is_list(L) -> describe(L); _ -> "?" end,
    io_lib:format("~s=running[~s]", [Id, Inner]);
describe_one({Id, C, _, _}) ->
    io_lib:format("~s=~s", [Id, state(C)]).

%% Calls which_children until nothing is restarting and no listed child is dead (a retry or an
%% exit not yet handled), then prints the log and the children; `dead` when the supervisor died.
settle_and_print(Pid, Mon) -> settle_and_print(Pid, Mon, 10000).

settle_and_print(Pid, Mon, N) ->
    case catch supervisor:which_children(Pid) of
        Kids when is_list(Kids) ->
            case unsettled(Kids) of
                [_ | _] when N > 0 -> settle_and_print(Pid, Mon, N - 1);
                _ ->
                    print_log(),
                    io:format("  which ~s~n", [describe(Kids)]),
                    alive
            end;
        _ ->
            print_log(get(simple) =:= true),
            down(Mon),
            dead
    end.

state(C) when is_pid(C) -> "running";
state(restarting) -> "restarting";
state(undefined) -> "undefined".

down(Mon) ->
    receive {'DOWN', Mon, process, _, R} -> io:format("  down ~s~n", [format_reason(R)]) end,
    flush_exits().

flush_exits() ->
    receive {'EXIT', _, _} -> flush_exits() after 0 -> ok end.

print_log() -> print_log(false).

print_log(Sorted) ->
    Lines = [L || {_, L} <- ets:tab2list(otpdiff_log)],
    [io:format("  log ~s~n", [L]) || L <- case Sorted of true -> lists:sort(Lines); false -> Lines end],
    ets:delete_all_objects(otpdiff_log).

log(Line) -> ets:insert(otpdiff_log, {erlang:unique_integer([monotonic]), Line}).

format_reason({shutdown, x}) -> "shutdown_term";
format_reason(R) when is_atom(R) -> atom_to_list(R);
format_reason(R) -> io_lib:format("~p", [R]).

%% The child: a gen_server that traps exits (so `terminate` logs every graceful stop, as
%% Troupe's `stopped` hook runs for every graceful stop) and fails (or ignores) the init of the
%% start numbers listed for its id.
start_child_proc(Id, _Runner) -> gen_server:start_link(?MODULE, {child, Id}, []).


init({sup, Flags, Specs}) -> {ok, {Flags, Specs}};
init({child, Id}) ->
    process_flag(trap_exit, true),
    ets:insert(otpdiff_names, {self(), Id}),
    N = ets:update_counter(otpdiff_starts, Id, 1, {Id, 0}),
    [{_, Fails}] = ets:lookup(otpdiff_fails, Id),
    case lists:keyfind(N, 1, Fails) of
        {N, fail} ->
            %% Armed by `crash_which`: the first failing start waits for the runner's go.
            case ets:take(otpdiff_gate, armed) of
                [_] ->
                    ets:insert(otpdiff_gate, {waiting, self()}),
                    receive go -> ok after 10000 -> ok end;
                [] -> ok
            end,
            log(Id ++ ":failed"),
            {stop, failed};
        {N, ignore} -> log(Id ++ ":ignored"), ignore;
        false -> log(Id ++ ":started"), {ok, Id}
    end.

handle_call(_, _From, Id) -> {reply, ok, Id}.
handle_cast({exit, R}, Id) -> {stop, R, Id}.
handle_info(_, Id) -> {noreply, Id}.
terminate(R, Id) -> log(Id ++ ":stopped:" ++ format_reason(R)).
