%% kv_main: entry point of the Erlang kv peer (`peers/erlang/kv/run`): the
%% client node, which starts the three store nodes (docs/kv.md).
%%
%% As the Troupe program does:
%%  1. checks the config (kv_config) before anything starts; starts three store
%%     nodes with OTP's `peer` module (child OS processes, control over
%%     standard_io, each on a fixed loopback port found by troupe_epmd), routes every
%%     node to every other, starts kv_node on each;
%%  2. runs `concurrency` client processes together until `duration_s` has
%%     passed, each one operation at a time: a put takes the next version
%%     {Counter, Client} and goes to the 3 replicas, done on W acks; a get goes
%%     to the 3 replicas, done on R replies, the newest version winning; an echo
%%     goes to the key's first replica. A vnode is erlang:phash2(Key, VNodes);
%%     its preferred replica is node (V rem 3). An operation not done within the
%%     limit fails (ok = false);
%%  3. after the window: op {client, seq, op, latency_us, ok} per operation,
%%     window {elapsed_us, ops, failed_ops}, nodes {...} summed, run_finished.
%% Exit codes: 0 done; 2 bad input (one stderr line naming the key); 1 failure.
-module(kv_main).

-export([main/0]).

main() ->
    try run() of
        ok -> halt(0)
    catch
        throw:{input, Msg} ->
            io:format(standard_error, "kv: ~ts~n", [Msg]),
            halt(2);
        C:E:St ->
            io:format(standard_error, "kv: run failed: ~p:~p~n~p~n", [C, E, St]),
            case whereis(troupe_events_writer) of
                undefined -> ok;
                _ -> catch troupe_events:finish(run_finished, fun(D) -> [{dropped_events, D}, {errors, 1}] end)
            end,
            halt(1)
    end.

env(Name) ->
    case os:getenv(Name) of
        false -> throw({input, Name ++ " is not set (troupe lab run sets it; see docs/kv.md)"});
        V -> V
    end.

