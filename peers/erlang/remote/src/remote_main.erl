%% remote_main: Erlang distribution as a peer for Troupe's distribution benchmarks
%% (`peers/erlang/remote/run`), so `troupe lab micro --runtimes troupe,erlang --only
%% remote-pingpong,remote-latency` compares both on the same machine in one run.
%%
%% It owns: starting a second Erlang node as its own OS process on loopback
%% (OTP's `peer` module; this node and the far one are distributed Erlang over
%% TCP on 127.0.0.1), the two benchmarks with the same semantics as Troupe's
%% (crates/troupe-remote/src/bench/pingpong.rs and latency.rs), printing one
%% JSON line per metric in the micro-benchmark format (logs go to stderr), and
%% bounding everything: a far node that sends nothing for `stall_ms`, or a run
%% past `deadline_s`, is killed (SIGKILL to its OS process) and the run fails.
%%
%% - remote-pingpong messages=1000000 window=1000 reps=3: a ping process here
%%   keeps `window` pings in flight to a pong process on the far node;
%%   messages = pings + pongs; time from the first ping to the last pong;
%%   one warm-up (at most 100,000 messages, as Troupe's), median of `reps`.
%% - remote-latency samples=5000 interval_us=200 reps=3: request/reply round
%%   trips to an echo process on the far node (16-byte binary), one at a time;
%%   `idle` sleeps between requests (Erlang timers have millisecond
%%   resolution: at least 1 ms; `asks_per_s` shows the rate reached),
%%   `busy-poll` checks erlang:monotonic_time/1 and calls erlang:yield/0 until
%%   the interval has passed; one warm-up of at most 1,000 samples, then p50/p99
%%   of the repetition with the median p50.
%% Control keys (not printed in params): stall_ms=10000 (longest silence of the
%% far node), deadline_s (whole run; default from the sizes, generous).
-module(remote_main).

-export([main/1, pong/0, echo/0]).

-define(TRANSPORT, <<"erlang distribution, tcp loopback, 2 OS processes">>).

benches() ->
    #{'remote-pingpong' => [{messages, 1000000}, {window, 1000}, {reps, 3}],
      'remote-latency' => [{samples, 5000}, {interval_us, 200}, {reps, 3}]}.

main([BenchS | KVs]) ->
    process_flag(trap_exit, true),
    try
        Bench = list_to_atom(BenchS),
        Defaults = case maps:find(Bench, benches()) of
                       {ok, D} -> D;
                       error -> throw({usage, "unknown bench " ++ BenchS})
                   end,
        Controls = [{stall_ms, 10000}, {deadline_s, 0}],
        Params0 = parse(KVs, Defaults ++ Controls),
        Params = case maps:get(deadline_s, Params0) of
                     0 -> Params0#{deadline_s := default_deadline_s(Bench, Params0)};
                     _ -> Params0
                 end,
        Watchdog = watchdog(BenchS, maps:get(deadline_s, Params)),
        {Peer, Far, FarOs} = start_far(),
        Watchdog ! {far, FarOs},
        io:format(standard_error, "remote: far node ~s is OS process ~s~n", [Far, FarOs]),
        try run(Bench, Far, Params, [K || {K, _} <- Defaults])
        catch C:E ->
                io:format(standard_error, "remote: ~s failed (~p:~p); killing the far node (OS process ~s)~n",
                          [BenchS, C, E, FarOs]),
                kill_far(FarOs),
                halt(1)
        end,
        stop_far(Peer, FarOs),
        halt(0)
    catch
        throw:{usage, Msg} ->
            io:format(standard_error, "remote: ~ts~nusage: run remote-pingpong|remote-latency [key=value ...]~n", [Msg]),
            halt(2);
        C2:E2:St ->
            io:format(standard_error, "remote: ~s crashed: ~p:~p~n~p~n", [BenchS, C2, E2, St]),
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

