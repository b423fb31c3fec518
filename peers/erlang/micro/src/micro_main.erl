%% micro_main: driver of the Erlang micro-benchmarks (`peers/erlang/micro/run`).
%%
%% It owns the contract every runtime's micro program keeps (common.md,
%% "Micro-benchmarks"): parse `<bench> [key=value ...]`, reject unknown
%% benches/keys and bad values, run one unmeasured warm-up iteration and then
%% `reps` measured ones (default 3), take the median, and print one JSON
%% object per metric on stdout - nothing else goes to stdout; logs go to
%% stderr. A failed correctness check exits 1 with the reason on stderr; bad
%% arguments exit 2. The benchmarks themselves live in micro_msg (message
%% passing) and micro_spawn (process creation and memory).
-module(micro_main).

-export([main/1]).

%% bench => {Module, Defaults, MessagesPerIteration | none}
benches() ->
    #{pingpong   => {micro_msg, [{n, 40000}], fun(#{n := N}) -> 2 * N end},
      count      => {micro_msg, [{n, 1000000}], fun(#{n := N}) -> N end},
      fjthrput   => {micro_msg, [{n, 10000}, {actors, 60}], fun(#{n := N, actors := A}) -> N * A end},
      threadring => {micro_msg, [{actors, 100}, {n, 100000}], fun(#{n := N}) -> N end},
      chameneos  => {micro_msg, [{chameneos, 100}, {n, 200000}], fun(#{n := N}) -> N end},
      big        => {micro_msg, [{n, 20000}, {actors, 120}], fun(#{n := N, actors := A}) -> 2 * N * A end},
      fjcreate   => {micro_spawn, [{n, 40000}], none},
      fib        => {micro_spawn, [{n, 25}], none},
      skynet     => {micro_spawn, [{depth, 6}, {width, 10}], none},
      memory     => {micro_spawn, [{n, 1000000}], none}}.

%% Lower bounds of each parameter (all are integers).
min_value(actors) -> 2;
min_value(chameneos) -> 2;
min_value(width) -> 2;
min_value(depth) -> 1;
min_value(reps) -> 1;
min_value(n) -> 1.

main([BenchS | KVs]) ->
    try
        Bench = case maps:find(list_to_atom(BenchS), benches()) of
                    {ok, _} -> list_to_atom(BenchS);
                    error -> usage("unknown bench " ++ BenchS)
                end,
        {Mod, Defaults, Msgs} = maps:get(Bench, benches()),
        Params = parse(KVs, Defaults ++ [{reps, default_reps(Bench)}]),
        (Bench =/= memory orelse maps:get(reps, Params) =:= 1) orelse
            usage("memory measures one spawn of n processes: reps must be 1"),
        run(Bench, Mod, Params, Msgs, [K || {K, _} <- Defaults] ++ [reps]),
        halt(0)
    catch
        throw:{usage, Msg} ->
            io:format(standard_error, "micro: ~ts~nusage: run <bench> [key=value ...]; benches: ~s~n",
                      [Msg, lists:join(" ", [atom_to_list(B) || B <- lists:sort(maps:keys(benches()))])]),
            halt(2);
        throw:{check_failed, Msg} ->
            io:format(standard_error, "micro: ~s: correctness check failed: ~ts~n", [BenchS, Msg]),
            halt(1);
        C:E:St ->
            io:format(standard_error, "micro: ~s crashed: ~p:~p~n~p~n", [BenchS, C, E, St]),
            halt(1)
    end;
main([]) ->
    io:format(standard_error, "usage: run <bench> [key=value ...]~n", []),
    halt(2).

default_reps(memory) -> 1;
default_reps(_) -> 3.

usage(Msg) -> throw({usage, Msg}).

parse([], Acc) -> maps:from_list(Acc);
parse([KV | Rest], Acc) ->
    case string:split(KV, "=") of
        [K, V] ->
            Key = list_to_atom(K),
            lists:keymember(Key, 1, Acc) orelse
                usage("unknown key " ++ K ++ "; this bench takes " ++
                      lists:join(", ", [atom_to_list(X) || {X, _} <- Acc])),
            Int = try list_to_integer(V)
                  catch error:badarg -> usage(K ++ "=" ++ V ++ ": not an integer")
                  end,
            Int >= min_value(Key) orelse
                usage(K ++ "=" ++ V ++ ": must be >= " ++ integer_to_list(min_value(Key))),
            parse(Rest, lists:keystore(Key, 1, Acc, {Key, Int}));
        _ -> usage("expected key=value, got " ++ KV)
    end.

run(memory, Mod, Params, _Msgs, Order) ->
    %% No warm-up: a warm-up spawn of n processes would leave the VM's
    %% allocators holding that memory and hide it from the RSS delta.
    #{rss_bytes_per_proc := B, vm_bytes_per_proc := VmB, spawn_ms := Ms} =
        Mod:memory(Params),
    wait_processes_gone(erlang:system_info(process_count)),
    emit(memory, bytes_per_actor, round1(B), <<"B">>, Params, Order),
    emit(memory, vm_bytes_per_actor, round1(VmB), <<"B">>, Params, Order),
    emit(memory, spawn_ms, round3(Ms), <<"ms">>, Params, Order),
    emit(memory, time_ms, round3(Ms), <<"ms">>, Params, Order);
run(Bench, Mod, #{reps := Reps} = Params, Msgs, Order) ->
    Base = erlang:system_info(process_count),
    Once = fun() ->
                   erlang:garbage_collect(),
                   T = Mod:Bench(Params),
                   wait_processes_gone(Base),
                   T
           end,
    Warm = Once(),
    io:format(standard_error, "micro: ~s warm-up ~.3f ms~n", [Bench, Warm]),
    Times = [Once() || _ <- lists:seq(1, Reps)],
    io:format(standard_error, "micro: ~s measured ~w ms~n", [Bench, [round3(T) || T <- Times]]),
    Median = troupe_stats:median(Times),
    emit(Bench, time_ms, round3(Median), <<"ms">>, Params, Order),
    case Msgs of
        none -> ok;
        F -> emit(Bench, msgs_per_s, round1(F(Params) / (Median / 1000)), <<"msg/s">>, Params, Order)
    end.

%% Every process a bench started must be gone before the next iteration.
wait_processes_gone(Base) -> wait_processes_gone(Base, 3000).
wait_processes_gone(_Base, 0) ->
    io:format(standard_error, "micro: warning: processes still alive after 30 s~n", []);
wait_processes_gone(Base, Left) ->
    case erlang:system_info(process_count) =< Base of
        true -> ok;
        false -> timer:sleep(10), wait_processes_gone(Base, Left - 1)
    end.

round1(X) -> round(X * 10) / 10.
round3(X) -> round(X * 1000) / 1000.

emit(Bench, Metric, Value, Unit, Params, Order) ->
    Obj = {[{bench, Bench}, {runtime, <<"erlang">>}, {metric, Metric}, {value, Value},
            {unit, Unit}, {params, {[{K, maps:get(K, Params)} || K <- Order]}}]},
    io:put_chars([troupe_json:encode(Obj), $\n]).