run() ->
    {Cfg, Raw} = case kv_config:load(env("TROUPE_CONFIG")) of
                     {ok, C, R} -> {C, R};
                     {error, M} -> throw({input, M})
                 end,
    case troupe_events:start(env("TROUPE_EVENTS"), os:getenv("TROUPE_RUN_ID", "local"), "erlang", "client") of
        ok -> ok;
        {error, M2} -> throw({input, M2})
    end,
    Version = iolist_to_binary(["OTP ", erlang:system_info(otp_release), " (erts ", erlang:system_info(version), ")"]),
    troupe_events:emit(run_started, [{workload, <<"kv">>}, {config, Raw}, {version, Version}]),
    is_alive() orelse error(not_distributed),
    Nodes = start_nodes(3),
    #{vnodes := VN} = Cfg,
    [ok = erpc:call(N, kv_node, start, [VN, Nodes -- [N], maps:get(storage_delay_ms, Cfg)], 30000) || N <- Nodes],
    Counter = atomics:new(1, []),
    Self = self(),
    #{concurrency := Conc, duration_s := Dur} = Cfg,
    Bin = binary:copy(<<16#a5>>, maps:get(object_bytes, Cfg)),
    %% In the lab's namespaces the network layer times its faults (the delay) from
    %% the window start: say when it opens, as the Troupe program does.
    os:getenv("TROUPE_NETNS", "") =/= "" andalso
        troupe_events:emit(ready, [{what, <<"window">>}, {count, Conc},
                                   {start_us, os:system_time(microsecond)}]),
    T0 = erlang:monotonic_time(microsecond),
    End = T0 + Dur * 1000000,
    Clients = [spawn_link(fun() -> Self ! {done, self(), client(Cfg, I, Nodes, Counter, Bin, End)} end)
               || I <- lists:seq(0, Conc - 1)],
    Limit = limit(Cfg),
    Rows = lists:append([receive {done, P, Rs} -> Rs after Dur * 1000 + Limit * 2 -> error(client_hung) end
                         || P <- Clients]),
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    Stats = [erpc:call(N, kv_node, stats, [], 30000) || N <- Nodes],
    Sum = fun(K) -> lists:sum([maps:get(K, S, 0) || S <- Stats]) end,
    [troupe_events:emit(op, [{client, C}, {seq, S}, {op, O}, {latency_us, L}, {ok, Ok}])
     || {C, S, O, L, Ok} <- lists:sort(Rows)],
    Failed = length([x || {_, _, _, _, false} <- Rows]),
    troupe_events:emit(window, [{elapsed_us, Elapsed}, {ops, length(Rows)}, {failed_ops, Failed}]),
    troupe_events:emit(nodes, [{K, Sum(K)} || K <- [digests_sent, repairs_applied, gossip_received, objects]]),
    [catch peer:stop(P) || {P, _} <- persistent_term:get({?MODULE, peers}, [])],
    case troupe_events:finish(run_finished, fun(D) -> [{dropped_events, D}, {errors, 0}] end) of
        {ok, _, 0} -> ok;
        Other -> io:format(standard_error, "kv: event writer: ~p~n", [Other]), halt(1)
    end.

limit(#{concurrency := C, object_bytes := B}) -> 10000 + (C * B * 3) div 20000.

%% Rule 1: three store nodes on fixed ports, every node routed to every other.
%% In the lab's network namespaces (TROUPE_NETNS: docs/lab.md "Network faults",
%% netlayer rule 4), store node I is started with `ip netns exec` in the
%% namespace the file names for node-I, listening on and named by its address.
start_nodes(K) ->
    Ebin = filename:dirname(code:which(?MODULE)),
    Spots = spots(K),
    Ports = [free_port() || _ <- Spots],
    Names = ["kv" ++ integer_to_list(I) || I <- lists:seq(0, K - 1)],
    Routes = lists:zip(Names, Ports),
    [troupe_epmd:route(N, P) || {N, P} <- Routes],
    Started = [begin
                   {Exec, Ip} = Spot,
                   Args = ["-setcookie", atom_to_list(erlang:get_cookie()),
                           "-kernel", "inet_dist_use_interface", lists:flatten(io_lib:format("~w", [Ip])),
                           "-kernel", "inet_dist_listen_min", integer_to_list(P),
                           "-kernel", "inet_dist_listen_max", integer_to_list(P),
                           "-epmd_module", "troupe_epmd", "-start_epmd", "false", "-pa", Ebin],
                   Opts = #{name => list_to_atom(N), host => inet:ntoa(Ip),
                            longnames => true, connection => standard_io,
                            wait_boot => 60000, args => Args},
                   {ok, Peer, Node} = peer:start_link(with_exec(Exec, Opts)),
                   unlink(Peer),
                   {Peer, Node}
               end || {{N, P}, Spot} <- lists:zip(Routes, Spots)],
    persistent_term:put({?MODULE, peers}, Started),
    Nodes = [Nd || {_, Nd} <- Started],
    [pong = net_adm:ping(Nd) || Nd <- Nodes],
    [[ok = erpc:call(Nd, troupe_epmd, route, [N, P], 10000) || {N, P} <- Routes] || Nd <- Nodes],
    Nodes.

with_exec(none, Opts) -> Opts;
with_exec(Exec, Opts) -> Opts#{exec => Exec}.

%% Where each store node runs: {none, {127,0,0,1}} on loopback, or {Exec, Ip} in
%% the namespace of node-I (Exec runs erl through `ip netns exec NS`).
spots(K) ->
    case os:getenv("TROUPE_NETNS") of
        false -> [{none, {127, 0, 0, 1}} || _ <- lists:seq(1, K)];
        "" -> [{none, {127, 0, 0, 1}} || _ <- lists:seq(1, K)];
        Path ->
            Nodes = case troupe_json:read_file(Path) of
                        {ok, Obj} -> troupe_json:get(nodes, Obj, []);
                        {error, M} -> throw({input, "TROUPE_NETNS=" ++ Path ++ ": " ++ M})
                    end,
            IpBin = find_exe(["ip", "/usr/sbin/ip", "/sbin/ip"], "ip (iproute2)"),
            Erl = find_exe(["erl"], "erl"),
            [netns_spot(Path, Nodes, I, IpBin, Erl) || I <- lists:seq(0, K - 1)]
    end.

