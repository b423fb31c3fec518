%% troupe_json_tests: EUnit checks of the peers' JSON encoder and parser
%% (troupe_json), run by peers/erlang/smoke.sh; each test can fail on a real bug.
-module(troupe_json_tests).
-include_lib("eunit/include/eunit.hrl").

dec(S) -> {ok, V} = troupe_json:decode(iolist_to_binary(S)), V.
enc(T) -> iolist_to_binary(troupe_json:encode(T)).

schedule_line_test() ->
    V = dec(<<"{\"at_ms\": 5000, \"id\": \"f-17\", \"kind\": \"kill\", \"group\": 3, \"slot\": 12, \"restart\": true}">>),
    ?assertEqual(5000, troupe_json:get(at_ms, V)),
    ?assertEqual(<<"f-17">>, troupe_json:get(id, V)),
    ?assertEqual(true, troupe_json:get(restart, V)),
    ?assertEqual(12, troupe_json:get(<<"slot">>, V)),
    ?assertEqual(undefined, troupe_json:get(nope, V)).

numbers_test() ->
    ?assertEqual([0, -7, 1.5, -0.25, 100.0, 0.01, 12345678901234567890],
                 dec("[0, -7, 1.5, -0.25, 1e2, 1E-2, 12345678901234567890]")).

strings_test() ->
    ?assertEqual(<<"a\"b\\c\nd/", 16#e9/utf8, 16#1F600/utf8>>,
                 dec(<<"\"a\\\"b\\\\c\\nd\\/\\u00e9\\ud83d\\ude00\"">>)),
    ?assertEqual(<<"\"x\\\"y\\u0001\"">>, enc(<<"x\"y", 1>>)).

nested_and_empty_test() ->
    ?assertEqual({[{<<"a">>, {[]}}, {<<"b">>, []}, {<<"c">>, null}]},
                 dec("{\"a\":{}, \"b\":[], \"c\":null}")).

round_trip_test() ->
    T = {[{<<"pairs">>, 64}, {<<"pattern">>, <<"burst">>}, {<<"recovery">>, false},
          {<<"rate">>, 2.5}, {<<"xs">>, [1, <<"two">>, {[{<<"k">>, true}]}]}]},
    ?assertEqual(T, dec(enc(T))),
    ?assertEqual(<<"{\"pairs\":64,\"pattern\":\"burst\",\"recovery\":false,\"rate\":2.5,\"xs\":[1,\"two\",{\"k\":true}]}">>,
                 enc(T)).

fields_test() ->
    ?assertEqual(<<",\"second\":3,\"count\":120">>,
                 iolist_to_binary(troupe_json:encode_fields([{second, 3}, {count, 120}]))).

errors_test() ->
    [?assertMatch({error, _}, troupe_json:decode(B)) ||
        B <- [<<"">>, <<"{">>, <<"{\"a\" 1}">>, <<"[1,]">>, <<"\"abc">>, <<"01x">>,
              <<"{\"a\":1} x">>, <<"-">>, <<"1.">>, <<"tru">>, <<"\"\\ud800\"">>]].
