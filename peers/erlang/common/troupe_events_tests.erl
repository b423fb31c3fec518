%% troupe_events_tests: EUnit checks of the bounded event writer (troupe_events):
%% line shape, the bound (drops counted, never blocking), and run_finished
%% written last with the final drop count. Run by peers/erlang/smoke.sh.
-module(troupe_events_tests).
-include_lib("eunit/include/eunit.hrl").

bound_and_final_line_test() ->
    Path = filename:join("/tmp", "troupe_events_test_" ++ os:getpid() ++ ".jsonl"),
    file:delete(Path),
    ok = troupe_events:start(Path, "r1", "erlang", "n1", 5),
    Writer = whereis(troupe_events_writer),
    %% With the writer suspended nothing drains: the 6th..20th events must be
    %% dropped at once instead of blocking or growing the buffer.
    true = erlang:suspend_process(Writer),
    [troupe_events:emit(tick, [{i, I}]) || I <- lists:seq(1, 20)],
    ?assertEqual(15, troupe_events:dropped()),
    true = erlang:resume_process(Writer),
    {ok, 15, 0} = troupe_events:finish(run_finished, fun(D) -> [{dropped_events, D}] end),
    {ok, Bin} = file:read_file(Path),
    file:delete(Path),
    Lines = binary:split(Bin, <<"\n">>, [global, trim]),
    ?assertEqual(6, length(Lines)),
    [{ok, First} | _] = [troupe_json:decode(L) || L <- Lines],
    ?assertMatch({[{<<"ts_us">>, _}, {<<"run">>, <<"r1">>}, {<<"rt">>, <<"erlang">>},
                   {<<"node">>, <<"n1">>}, {<<"ev">>, <<"tick">>}, {<<"i">>, 1}]}, First),
    {ok, Last} = troupe_json:decode(lists:last(Lines)),
    ?assertEqual(<<"run_finished">>, troupe_json:get(ev, Last)),
    ?assertEqual(15, troupe_json:get(dropped_events, Last)),
    persistent_term:erase({troupe_events, state}).
