%% remote_main: Erlang distribution as a peer for Troupe's distribution benchmarks
%% (`peers/erlang/remote/run`), so `troupe lab micro --runtimes troupe,erlang --only
%% remote-pingpong,remote-latency` compares both on the same machine in one run.
%%
%% It owns: starting a second Erlang node as its own OS process on loopback
%% (OTP's `peer` module; this node and the far one are distributed Erlang over
%% TCP on 127.0.0.1), the two benchmarks with the same semantics as Troupe's
%% (crates/troupe-remote/src/bench/pingpong.rs and latency.rs), and printing
%% one JSON line per metric in the micro-benchmark format; logs go to stderr.
%%
%% - remote-pingpong messages=1000000 window=1000 reps=3: a ping process here
%%   keeps `window` pings in flight to a pong process on the far node;
%%   messages = pings + pongs; time from the first ping to the last pong;
%%   one warm-up, median of `reps`.
%% - remote-latency samples=5000 interval_us=200 reps=3: request/reply round
%%   trips to an echo process on the far node (16-byte binary), one at a time;
%%   `idle` sleeps between requests (Erlang timers have millisecond
%%   resolution: at least 1 ms), `busy-poll` spins (erlang:yield/0) until the
%%   interval has passed; p50/p99 of the repetition with the median p50.
-module(remote_main).

-export([main/1, pong/0, echo/0]).

benches() ->
    #{'remote-pingpong' => [{messages, 1000000}, {window, 1000}, {reps, 3}],
      'remote-latency' => [{samples, 5000}, {interval_us, 200}, {reps, 3}]}.

main([BenchS | KVs]) ->
    try
        Bench = list_to_atom(BenchS),
        Defaults = case maps:find(Bench, benches()) of
                       {ok, D} -> D;
                       error -> throw({usage, "unknown bench " ++ BenchS})
                   end,
        Params = parse(KVs, Defaults),
        {ok, Peer, Far} = start_far(),
        try run(Bench, Far, Params, [K || {K, _} <- Defaults])
        after peer:stop(Peer)
        end,
        halt(0)
    catch
        throw:{usage, Msg} ->
            io:format(standard_error, "remote: ~ts~nusage: run remote-pingpong|remote-latency [key=value ...]~n", [Msg]),
            halt(2);
        C:E:St ->
            io:format(standard_error, "remote: ~s crashed: ~p:~p~n~p~n", [BenchS, C, E, St]),
            halt(1)
    end;
main([]) ->
    io:format(standard_error, "usage: run remote-pingpong|remote-latency [key=value ...]~n", []),
    halt(2).

parse([], Defaults) -> maps:from_list(Defaults);
parse([KV | Rest], Defaults) ->
    case string:split(KV, "=") of
        [K, V] ->
            Key = list_to_atom(K),
            lists:keymember(Key, 1, Defaults) orelse throw({usage, "unknown key " ++ K}),
            N = try list_to_integer(V) catch _:_ -> throw({usage, "not an integer: " ++ KV}) end,
            N >= 1 orelse throw({usage, "must be at least 1: " ++ KV}),
            parse(Rest, lists:keystore(Key, 1, Defaults, {Key, N}));
        _ -> throw({usage, "not key=value: " ++ KV})
    end.

%% The far node: a separate OS process, same cookie, same code path, loopback only.
start_far() ->
    Ebin = filename:dirname(code:which(?MODULE)),
    {ok, Peer, Far} = peer:start_link(#{name => far, host => "127.0.0.1", longnames => true,
                                        wait_boot => 60000,
                                        args => ["-setcookie", atom_to_list(erlang:get_cookie()),
                                                 "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
                                                 "-pa", Ebin]}),
    pong = net_adm:ping(Far),
    {ok, Peer, Far}.

