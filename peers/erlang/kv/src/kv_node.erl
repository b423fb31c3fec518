%% kv_node: a store node of the Erlang kv peer (started by kv_main over erpc).
%%
%% Rules:
%%  1. start(Vnodes, Peers, StorageDelayMs) starts a kv_vnode per vnode (every
%%     node holds every vnode: N = 3 on 3 nodes), the counters, an anti-entropy
%%     loop and a ring gossip loop; Peers are the other store nodes. The vnodes
%%     read StorageDelayMs (kv_vnode rule 5) from a persistent term.
%%  2. Anti-entropy: every 500 ms each vnode sends its digest to one of its peer
%%     replicas, taking them in turn.
%%  3. Ring gossip: every 200 ms the node sends {ring_gossip, Node, Epoch,
%%     Members} to kv_control on the other nodes, which counts it.
%%  4. stats() answers the node's counts. All traffic shares Distributed
%%     Erlang's one connection per node pair.
-module(kv_node).

-export([start/3, stats/0, count/1]).

start(VNodes, Peers, StorageDelayMs) ->
    persistent_term:put(kv_storage_delay_ms, StorageDelayMs),
    Self = self(),
    %% The counters' table lives in its own process (the erpc caller does not).
    spawn(fun() ->
                  ets:new(kv_counts, [named_table, public, set]),
                  [ets:insert(kv_counts, {K, 0}) || K <- [digests_sent, repairs_applied, gossip_received, objects]],
                  Self ! counts_ready,
                  receive stop -> ok end
          end),
    receive counts_ready -> ok after 10000 -> exit(no_counters) end,
    [{ok, _} = kv_vnode:start(V) || V <- lists:seq(0, VNodes - 1)],
    Ctl = spawn(fun control/0),
    register(kv_control, Ctl),
    spawn(fun() -> ae_loop(VNodes, Peers, 0) end),
    spawn(fun() -> gossip_loop(Peers) end),
    ok.

count(K) -> catch ets:update_counter(kv_counts, K, 1).

stats() -> maps:from_list(ets:tab2list(kv_counts)).

control() ->
    receive
        {ring_gossip, _From, _Epoch, _Members} -> count(gossip_received), control();
        stop -> ok
    end.

ae_loop(VNodes, Peers, Round) ->
    timer:sleep(500),
    Peer = lists:nth(Round rem length(Peers) + 1, Peers),
    [gen_server:cast(kv_vnode:name(V), {ae_tick, {kv_vnode:name(V), Peer}}) || V <- lists:seq(0, VNodes - 1)],
    ae_loop(VNodes, Peers, Round + 1).

gossip_loop(Peers) ->
    timer:sleep(200),
    [{kv_control, P} ! {ring_gossip, node(), 1, [node() | Peers]} || P <- Peers],
    gossip_loop(Peers).
