%% micro_msg: the message-passing micro-benchmarks of the Erlang peer
%% (pingpong, count, fjthrput, threadring, chameneos, big; Savina shapes,
%% workloads.md §6), written as Erlang users write them: plain spawned
%% processes, `!` and selective `receive`, no OTP behaviours, no tuning.
%%
%% Each bench takes its parameter map, runs one iteration and returns the wall
%% time in ms (monotonic clock) from before the first process is spawned until
%% the last result is back in the calling process. Results are checked; a wrong
%% one throws {check_failed, Why}. Every process a bench spawns has exited (or
%% is about to) when it returns.
-module(micro_msg).

-export([pingpong/1, count/1, fjthrput/1, threadring/1, chameneos/1, big/1]).
-export([compute/0]).

now_ns() -> erlang:monotonic_time(nanosecond).
ms_since(T0) -> (now_ns() - T0) / 1.0e6.
check(true, _) -> ok;
check(false, Why) -> throw({check_failed, lists:flatten(Why)}).

%% The "tiny computation" of Savina's throughput/fork-join benches.
compute() ->
    S = math:sin(37.2),
    S * S.

%% pingpong: ping sends n pings one at a time; pong answers each.
pingpong(#{n := N}) ->
    Main = self(),
    T0 = now_ns(),
    Pong = spawn(fun pong/0),
    spawn(fun() -> Main ! {pongs, ping(Pong, N, 0)} end),
    Got = receive {pongs, G} -> G end,
    T = ms_since(T0),
    check(Got =:= N, io_lib:format("ping got ~b pongs, expected ~b", [Got, N])),
    T.

pong() ->
    receive
        {ping, From} -> From ! pong, pong();
        stop -> ok
    end.

ping(Pong, 0, Got) -> Pong ! stop, Got;
ping(Pong, K, Got) ->
    Pong ! {ping, self()},
    receive pong -> ping(Pong, K - 1, Got + 1) end.

%% count: a producer sends n increments to a counter, then asks for the total.
count(#{n := N}) ->
    Main = self(),
    T0 = now_ns(),
    Counter = spawn(fun() -> counter(0) end),
    spawn(fun() ->
                  produce(Counter, N),
                  Counter ! {get, self()},
                  receive {total, Total} -> Main ! {total, Total} end
          end),
    Total = receive {total, X} -> X end,
    T = ms_since(T0),
    check(Total =:= N, io_lib:format("counter total ~b, expected ~b", [Total, N])),
    T.

counter(C) ->
    receive
        inc -> counter(C + 1);
        {get, From} -> From ! {total, C}
    end.

produce(_Counter, 0) -> ok;
produce(Counter, K) -> Counter ! inc, produce(Counter, K - 1).

%% fjthrput: n messages to each of `actors` workers, round-robin; each worker
%% does the tiny computation per message and reports when it has seen n.
fjthrput(#{n := N, actors := A}) ->
    Main = self(),
    T0 = now_ns(),
    Workers = [spawn(fun() -> thr_worker(N, 0.0, Main) end) || _ <- lists:seq(1, A)],
    thr_send(N, Workers),
    Sum = collect(thr_done, A, 0.0),
    T = ms_since(T0),
    Expected = N * A * compute(),
    check(abs(Sum - Expected) =< 1.0e-6 * Expected,
          io_lib:format("workers' sum ~p, expected ~p", [Sum, Expected])),
    T.

thr_send(0, _) -> ok;
thr_send(K, Workers) ->
    [W ! work || W <- Workers],
    thr_send(K - 1, Workers).

thr_worker(0, Acc, Main) -> Main ! {thr_done, Acc};
thr_worker(K, Acc, Main) ->
    receive work -> thr_worker(K - 1, Acc + compute(), Main) end.

%% collect(Tag, Count, Acc): sum the payloads of Count {Tag, V} messages.
collect(_Tag, 0, Acc) -> Acc;
collect(Tag, K, Acc) ->
    receive {Tag, V} -> collect(Tag, K - 1, Acc + V) end.

%% threadring: `actors` processes in a ring pass a token n hops; the process
%% that receives the token with 0 hops left reports.
threadring(#{actors := A, n := N}) ->
    Main = self(),
    T0 = now_ns(),
    Ring = [spawn(fun() -> receive {next, Next} -> ring_member(Next, Main) end end)
            || _ <- lists:seq(1, A)],
    [First | _] = Ring,
    lists:foreach(fun({P, Next}) -> P ! {next, Next} end,
                  lists:zip(Ring, tl(Ring) ++ [First])),
    First ! {token, N},
    Last = receive {ring_done, Who} -> Who end,
    T = ms_since(T0),
    [P ! stop || P <- Ring],
    %% n hops from the first member land on member (n mod actors).
    check(Last =:= lists:nth(N rem A + 1, Ring), "the token stopped at the wrong member"),
    T.

ring_member(Next, Main) ->
    receive
        {token, 0} -> Main ! {ring_done, self()}, ring_member(Next, Main);
        {token, K} -> Next ! {token, K - 1}, ring_member(Next, Main);
        stop -> ok
    end.

%% chameneos (Savina): a mall pairs meeting requests until n meetings have
%% happened; paired chameneos take the complementary colour; afterwards each
%% chameneo is told to fade and reports its meeting count to the mall.
chameneos(#{chameneos := C, n := N}) ->
    Main = self(),
    T0 = now_ns(),
    Mall = spawn(fun() -> mall(N, none, C, 0, Main) end),
    [spawn(fun() -> chameneo(colour(I), 0, Mall) end) || I <- lists:seq(0, C - 1)],
    Sum = receive {mall_done, S} -> S end,
    T = ms_since(T0),
    check(Sum =:= 2 * N, io_lib:format("meetings counted by chameneos ~b, expected ~b", [Sum, 2 * N])),
    T.

colour(I) -> element(I rem 3 + 1, {red, yellow, blue}).

complement(Same, Same) -> Same;
complement(red, yellow) -> blue;
complement(red, blue) -> yellow;
complement(yellow, red) -> blue;
complement(yellow, blue) -> red;
complement(blue, red) -> yellow;
complement(blue, yellow) -> red.

mall(Left, Waiting, Active, Sum, Main) ->
    receive
        {meet, Colour, From} when Left > 0 ->
            case Waiting of
                none -> mall(Left, {Colour, From}, Active, Sum, Main);
                {_, W} ->
                    W ! {meet, Colour, From},
                    mall(Left - 1, none, Active, Sum, Main)
            end;
        {meet, _Colour, From} ->
            From ! fade,
            mall(0, Waiting, Active, Sum, Main);
        {meetings, M} when Active =:= 1 ->
            Main ! {mall_done, Sum + M};
        {meetings, M} ->
            mall(Left, Waiting, Active - 1, Sum + M, Main)
    end.

chameneo(Colour, Met, Mall) ->
    Mall ! {meet, Colour, self()},
    receive
        {meet, Other, From} ->
            New = complement(Colour, Other),
            From ! {change, New},
            chameneo(New, Met + 1, Mall);
        {change, New} ->
            chameneo(New, Met + 1, Mall);
        fade ->
            Mall ! {meetings, Met}
    end.

%% big: each of `actors` processes sends n pings, one at a time, each to a
%% random other process (seeded per process), and waits for the pong before
%% the next; all keep answering pings until every one has its n pongs.
big(#{n := N, actors := A}) ->
    Main = self(),
    T0 = now_ns(),
    Procs = [spawn(fun() -> receive {peers, Peers} -> big_start(I, Peers, N, Main) end end)
             || I <- lists:seq(1, A)],
    Peers = list_to_tuple(Procs),
    [P ! {peers, Peers} || P <- Procs],
    Pongs = collect(big_done, A, 0),
    T = ms_since(T0),
    [P ! stop || P <- Procs],
    check(Pongs =:= N * A, io_lib:format("pongs ~b, expected ~b", [Pongs, N * A])),
    T.

big_start(I, Peers, N, Main) ->
    Rand = rand:seed_s(exsss, {42, I, 7}),
    big_loop(big_ping(I, Peers, Rand), I, Peers, N, 0, Main).

%% Sends a ping to a random process other than I; returns the new PRNG state.
big_ping(I, Peers, Rand) ->
    A = tuple_size(Peers),
    {R, Rand1} = rand:uniform_s(A - 1, Rand),
    element((I - 1 + R) rem A + 1, Peers) ! {ping, self()},
    Rand1.

big_loop(Rand, I, Peers, N, Got, Main) ->
    receive
        {ping, From} ->
            From ! pong,
            big_loop(Rand, I, Peers, N, Got, Main);
        pong when Got + 1 =:= N ->
            Main ! {big_done, Got + 1},
            big_loop(Rand, I, Peers, N, Got + 1, Main);
        pong ->
            big_loop(big_ping(I, Peers, Rand), I, Peers, N, Got + 1, Main);
        stop ->
            ok
    end.
