%% energy_work: the four energy workloads as plain Erlang processes, and one
%% measured repetition of each (the energy peer contract, spec workloads.md §4).
%%
%% Rules this module keeps (checked by peers/lib/energy-smoke.sh):
%%  1. Everything a repetition needs (the prime actor, the server(s), the load
%%     balancer, the clients) is spawned BEFORE start_us; clients wait for `go`.
%%  2. start_us is taken just before the first `go` (or the prime request);
%%     end_us when the last client has reported its last pong (or the prime
%%     count has arrived). The result is the number of pongs the clients got
%%     (clients * msgs) or pi(range).
%%  3. prime: one process counts primes <= range by trial division (every
%%     divisor d = 2, 3, ... while d * d =< n); no messages during the count.
%%  4. ping_pong: one server; each client sends {ping, Self}, waits for `pong`,
%%     `msgs` times. ping_pong_lb: `servers` servers behind one load balancer
%%     that forwards each request, unchanged, to the next server in turn; the
%%     server replies to the client DIRECTLY (not via the load balancer).
%%     ping_pong_lb_prime: the request is {prime, Self, Range} and the server
%%     answers {primes, pi(Range)}, counted per request; a wrong count is an error.
%%  5. The prime actor, servers and load balancer run on `Far`: this node in
%%     native mode, the far node in distributed mode. Clients run here.
%%  6. After end_us every actor of the repetition is stopped and its exit
%%     awaited (10 s, then killed), so repetitions never share actors.
%%  7. Bounded: a repetition fails after ?REP_TIMEOUT_MS, or at once when the
%%     prime actor, a server, the load balancer or a client dies (including a
%%     lost far node: its monitors fire with `noconnection`). The clients' hot
%%     loop has no receive timeout (a timer per message would distort what is
%%     measured); they are bounded by the main process killing them.
-module(energy_work).

-export([rep/3, count_primes/1]).
%% Process entry points (spawned locally and on the far node).
-export([prime_actor/0, server/0, lb/1, client/4]).

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
    NServers = case W of ping_pong -> 1; _ -> S end,
    Servers = [spawn_mon(Far, server, []) || _ <- lists:seq(1, NServers)],
    {Target, Actors} = case W of
                           ping_pong ->
                               [{Srv, _}] = Servers,
                               {Srv, Servers};
                           _ ->
                               {Lb, _} = LbM = spawn_mon(Far, lb, [[P || {P, _} <- Servers]]),
                               {Lb, [LbM | Servers]}
                       end,
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
%% The actors
%%--------------------------------------------------------------------

%% prime (rule 3): answers {count, From, Range} with {primes, Self, pi(Range)}.
prime_actor() ->
    receive
        {count, From, Range} ->
            From ! {primes, self(), count_primes(Range)},
            prime_actor();
        stop -> ok
    end.

%% A server (rule 4): replies to the client named in the request.
server() ->
    receive
        {ping, From} ->
            From ! pong,
            server();
        {prime, From, Range} ->
            From ! {primes, count_primes(Range)},
            server();
        stop -> ok
    end.

%% The round-robin load balancer (rule 4): forwards each request unchanged.
lb(Servers) -> lb(Servers, Servers).

lb([], All) -> lb(All, All);
lb([S | Rest], All) ->
    receive
        {ping, _} = Req ->
            S ! Req,
            lb(Rest, All);
        {prime, _, _} = Req ->
            S ! Req,
            lb(Rest, All);
        stop -> ok
    end.

%% A client: waits for `go`, does `Msgs` round trips, reports {done, Self,
%% Pongs, Wrong} (Wrong: prime answers that differ from the expected count)
%% and exits.
client(Main, Target, Msgs, Req) ->
    receive go -> ok end,
    {Pongs, Wrong} = case Req of
                         ping -> ping_loop(Target, Msgs, 0);
                         {prime, Range, Expected} -> prime_loop(Target, Range, Expected, Msgs, 0, 0)
                     end,
    Main ! {done, self(), Pongs, Wrong}.

ping_loop(_Target, 0, Got) -> {Got, 0};
ping_loop(Target, N, Got) ->
    Target ! {ping, self()},
    receive
        pong -> ping_loop(Target, N - 1, Got + 1)
    end.

prime_loop(_Target, _Range, _Expected, 0, Got, Wrong) -> {Got, Wrong};
prime_loop(Target, Range, Expected, N, Got, Wrong) ->
    Target ! {prime, self(), Range},
    receive
        {primes, Expected} -> prime_loop(Target, Range, Expected, N - 1, Got + 1, Wrong);
        {primes, _} -> prime_loop(Target, Range, Expected, N - 1, Got + 1, Wrong + 1)
    end.

%%--------------------------------------------------------------------
%% Trial division (rule 3)
%%--------------------------------------------------------------------

%% count_primes(Range) -> the number of primes =< Range.
count_primes(Range) -> count_primes(2, Range, 0).

count_primes(N, Range, Acc) when N > Range -> Acc;
count_primes(N, Range, Acc) ->
    case is_prime(N, 2) of
        true -> count_primes(N + 1, Range, Acc + 1);
        false -> count_primes(N + 1, Range, Acc)
    end.

is_prime(N, D) when D * D > N -> true;
is_prime(N, D) when N rem D =:= 0 -> false;
is_prime(N, D) -> is_prime(N, D + 1).

now_us() -> os:system_time(microsecond).

fail(Fmt, Args) -> throw({failed, lists:flatten(io_lib:format(Fmt, Args))}).
