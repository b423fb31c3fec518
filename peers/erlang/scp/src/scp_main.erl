%% scp_main: entry point of the Erlang SCP peer (`peers/erlang/scp/run`).
%%
%% Reads the lab's environment (TROUPE_CONFIG, TROUPE_SCHEDULE, TROUPE_EVENTS,
%% TROUPE_RUN_ID, optional TROUPE_NODE), validates everything before starting,
%% then runs one SCP measurement:
%%   run_started -> (injector = node: the injector's own node started, ready
%%   {what:"injector", count:1, pid}) -> head supervisor tree up (all pairs
%%   exchanging) -> aggregator emits ready and fixes T0 = now + warmup_s ->
%%   injector started with the same T0 (in this VM, or on its node) ->
%%   duration_s throughput lines -> injector stopped (and its node) ->
%%   run_finished {dropped_events, errors, skipped_faults} -> exit 0.
%% Errors and skipped faults: with injector = in_process this node's
%% run_finished carries the injector's errors; with injector = node the
%% injector node's own run_finished does (the lab sums every node's), and this
%% node's skipped_faults counts the actions not carried out in both modes.
%% Exit codes: 0 done, 2 bad input (nothing started), 1 failure during the run.
%% Every wait is bounded.
-module(scp_main).

-export([main/0]).

main() ->
    try run() of
        ok -> halt(0)
    catch
        throw:{input, Msg} ->
            io:format(standard_error, "scp: ~ts~n", [Msg]),
            halt(2);
        throw:{failed, Msg} ->
            io:format(standard_error, "scp: run failed: ~ts~n", [Msg]),
            halt(1);
        C:E:St ->
            io:format(standard_error, "scp: crashed: ~p:~p~n~p~n", [C, E, St]),
            halt(1)
    end.

quiet_injected_kills(#{msg := {report, #{label := {supervisor, child_terminated},
                                          report := R}}} = Event, _) ->
    case proplists:get_value(reason, R) of
        killed -> stop;
        _ -> Event
    end;
quiet_injected_kills(Event, _) -> Event.

env(Name) ->
    case os:getenv(Name) of
        false -> throw({input, Name ++ " is not set"});
        "" -> throw({input, Name ++ " is empty"});
        V -> V
    end.

run() ->
    ConfigPath = env("TROUPE_CONFIG"),
    EventsPath = env("TROUPE_EVENTS"),
    RunId = os:getenv("TROUPE_RUN_ID", "local"),
    Node = os:getenv("TROUPE_NODE", "erlang-scp"),
    {Config, RawConfig} = case scp_config:load_config(ConfigPath) of
                              {ok, C, Raw} -> {C, Raw};
                              {error, M1} -> throw({input, M1})
                          end,
    #{pairs := Pairs, supervisors := Sups, pairs_per_sup := PPS,
      warmup_s := WarmupS, duration_s := DurationS, injector := Mode} = Config,
    Actions = case scp_config:load_schedule(os:getenv("TROUPE_SCHEDULE"), Sups, PPS) of
                  {ok, As} -> As;
                  {error, M2} -> throw({input, M2})
              end,
    case troupe_events:start(EventsPath, RunId, "erlang", Node) of
        ok -> ok;
        {error, M3} -> throw({input, M3})
    end,
    troupe_events:emit(run_started, [{workload, <<"scp">>}, {config, RawConfig}]),
    io:format(standard_error, "scp: ~b pairs under ~b supervisors, ~b scheduled actions, "
              "warm-up ~p s, window ~b s, injector ~s, ~s~n",
              [Pairs, Sups, length(Actions), WarmupS, DurationS, Mode, erlang:system_info(system_version)]),

    %% Shared state the servers and the injector use.
    persistent_term:put(scp_starts, {counters:new(Pairs, [write_concurrency]), PPS}),
    ets:new(scp_pids, [named_table, public, set, {read_concurrency, true},
                       {write_concurrency, true}]),

    %% The injected kills are the experiment, not incidents: drop the
    %% supervisor's child_terminated report for reason `killed` so that
    %% formatting thousands of reports a second is not part of what is
    %% measured. Every other report (a real crash) is still logged.
    ok = logger:add_primary_filter(scp_injected_kills, {fun quiet_injected_kills/2, []}),

    process_flag(trap_exit, true),
    %% injector = node: its node is up (and linked) before the tree starts.
    InjNode = case Mode of
                  node ->
                      N = scp_injector_node:start(EventsPath, RunId, RawConfig),
                      troupe_events:emit(ready, [{what, <<"injector">>}, {count, 1},
                                                 {pid, maps:get(os_pid, N)}]),
                      N;
                  in_process -> none
              end,
    InjPeer = case InjNode of none -> none; #{peer := P0} -> P0 end,
    Sup = case scp_head_sup:start_link(Config) of
              {ok, P} -> P;
              Err -> throw({failed, io_lib:format("head supervisor did not start: ~p", [Err])})
          end,
    WarmupMs = round(WarmupS * 1000),
    {ok, T0} = gen_server:call(scp_aggregator, {setup_done, Pairs, WarmupMs, DurationS, self()}),
    Injector = case InjNode of
                   none -> scp_injector:start(Actions, T0, Config);
                   _ -> scp_injector_node:go(InjNode, Actions, T0, Config)
               end,
    InjMon = monitor(process, Injector),

    Bound = WarmupMs + DurationS * 1000 + 30000,
    receive
        {window_done, _} -> ok;
        {'EXIT', Sup, Why} -> throw({failed, io_lib:format("head supervisor exited: ~p", [Why])});
        {'EXIT', InjPeer, Why} -> throw({failed, io_lib:format("the injector node went down: ~p", [Why])});
        {'DOWN', InjMon, process, _, Why} -> throw({failed, io_lib:format("the injector exited: ~p", [Why])})
    after Bound ->
            throw({failed, "the measurement window did not end in time"})
    end,

    Injector ! {stop, self()},
    Summary = receive
                  {injector_done, S} -> S;
                  {'DOWN', InjMon, process, _, Why2} ->
                      throw({failed, io_lib:format("the injector exited before it stopped: ~p", [Why2])})
              after 10000 -> throw({failed, "the injector did not stop"})
              end,
    demonitor(InjMon, [flush]),
    InjNode =:= none orelse scp_injector_node:stop(InjNode),
    #{done := Done, skipped := Skipped, errors := InjErrors, not_run := NotRun} = Summary,
    io:format(standard_error, "scp: faults injected ~b, skipped ~b, failed ~b, not reached ~b~n",
              [Done, Skipped, InjErrors, NotRun]),

    %% Stop the SUB before the final line so nothing is emitted after it.
    unlink(Sup),
    exit(Sup, shutdown),
    Ref = monitor(process, Sup),
    receive {'DOWN', Ref, process, Sup, _} -> ok
    after 10000 -> exit(Sup, kill)
    end,

    %% run_finished is written by the writer after everything else, with the
    %% final drop count, so it is the last line and cannot itself be dropped.
    MyErrors = case Mode of in_process -> InjErrors; node -> 0 end,
    Final = fun(Dropped) -> [{dropped_events, Dropped}, {errors, MyErrors},
                             {skipped_faults, Skipped}] end,
    case troupe_events:finish(run_finished, Final) of
        {ok, Dropped, 0} ->
            io:format(standard_error, "scp: events dropped ~b~n", [Dropped]),
            ok;
        {ok, _, WriteErrors} ->
            throw({failed, io_lib:format("~b event writes failed", [WriteErrors])});
        {error, Why3} ->
            throw({failed, io_lib:format("event writer: ~p", [Why3])})
    end.
