%% energy_work: the four energy workloads as plain Erlang processes, and one
%% measured repetition of each (the energy peer contract, spec workloads.md §4).
%% The actors, their messages and the prime count are seed 002's Erlang programs
%% (src/native/*_erl and src/distributed/*_erl of the seed's repository;
%% docs/energy.md, "Seed programs", lists every difference and its reason).
%%
%% Rules this module keeps (checked by peers/lib/energy-smoke.sh):
%%  1. Everything a repetition needs (the prime actor, the server(s), the load
%%     balancer, the clients) is spawned BEFORE start_us; clients wait for `go`.
%%  2. start_us is taken just before the first `go` (or the prime request);
%%     end_us when the last client has reported its last pong (or the prime
%%     count has arrived). The result is the number of pongs the clients got
%%     (clients * msgs) or pi(range).
%%  3. prime: the seed's find_primes/1: lists:foldl over lists:seq(2, Range),
%%     and is_prime/1 tests N with lists:any over lists:seq(2, trunc(sqrt(N)))
%%     (the whole divisor list is built for every N, the first divisor found
%%     stops the test); no messages during the count.
%%  4. ping_pong: one server; each client sends {Self, ping}, waits for `pong`,
%%     `msgs` times. ping_pong_lb: `servers` servers behind one load balancer
%%     that forwards each request, unchanged, to
%%     lists:nth((Index rem length(Servers)) + 1, Servers), Index counting up
%%     from 0; the server replies to the client DIRECTLY (not via the load
%%     balancer). ping_pong_lb_prime: the request is {Self, Range} and the
%%     server answers with the bare integer find_primes(Range), counted per
%%     request; an answer other than pi(Range) is counted as wrong.
%%  5. The prime actor, servers and load balancer run on `Far`: this node in
%%     native mode, the far node in distributed mode. Clients run here. In
%%     native mode clients send to the entry's pid; in distributed mode the
%%     entry (the server or the load balancer) is registered with `global` and
%%     every request goes through global:send/2, as in the seed's distributed
%%     clients.
%%  6. After end_us every actor of the repetition is stopped and its exit
%%     awaited (10 s, then killed), so repetitions never share actors.
%%  7. Bounded: a repetition fails after ?REP_TIMEOUT_MS, or at once when the
%%     prime actor, a server, the load balancer or a client dies (including a
%%     lost far node: its monitors fire with `noconnection`). The clients' hot
%%     loop has no receive timeout (a timer per message would distort what is
%%     measured); they are bounded by the main process killing them.
-module(energy_work).

-export([rep/3, find_primes/1]).
%% Process entry points (spawned locally and on the far node).
-export([prime_actor/0, ping_server/0, prime_server/0, load_balancer/2, client/4]).

-define(REP_TIMEOUT_MS, 3600 * 1000).
-define(STOP_TIMEOUT_MS, 10000).

%% rep(Config, Far, Expected) -> {StartUs, EndUs, Result, Errors}.
%% Expected is pi(range) for ping_pong_lb_prime (checked against every answer),
%% else `none`. Throws {failed, Msg} when the repetition cannot complete.
rep(#{workload := prime, range := Range}, Far, _Expected) ->
    P = spawn(Far, ?MODULE, prime_actor, []),
    Mon = monitor(process, P),
    T0 = now_us(),
    P ! {count, self(), Range},
    Count = receive
                {primes, P, N} -> N;
                {'DOWN', Mon, process, P, Why} -> fail("the prime actor died: ~p", [Why])
            after ?REP_TIMEOUT_MS -> fail("no prime count within ~b s", [?REP_TIMEOUT_MS div 1000])
            end,
    T1 = now_us(),
    stop_all([{P, Mon}]),
    {T0, T1, Count, 0};
rep(#{workload := W, clients := C, msgs := M, servers := S, range := Range}, Far, Expected) ->
    {ServerFun, NServers} = case W of
                                ping_pong -> {ping_server, 1};
                                ping_pong_lb -> {ping_server, S};
                                ping_pong_lb_prime -> {prime_server, S}
                            end,
    Servers = [spawn_mon(Far, ServerFun, []) || _ <- lists:seq(1, NServers)],
    {Entry, Actors} = case W of
                          ping_pong ->
                              [{Srv, _}] = Servers,
                              {Srv, Servers};
                          _ ->
                              {Lb, _} = LbM = spawn_mon(Far, load_balancer,
                                                        [[P || {P, _} <- Servers], 0]),
                              {Lb, [LbM | Servers]}
                      end,
    Target = target(Entry, Far),
    Req = case W of ping_pong_lb_prime -> {prime, Range, Expected}; _ -> ping end,
    Main = self(),
    Clients = [spawn_monitor(?MODULE, client, [Main, Target, M, Req]) || _ <- lists:seq(1, C)],
    Watched = maps:from_list([{Ref, P} || {P, Ref} <- Actors]),
    Deadline = erlang:monotonic_time(millisecond) + ?REP_TIMEOUT_MS,
    T0 = now_us(),
    [P ! go || {P, _} <- Clients],
    {Pongs, Wrong} = collect(C, 0, 0, Watched, Deadline),
    T1 = now_us(),
    %% Clients exit right after reporting; wait for each (their DOWNs are
    %% still queued: collect/5 leaves normal exits alone).
    stop_all(Clients, no_stop),
    stop_all(Actors),
    {T0, T1, Pongs, Wrong}.

%% How clients address the entry (rule 5): its pid on this node; through a
%% global name when it runs on the far node. The name is new for every
%% repetition, so a name whose previous holder is still being cleaned up by
%% `global` is never reused.
target(Entry, Far) when Far =:= node() -> {pid, Entry};
target(Entry, _Far) ->
    Name = {energy_entry, erlang:unique_integer([positive])},
    case global:register_name(Name, Entry) of
        yes -> {global, Name};
        no -> fail("cannot register the far entry ~p with global", [Entry])
    end.

spawn_mon(Far, F, A) ->
    P = spawn(Far, ?MODULE, F, A),
    {P, monitor(process, P)}.

%% Waits for `Left` clients' {done, ...} reports. A client's normal exit is not
%% consumed here; any other exit, or any exit of a server / the load balancer,
%% fails the repetition.
collect(0, Pongs, Wrong, _Watched, _Deadline) -> {Pongs, Wrong};
collect(Left, Pongs, Wrong, Watched, Deadline) ->
    Wait = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        {done, _Client, P, Bad} ->
            collect(Left - 1, Pongs + P, Wrong + Bad, Watched, Deadline);
        {'DOWN', Ref, process, Pid, Why} when Why =/= normal; is_map_key(Ref, Watched) ->
            Who = case maps:is_key(Ref, Watched) of true -> "a server or the load balancer"; false -> "a client" end,
            fail("~s (~p) died: ~p", [Who, Pid, Why])
    after Wait ->
            fail("~b of the clients did not finish within ~b s", [Left, ?REP_TIMEOUT_MS div 1000])
    end.

%% Sends `stop` to each actor and waits for its exit; an actor that does not
%% exit within ?STOP_TIMEOUT_MS is killed.
stop_all(Actors) -> stop_all(Actors, stop).
stop_all(Actors, Msg) ->
    Msg =:= stop andalso [P ! stop || {P, _} <- Actors],
    lists:foreach(fun({P, Ref}) ->
                          receive {'DOWN', Ref, process, P, _} -> ok
                          after ?STOP_TIMEOUT_MS ->
                                  exit(P, kill),
                                  receive {'DOWN', Ref, process, P, _} -> ok
                                  after ?STOP_TIMEOUT_MS -> fail("actor ~p did not stop", [P])
                                  end
                          end
                  end, Actors).

%%--------------------------------------------------------------------
%% The actors (the seed's server, load_balancer and client functions, less
%% their verbose printing and their `done` notices to a main process: rule 6
%% stops them instead)
%%--------------------------------------------------------------------

%% prime (rule 3): answers {count, From, Range} with {primes, Self, pi(Range)}.
prime_actor() ->
    receive
        {count, From, Range} ->
            From ! {primes, self(), find_primes(Range)},
            prime_actor();
        stop -> ok
    end.

%% The ping_pong and ping_pong_lb server (rule 4): pong to the client named in
%% the request.
ping_server() ->
    receive
        {From, ping} ->
            From ! pong,
            ping_server();
        stop -> ok
    end.

%% The ping_pong_lb_prime server (rule 4): the number of primes up to the
%% range in the request, counted for every request.
prime_server() ->
    receive
        {From, PrimeRange} ->
            From ! find_primes(PrimeRange),
            prime_server();
        stop -> ok
    end.

%% The round-robin load balancer (rule 4): forwards each request unchanged to
%% the server at position (Index rem length(Servers)) + 1.
load_balancer(Servers, Index) ->
    receive
        {From, Msg} ->
            Server = lists:nth((Index rem length(Servers)) + 1, Servers),
            Server ! {From, Msg},
            load_balancer(Servers, Index + 1);
        stop -> ok
    end.

%% A client: waits for `go`, does `Msgs` round trips, reports {done, Self,
%% Pongs, Wrong} (Wrong: prime answers that differ from the expected count)
%% and exits.
client(Main, Target, Msgs, Req) ->
    receive go -> ok end,
    {Pongs, Wrong} = case {Req, Target} of
                         {ping, {pid, P}} -> ping_loop(P, Msgs, 0);
                         {ping, {global, Name}} -> global_ping_loop(Name, Msgs, 0);
                         {{prime, Range, Expected}, {pid, P}} ->
                             prime_loop(P, Range, Expected, Msgs, 0, 0);
                         {{prime, Range, Expected}, {global, Name}} ->
                             global_prime_loop(Name, Range, Expected, Msgs, 0, 0)
                     end,
    Main ! {done, self(), Pongs, Wrong}.

%% The seed's native clients: send to the pid.
ping_loop(_Server, 0, Got) -> {Got, 0};
ping_loop(Server, N, Got) ->
    Server ! {self(), ping},
    receive
        pong -> ping_loop(Server, N - 1, Got + 1)
    end.

prime_loop(_Lb, _Range, _Expected, 0, Got, Wrong) -> {Got, Wrong};
prime_loop(Lb, Range, Expected, N, Got, Wrong) ->
    Lb ! {self(), Range},
    receive
        Expected -> prime_loop(Lb, Range, Expected, N - 1, Got + 1, Wrong);
        Other when is_integer(Other) -> prime_loop(Lb, Range, Expected, N - 1, Got + 1, Wrong + 1)
    end.

%% The seed's distributed clients: every request through global:send/2.
global_ping_loop(_Name, 0, Got) -> {Got, 0};
global_ping_loop(Name, N, Got) ->
    global:send(Name, {self(), ping}),
    receive
        pong -> global_ping_loop(Name, N - 1, Got + 1)
    end.

global_prime_loop(_Name, _Range, _Expected, 0, Got, Wrong) -> {Got, Wrong};
global_prime_loop(Name, Range, Expected, N, Got, Wrong) ->
    global:send(Name, {self(), Range}),
    receive
        Expected -> global_prime_loop(Name, Range, Expected, N - 1, Got + 1, Wrong);
        Other when is_integer(Other) ->
            global_prime_loop(Name, Range, Expected, N - 1, Got + 1, Wrong + 1)
    end.

%%--------------------------------------------------------------------
%% Counting primes (rule 3): the seed's brute force, list for list
%%--------------------------------------------------------------------

%% find_primes(Max) -> the number of primes =< Max.
find_primes(Max) ->
    lists:foldl(fun(N, Acc) ->
                        case is_prime(N) of
                            true -> Acc + 1;
                            false -> Acc
                        end
                end, 0, lists:seq(2, Max)).

is_prime(N) when N < 2 -> false;
is_prime(2) -> true;
is_prime(N) ->
    Max = trunc(math:sqrt(N)),
    not lists:any(fun(X) -> N rem X =:= 0 end, lists:seq(2, Max)).

now_us() -> os:system_time(microsecond).

fail(Fmt, Args) -> throw({failed, lists:flatten(io_lib:format(Fmt, Args))}).
