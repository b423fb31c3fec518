%% energy_main: entry point of the Erlang energy peer (`peers/erlang/energy/run`).
%%
%% Reads the lab's environment (TROUPE_CONFIG, TROUPE_EVENTS, TROUPE_RUN_ID,
%% optional TROUPE_NODE; TROUPE_SCHEDULE is empty for energy and not read),
%% checks the config before anything starts, then:
%%   run_started {workload: "energy", config, version}
%%   [distributed: the far node is started, once]
%%   for each rep r: work {rep: r, start_us, end_us, result}   (energy_work:rep/3)
%%   [distributed: the far node is stopped and gone]
%%   run_finished {dropped_events, errors} -> exit 0.
%% errors counts wrong prime answers (ping_pong_lb_prime). Exit codes: 0 done,
%% 2 bad input (one stderr line naming the key; nothing started), 1 failure
%% during the run (run_finished is still written, with errors >= 1, when the
%% event writer was up; the far node is killed).
-module(energy_main).

-export([main/0]).

main() ->
    try run() of
        ok -> halt(0)
    catch
        throw:{input, Msg} ->
            io:format(standard_error, "energy: ~ts~n", [Msg]),
            halt(2);
        throw:{failed, Msg} ->
            io:format(standard_error, "energy: run failed: ~ts~n", [Msg]),
            give_up(),
            halt(1);
        C:E:St ->
            io:format(standard_error, "energy: crashed: ~p:~p~n~p~n", [C, E, St]),
            give_up(),
            halt(1)
    end.

%% The failure path: no far node outlives us, and the event file still ends
%% with run_finished when the writer was started.
give_up() ->
    catch energy_far:kill(),
    case whereis(troupe_events_writer) of
        undefined -> ok;
        _ -> catch troupe_events:finish(run_finished,
                                        fun(D) -> [{dropped_events, D}, {errors, 1}] end)
    end.

env(Name) ->
    case os:getenv(Name) of
        false -> throw({input, Name ++ " is not set (the path the lab passes; see peers/erlang/README.md)"});
        "" -> throw({input, Name ++ " is empty"});
        V -> V
    end.

run() ->
    ConfigPath = env("TROUPE_CONFIG"),
    EventsPath = env("TROUPE_EVENTS"),
    RunId = os:getenv("TROUPE_RUN_ID", "local"),
    Node = os:getenv("TROUPE_NODE", "erlang-energy"),
    {Config, Raw} = case energy_config:load(ConfigPath) of
                        {ok, C, R} -> {C, R};
                        {error, M1} -> throw({input, M1})
                    end,
    #{workload := Workload, mode := Mode, reps := Reps, range := Range} = Config,
    case troupe_events:start(EventsPath, RunId, "erlang", Node) of
        ok -> ok;
        {error, M2} -> throw({input, M2})
    end,
    Version = iolist_to_binary(["OTP ", erlang:system_info(otp_release),
                                " (erts ", erlang:system_info(version), ")"]),
    troupe_events:emit(run_started, [{workload, <<"energy">>}, {config, Raw}, {version, Version}]),
    io:format(standard_error, "energy: ~s ~s, ~b reps, ~s, ~b schedulers~n",
              [Workload, Mode, Reps, Version, erlang:system_info(schedulers_online)]),
    Far = case Mode of
              native -> node();
              distributed -> energy_far:start()
          end,
    %% The answer every ping_pong_lb_prime reply must carry, computed once,
    %% outside every measured interval.
    Expected = case Workload of
                   ping_pong_lb_prime -> energy_work:find_primes(Range);
                   _ -> none
               end,
    Errors = lists:foldl(
               fun(Rep, Acc) ->
                       {T0, T1, Result, Wrong} = energy_work:rep(Config, Far, Expected),
                       troupe_events:emit(work, [{rep, Rep}, {start_us, T0}, {end_us, T1},
                                                 {result, Result}]),
                       io:format(standard_error, "energy: rep ~b: ~.1f ms, result ~b~s~n",
                                 [Rep, (T1 - T0) / 1000, Result,
                                  case Wrong of 0 -> ""; _ -> io_lib:format(", ~b wrong answers", [Wrong]) end]),
                       Acc + Wrong
               end, 0, lists:seq(0, Reps - 1)),
    energy_far:stop(),
    Final = fun(Dropped) -> [{dropped_events, Dropped}, {errors, Errors}] end,
    case troupe_events:finish(run_finished, Final) of
        {ok, _Dropped, 0} -> ok;
        {ok, _, WriteErrors} ->
            io:format(standard_error, "energy: ~b event writes failed~n", [WriteErrors]),
            halt(1);
        {error, Why} ->
            io:format(standard_error, "energy: event writer: ~p~n", [Why]),
            halt(1)
    end.