%% Far beyond any healthy run: 20,000 msg/s (Erlang distribution does ~240,000 here), or
%% 5 ms of overhead per latency sample, plus a minute for starting and stopping nodes.
default_deadline_s('remote-pingpong', #{messages := M, reps := R}) ->
    60 + (min(M, 100000) + M * R) div 20000;
default_deadline_s('remote-latency', #{samples := N, interval_us := I, reps := R}) ->
    60 + 2 * (min(N, 1000) + N * R) * (I + 5000) div 1000000.

%% Halts the node (exit 1) when the run passes its deadline, killing the far node first.
watchdog(BenchS, DeadlineS) ->
    spawn(fun() -> watch(BenchS, DeadlineS, erlang:monotonic_time(millisecond) + DeadlineS * 1000, none) end).

watch(BenchS, DeadlineS, Until, FarOs) ->
    Left = max(0, Until - erlang:monotonic_time(millisecond)),
    receive
        {far, Os} -> watch(BenchS, DeadlineS, Until, Os)
    after Left ->
            io:format(standard_error, "remote: ~s did not finish within deadline_s=~w; killing the far node~n",
                      [BenchS, DeadlineS]),
            FarOs =/= none andalso kill_far(FarOs),
            halt(1)
    end.

%% The far node: a separate OS process, same cookie, same code path, loopback only. Returns
%% the peer handle, the node name and the far node's OS pid (to kill it if it hangs).
start_far() ->
    Ebin = filename:dirname(code:which(?MODULE)),
    {ok, Peer, Far} = peer:start_link(#{name => far, host => "127.0.0.1", longnames => true,
                                        wait_boot => 60000,
                                        args => ["-setcookie", atom_to_list(erlang:get_cookie()),
                                                 "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
                                                 "-pa", Ebin]}),
    pong = net_adm:ping(Far),
    FarOs = erpc:call(Far, os, getpid, [], 10000),
    {Peer, Far, FarOs}.

%% Stops the far node the polite way, then makes sure its OS process is gone (5 s, then SIGKILL).
stop_far(Peer, FarOs) ->
    unlink(Peer),
    catch peer:stop(Peer),
    case wait_gone(FarOs, 50) of
        true -> ok;
        false ->
            io:format(standard_error, "remote: the far node (OS process ~s) outlived peer:stop; killed~n", [FarOs]),
            kill_far(FarOs)
    end.

wait_gone(_Os, 0) -> false;
wait_gone(Os, N) ->
    case far_alive(Os) of
        false -> true;
        true -> timer:sleep(100), wait_gone(Os, N - 1)
    end.

%% True while `Os` is a live (not zombie) process running this run's far node.
far_alive(Os) ->
    case file:read_file("/proc/" ++ Os ++ "/stat") of
        {ok, Stat} ->
            [_, AfterComm] = string:split(Stat, ") ", trailing),
            State = binary:first(AfterComm),
            State =/= $Z andalso is_far(Os);
        {error, _} -> false
    end.

is_far(Os) ->
    case file:read_file("/proc/" ++ Os ++ "/cmdline") of
        {ok, Cmd} -> binary:match(Cmd, <<"far@127.0.0.1">>) =/= nomatch;
        {error, _} -> false
    end.

kill_far(Os) ->
    case far_alive(Os) of
        true -> _ = os:cmd("kill -KILL " ++ Os), ok;
        false -> ok
    end.

run('remote-pingpong', Far, #{messages := M, window := W, reps := Reps, stall_ms := Stall} = P, Order) ->
    Pings = max(1, M div 2),
    Pong = spawn(Far, ?MODULE, pong, []),
    Mon = erlang:monitor(process, Pong),
    WarmPings = max(1, min(M, 100000) div 2),
    Warm = pingpong(Pong, Mon, WarmPings, min(W, WarmPings), Stall),
    io:format(standard_error, "remote: remote-pingpong warm-up ~.1f ms~n", [Warm]),
    Times = [pingpong(Pong, Mon, Pings, min(W, Pings), Stall) || _ <- lists:seq(1, Reps)],
    io:format(standard_error, "remote: remote-pingpong measured ~w ms~n", [[round1(T) || T <- Times]]),
    Ms = troupe_stats:median(Times),
    Extra = [{transport, ?TRANSPORT}, {otp, otp()}],
    emit('remote-pingpong', time_ms, round1(Ms), <<"ms">>, P, Order, Extra),
    emit('remote-pingpong', msgs_per_s, round1(2 * Pings / (Ms / 1000)), <<"msg/s">>, P, Order, Extra);
run('remote-latency', Far, #{samples := N, interval_us := I, reps := Reps, stall_ms := Stall} = P, Order) ->
    Echo = spawn(Far, ?MODULE, echo, []),
    Mon = erlang:monitor(process, Echo),
    Payload = binary:copy(<<7>>, 16),
    lists:foreach(
      fun(Mode) ->
              T0 = erlang:monotonic_time(microsecond),
              Warm = min(N, 1000),
              _ = samples(Echo, Mon, Payload, Warm, I, Mode, Stall),
              Runs = [samples(Echo, Mon, Payload, N, I, Mode, Stall) || _ <- lists:seq(1, Reps)],
              Rate = (Warm + N * Reps) / ((erlang:monotonic_time(microsecond) - T0) / 1.0e6),
              Sorted = lists:sort(fun(A, B) -> quantile(A, 0.5) =< quantile(B, 0.5) end, Runs),
              Mid = lists:nth(length(Sorted) div 2 + 1, Sorted),
              io:format(standard_error, "remote: remote-latency ~s p50 per rep ~w us~n",
                        [Mode, [round1(quantile(R, 0.5)) || R <- Runs]]),
              Extra = [{mode, Mode}, {payload_bytes, 16}, {asks_per_s, round(Rate)}, {otp, otp()},
                       {transport, ?TRANSPORT}],
              emit('remote-latency', rtt_p50_us, round1(quantile(Mid, 0.5)), <<"us">>, P, Order, Extra),
              emit('remote-latency', rtt_p99_us, round1(quantile(Mid, 0.99)), <<"us">>, P, Order, Extra)
      end, [<<"idle">>, <<"busy-poll">>]).

pingpong(Pong, Mon, Pings, W, Stall) ->
    Self = self(),
    T0 = erlang:monotonic_time(microsecond),
    [Pong ! {ping, Self, K} || K <- lists:seq(1, W)],
    ping_loop(Pong, Mon, Self, W, 0, Pings, Stall),
    (erlang:monotonic_time(microsecond) - T0) / 1000.

%% Bounded: ends after `Pings` pongs; fails when the far node is silent for `Stall` ms or the
%% pong process or its node goes down.
ping_loop(_Pong, _Mon, _Self, _Sent, Got, Pings, _Stall) when Got =:= Pings -> ok;
ping_loop(Pong, Mon, Self, Sent, Got, Pings, Stall) ->
    receive
        {pong, _} when Sent < Pings ->
            Pong ! {ping, Self, Sent + 1},
            ping_loop(Pong, Mon, Self, Sent + 1, Got + 1, Pings, Stall);
        {pong, _} ->
            ping_loop(Pong, Mon, Self, Sent, Got + 1, Pings, Stall);
        {'DOWN', Mon, process, _, Why} -> error({pong_process_down, Why})
    after Stall -> error({far_node_silent_ms, Stall})
    end.

pong() ->
    receive
        {ping, From, K} -> From ! {pong, K}, pong()
    end.

echo() ->
    receive
        {echo, From, Ref, Bin} -> From ! {Ref, Bin}, echo()
    end.

samples(Echo, Mon, Payload, N, I, Mode, Stall) ->
    lists:sort([sample(Echo, Mon, Payload, I, Mode, Stall) || _ <- lists:seq(1, N)]).

sample(Echo, Mon, Payload, I, Mode, Stall) ->
    Ref = make_ref(),
    T0 = erlang:monotonic_time(nanosecond),
    Echo ! {echo, self(), Ref, Payload},
    receive
        {Ref, _} -> ok;
        {'DOWN', Mon, process, _, Why} -> error({echo_process_down, Why})
    after Stall -> error({far_node_silent_ms, Stall})
    end,
    Us = (erlang:monotonic_time(nanosecond) - T0) / 1000,
    pause(Mode, I),
    Us.

pause(<<"idle">>, I) -> timer:sleep(max(1, (I + 999) div 1000));
pause(<<"busy-poll">>, I) ->
    Until = erlang:monotonic_time(microsecond) + I,
    spin(Until).

%% Bounded by the clock: returns once `Until` has passed.
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
