%% micro_spawn: the process-creation micro-benchmarks of the Erlang peer
%% (fjcreate, fib, skynet, memory; workloads.md §6), written the way Erlang
%% users write them: plain spawn/1 and message passing.
%%
%% fjcreate, fib and skynet return the wall time in ms of one iteration and
%% check their result. memory spawns n idle processes once and measures the
%% OS resident set of the VM before and after (RSS from /proc/self/status,
%% which inside the VM is the beam.smp process), and the VM's own accounting
%% (erlang:memory(processes)) as a cross-check.
-module(micro_spawn).

-export([fjcreate/1, fib/1, skynet/1, memory/1]).

now_ns() -> erlang:monotonic_time(nanosecond).
ms_since(T0) -> (now_ns() - T0) / 1.0e6.
check(true, _) -> ok;
check(false, Why) -> throw({check_failed, lists:flatten(Why)}).

%% fjcreate: create n processes, send each one message; each does the tiny
%% computation, replies and terminates.
fjcreate(#{n := N}) ->
    Main = self(),
    T0 = now_ns(),
    fj_spawn(N, Main),
    Done = fj_collect(N, 0),
    T = ms_since(T0),
    check(Done =:= N, io_lib:format("~b of ~b processes replied", [Done, N])),
    T.

fj_spawn(0, _) -> ok;
fj_spawn(K, Main) ->
    P = spawn(fun() -> receive {work, From} -> From ! {fj_done, micro_msg:compute()} end end),
    P ! {work, Main},
    fj_spawn(K - 1, Main).

fj_collect(0, Done) -> Done;
fj_collect(K, Done) ->
    receive {fj_done, _} -> fj_collect(K - 1, Done + 1) end.

%% fib: fib(k) for k > 1 is a process that spawns processes for k-1 and k-2
%% (a child is only spawned for k > 1; fib(1) = 1 and fib(0) = 0 are values)
%% and replies the sum of their answers to its parent.
fib(#{n := N}) ->
    Main = self(),
    T0 = now_ns(),
    Result = case N > 1 of
                 true ->
                     spawn(fun() -> fib_proc(N, Main) end),
                     receive {fib, V} -> V end;
                 false -> N
             end,
    T = ms_since(T0),
    Expected = fib_seq(N),
    check(Result =:= Expected, io_lib:format("fib(~b) = ~b, expected ~b", [N, Result, Expected])),
    T.

fib_proc(K, Parent) ->
    Me = self(),
    {V1, W1} = fib_child(K - 1, Me),
    {V2, W2} = fib_child(K - 2, Me),
    Parent ! {fib, fib_wait(W1 + W2, V1 + V2)}.

fib_child(J, Me) when J > 1 -> spawn(fun() -> fib_proc(J, Me) end), {0, 1};
fib_child(J, _Me) -> {J, 0}.

fib_wait(0, Acc) -> Acc;
fib_wait(K, Acc) -> receive {fib, V} -> fib_wait(K - 1, Acc + V) end.

fib_seq(N) -> fib_seq(N, 0, 1).
fib_seq(0, A, _) -> A;
fib_seq(K, A, B) -> fib_seq(K - 1, B, A + B).

%% skynet: a width-ary tree of processes, depth levels deep; leaf i (of
%% width^depth) replies i, every parent replies the sum of its children.
skynet(#{depth := D, width := W}) ->
    Main = self(),
    Size = pow(W, D),
    T0 = now_ns(),
    spawn(fun() -> sky(Main, 0, Size, W) end),
    Sum = receive {sky, S} -> S end,
    T = ms_since(T0),
    Expected = Size * (Size - 1) div 2,
    check(Sum =:= Expected, io_lib:format("sum ~b, expected ~b", [Sum, Expected])),
    T.

sky(Parent, Num, 1, _W) -> Parent ! {sky, Num};
sky(Parent, Num, Size, W) ->
    Me = self(),
    Sub = Size div W,
    [spawn(fun() -> sky(Me, Num + I * Sub, Sub, W) end) || I <- lists:seq(0, W - 1)],
    Parent ! {sky, sky_wait(W, 0)}.

sky_wait(0, Acc) -> Acc;
sky_wait(K, Acc) -> receive {sky, V} -> sky_wait(K - 1, Acc + V) end.

pow(_, 0) -> 1;
pow(B, E) -> B * pow(B, E - 1).

%% memory: spawn n idle processes (each blocked in receive), measure, stop them.
memory(#{n := N}) ->
    erlang:garbage_collect(),
    settle(),
    Rss0 = rss_bytes(),
    Vm0 = erlang:memory(processes),
    T0 = now_ns(),
    Pids = idle_spawn(N, []),
    SpawnMs = ms_since(T0),
    %% Let every new process run up to its receive before measuring, and drop
    %% the garbage the spawn loop left on this process's heap.
    settle(),
    erlang:garbage_collect(),
    Rss1 = rss_bytes(),
    Vm1 = erlang:memory(processes),
    Alive = length([P || P <- Pids, is_process_alive(P)]),
    [P ! stop || P <- Pids],
    check(Alive =:= N, io_lib:format("~b of ~b idle processes alive", [Alive, N])),
    io:format(standard_error, "micro: memory: RSS ~b -> ~b bytes, erlang:memory(processes) ~b -> ~b "
              "(includes the ~b-element pid list held by the benchmark)~n",
              [Rss0, Rss1, Vm0, Vm1, N]),
    #{rss_bytes_per_proc => (Rss1 - Rss0) / N, vm_bytes_per_proc => (Vm1 - Vm0) / N,
      spawn_ms => SpawnMs}.

idle_spawn(0, Acc) -> Acc;
idle_spawn(K, Acc) -> idle_spawn(K - 1, [spawn(fun idle/0) | Acc]).

idle() -> receive stop -> ok end.

%% Wait (bounded, 10 s) until no process is waiting to run.
settle() -> settle(1000).
settle(0) -> ok;
settle(K) ->
    case erlang:statistics(total_run_queue_lengths_all) of
        0 -> ok;
        _ -> timer:sleep(10), settle(K - 1)
    end.

rss_bytes() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [_, Rest] = binary:split(Status, <<"VmRSS:">>),
    [Kb | _] = string:lexemes(Rest, " \t\n"),
    binary_to_integer(Kb) * 1024.
