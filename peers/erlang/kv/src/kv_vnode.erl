%% kv_vnode: one vnode replica of the Erlang kv store, a gen_server registered
%% as kv_vnode_<V> on each store node (the rules of the Troupe store,
%% crates/troupe-lab-workloads/src/kv/quorum.rs and actors.rs).
%%
%% Rules:
%%  1. {put, From, Req, Key, Version, Bin}: store if Version is newer than the
%%     one held (versions are {Counter, Writer}, compared as tuples); answer
%%     {kv_reply, Req, ack}.
%%  2. {get, From, Req, Key}: answer {kv_reply, Req, {value, Obj}} with
%%     {Version, Bin} or not_found.
%%  3. {echo, From, Req, Bin}: answer {kv_reply, Req, {echo, Bin}}.
%%  4. Anti-entropy: {ae_tick, Peer} sends {digest, [{Key, Version}], Self} to
%%     Peer; a digest is answered with {repair, Entries} (held newer) and {pull,
%%     Keys, Self} (the digest holds newer); a pull is answered with a repair.
%%  5. Simulated storage (storage_delay_ms, seed 004 §6.2.3): a put or a get
%%     first sleeps that long in the vnode's own process, so one storage access
%%     at a time per replica, as the Troupe replica's await holds its actor.
-module(kv_vnode).
-behaviour(gen_server).

-export([start/1, name/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

name(V) -> list_to_atom("kv_vnode_" ++ integer_to_list(V)).

start(V) -> gen_server:start({local, name(V)}, ?MODULE, [], []).

init([]) -> {ok, #{}}.

handle_call(_, _, S) -> {reply, error, S}.

handle_cast({put, From, Req, Key, Ver, Bin}, S) ->
    storage(),
    S2 = put_new(Key, Ver, Bin, S),
    From ! {kv_reply, Req, ack},  % contract rule 4: applied, then acknowledged
    {noreply, S2};
handle_cast({get, From, Req, Key}, S) ->
    storage(),
    From ! {kv_reply, Req, {value, maps:get(Key, S, not_found)}},
    {noreply, S};
handle_cast({echo, From, Req, Bin}, S) ->
    From ! {kv_reply, Req, {echo, Bin}},
    {noreply, S};
handle_cast({ae_tick, Peer}, S) ->
    kv_node:count(digests_sent),
    gen_server:cast(Peer, {digest, [{K, V} || {K, {V, _}} <- maps:to_list(S)], {name_of(), node()}}),
    {noreply, S};
handle_cast({digest, Entries, From}, S) ->
    Theirs = maps:from_list(Entries),
    Push = [K || {K, {V, _}} <- maps:to_list(S), not (maps:is_key(K, Theirs) andalso maps:get(K, Theirs) >= V)],
    Pull = [K || {K, T} <- Entries, not (maps:is_key(K, S) andalso element(1, maps:get(K, S)) >= T)],
    Push =/= [] andalso gen_server:cast(From, {repair, [{K, V, B} || K <- Push, {V, B} <- [maps:get(K, S)]]}),
    Pull =/= [] andalso gen_server:cast(From, {pull, Pull, {name_of(), node()}}),
    {noreply, S};
handle_cast({repair, Entries}, S) ->
    {noreply, lists:foldl(fun({K, V, B}, Acc) ->
                                  Acc2 = put_new(K, V, B, Acc),
                                  Acc2 =/= Acc andalso kv_node:count(repairs_applied),
                                  Acc2
                          end, S, Entries)};
handle_cast({pull, Keys, From}, S) ->
    gen_server:cast(From, {repair, [{K, V, B} || K <- Keys, {V, B} <- [maps:get(K, S, none)]]}),
    {noreply, S};
handle_cast(_, S) -> {noreply, S}.

%% Rule 5.
storage() ->
    case persistent_term:get(kv_storage_delay_ms, 0) of
        0 -> ok;
        D -> timer:sleep(D)
    end.

handle_info(_, S) -> {noreply, S}.

name_of() -> element(2, process_info(self(), registered_name)).

put_new(Key, Ver, Bin, S) ->
    case maps:get(Key, S, none) of
        {Have, _} when Have >= Ver -> S;
        none -> kv_node:count(objects), S#{Key => {Ver, Bin}};
        _ -> S#{Key => {Ver, Bin}}
    end.