netns_spot(Path, Nodes, I, IpBin, Erl) ->
    Want = list_to_binary("node-" ++ integer_to_list(I)),
    case [N || N <- Nodes, troupe_json:get(name, N) =:= Want] of
        [N] ->
            Ns = binary_to_list(troupe_json:get(netns, N)),
            Addr = binary_to_list(troupe_json:get(addr, N)),
            case inet:parse_ipv4strict_address(Addr) of
                {ok, Ip} -> {{IpBin, ["netns", "exec", Ns, Erl]}, Ip};
                _ -> throw({input, "TROUPE_NETNS=" ++ Path ++ ": node " ++ binary_to_list(Want)
                                  ++ " has no IPv4 addr (got " ++ Addr ++ ")"})
            end;
        _ -> throw({input, "TROUPE_NETNS=" ++ Path ++ ": no node named " ++ binary_to_list(Want)
                           ++ " (the kv store nodes are node-0 .. node-2)"})
    end.

find_exe([], What) -> throw({input, "cannot find " ++ What ++ " on this machine"});
find_exe([C | Rest], What) ->
    case os:find_executable(C) of
        false -> case filelib:is_regular(C) of true -> C; false -> find_exe(Rest, What) end;
        P -> P
    end.

%% A port free on this namespace's loopback; a store node in a namespace of its
%% own finds it free there too (each namespace has its own ports).
free_port() ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, P} = inet:port(L),
    ok = gen_tcp:close(L),
    P.

%% Rule 2: one client's operations until End.
client(Cfg, I, Nodes, Counter, Bin, End) ->
    rand:seed(exsss, {maps:get(seed, Cfg), I, 17}),
    client(Cfg, I, Nodes, Counter, Bin, End, 0, []).

client(Cfg, I, Nodes, Counter, Bin, End, Seq, Acc) ->
    case erlang:monotonic_time(microsecond) >= End of
        true -> Acc;
        false ->
            #{keys := Keys, vnodes := VN, service := Svc, read_pct := RP, r := R, w := W} = Cfg,
            Key = "k" ++ integer_to_list(rand:uniform(Keys) - 1),
            V = erlang:phash2(Key, VN),
            First = V rem length(Nodes),
            Reps = [{kv_vnode:name(V), lists:nth((First + J) rem length(Nodes) + 1, Nodes)}
                    || J <- lists:seq(0, length(Nodes) - 1)],
            Req = make_ref(),
            Op = case Svc of
                     echo -> <<"echo">>;
                     kv -> case rand:uniform(100) =< RP of true -> <<"get">>; false -> <<"put">> end
                 end,
            T0 = erlang:monotonic_time(microsecond),
            %% Contract rule 7: one limit for the whole operation, from just before its first send.
            Deadline = erlang:monotonic_time(millisecond) + limit(Cfg),
            Ok = case Op of
                     <<"echo">> ->
                         gen_server:cast(hd(Reps), {echo, self(), Req, Bin}),
                         collect(Req, 1, Deadline, none);
                     <<"put">> ->
                         Ver = {atomics:add_get(Counter, 1, 1), I},
                         [gen_server:cast(Rp, {put, self(), Req, Key, Ver, Bin}) || Rp <- Reps],
                         collect(Req, W, Deadline, none);
                     <<"get">> ->
                         [gen_server:cast(Rp, {get, self(), Req, Key}) || Rp <- Reps],
                         collect(Req, R, Deadline, not_found)
                 end,
            L = erlang:monotonic_time(microsecond) - T0,
            flush_late(),
            client(Cfg, I, Nodes, Counter, Bin, End, Seq + 1, [{I, Seq, Op, L, Ok =/= false} | Acc])
    end.

%% Waits for N replies of Req until Deadline (monotonic ms); for a get, keeps the newest
%% object (rule 2).
collect(_Req, 0, _Deadline, Newest) -> {true, Newest};
collect(Req, N, Deadline, Newest) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        {kv_reply, Req, {value, not_found}} -> collect(Req, N - 1, Deadline, Newest);
        {kv_reply, Req, {value, {V, _} = Obj}} ->
            case Newest of
                {Have, _} when Have >= V -> collect(Req, N - 1, Deadline, Newest);
                _ -> collect(Req, N - 1, Deadline, Obj)
            end;
        {kv_reply, Req, _} -> collect(Req, N - 1, Deadline, Newest)
    after Left -> false
    end.

%% Contract rule 5: the replies that came after an operation's quorum (or after it failed) are
%% discarded once it is over, outside its latency, so they never pile up in the client's
%% mailbox. One operation at a time: every reply waiting now is late. Bounded by the messages
%% already in the mailbox (at most N - 1 per operation).
flush_late() ->
    receive
        {kv_reply, _, _} -> flush_late()
    after 0 -> ok
    end.