run('remote-pingpong', Far, #{messages := M, window := W, reps := Reps} = P, Order) ->
    Pings = max(1, M div 2),
    Pong = spawn_link(Far, ?MODULE, pong, []),
    Once = fun() -> pingpong(Pong, Pings, min(W, Pings)) end,
    Warm = Once(),
    io:format(standard_error, "remote: remote-pingpong warm-up ~.1f ms~n", [Warm]),
    Times = [Once() || _ <- lists:seq(1, Reps)],
    io:format(standard_error, "remote: remote-pingpong measured ~w ms~n", [[round1(T) || T <- Times]]),
    Ms = troupe_stats:median(Times),
    Extra = [{transport, <<"erlang distribution, tcp loopback, 2 OS processes">>}, {otp, otp()}],
    emit('remote-pingpong', time_ms, round1(Ms), <<"ms">>, P, Order, Extra),
    emit('remote-pingpong', msgs_per_s, round1(2 * Pings / (Ms / 1000)), <<"msg/s">>, P, Order, Extra);
run('remote-latency', Far, #{samples := N, interval_us := I, reps := Reps} = P, Order) ->
    Echo = spawn_link(Far, ?MODULE, echo, []),
    Payload = binary:copy(<<7>>, 16),
    lists:foreach(
      fun(Mode) ->
              _ = samples(Echo, Payload, min(N, 1000), I, Mode),
              Runs = [samples(Echo, Payload, N, I, Mode) || _ <- lists:seq(1, Reps)],
              Sorted = lists:sort(fun(A, B) -> quantile(A, 0.5) =< quantile(B, 0.5) end, Runs),
              Mid = lists:nth(length(Sorted) div 2 + 1, Sorted),
              Extra = [{mode, Mode}, {payload_bytes, 16}, {otp, otp()},
                       {transport, <<"erlang distribution, tcp loopback, 2 OS processes">>}],
              emit('remote-latency', rtt_p50_us, round1(quantile(Mid, 0.5)), <<"us">>, P, Order, Extra),
              emit('remote-latency', rtt_p99_us, round1(quantile(Mid, 0.99)), <<"us">>, P, Order, Extra)
      end, [<<"idle">>, <<"busy-poll">>]).

pingpong(Pong, Pings, W) ->
    Self = self(),
    T0 = erlang:monotonic_time(microsecond),
    [Pong ! {ping, Self, K} || K <- lists:seq(1, W)],
    ping_loop(Pong, Self, W, 0, Pings),
    (erlang:monotonic_time(microsecond) - T0) / 1000.

ping_loop(_Pong, _Self, _Sent, Got, Pings) when Got =:= Pings -> ok;
ping_loop(Pong, Self, Sent, Got, Pings) ->
    receive
        {pong, _} when Sent < Pings ->
            Pong ! {ping, Self, Sent + 1},
            ping_loop(Pong, Self, Sent + 1, Got + 1, Pings);
        {pong, _} ->
            ping_loop(Pong, Self, Sent, Got + 1, Pings)
    after 60000 -> error(pong_timeout)
    end.

pong() ->
    receive
        {ping, From, K} -> From ! {pong, K}, pong()
    end.

echo() ->
    receive
        {echo, From, Ref, Bin} -> From ! {Ref, Bin}, echo()
    end.

samples(Echo, Payload, N, I, Mode) ->
    lists:sort([sample(Echo, Payload, I, Mode) || _ <- lists:seq(1, N)]).

sample(Echo, Payload, I, Mode) ->
    Ref = make_ref(),
    T0 = erlang:monotonic_time(nanosecond),
    Echo ! {echo, self(), Ref, Payload},
    receive {Ref, _} -> ok after 10000 -> error(echo_timeout) end,
    Us = (erlang:monotonic_time(nanosecond) - T0) / 1000,
    pause(Mode, I),
    Us.

pause(<<"idle">>, I) -> timer:sleep(max(1, (I + 999) div 1000));
pause(<<"busy-poll">>, I) ->
    Until = erlang:monotonic_time(microsecond) + I,
    spin(Until).

spin(Until) ->
    case erlang:monotonic_time(microsecond) >= Until of
        true -> ok;
        false -> erlang:yield(), spin(Until)
    end.

quantile(Sorted, Q) ->
    L = length(Sorted),
    lists:nth(min(L, max(1, round(Q * (L - 1)) + 1)), Sorted).

otp() -> list_to_binary(erlang:system_info(otp_release)).

round1(X) -> round(X * 10) / 10.

emit(Bench, Metric, Value, Unit, Params, Order, Extra) ->
    Obj = {[{bench, Bench}, {runtime, <<"erlang">>}, {metric, Metric}, {value, Value},
            {unit, Unit}, {params, {[{K, maps:get(K, Params)} || K <- Order] ++ Extra}}]},
    io:put_chars([troupe_json:encode(Obj), $\n]).
