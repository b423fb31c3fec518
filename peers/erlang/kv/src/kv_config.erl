%% kv_config: reads and checks the config the lab hands the Erlang kv peer
%% (TROUPE_CONFIG, docs/kv.md). Keys and allowed values as the Troupe program:
%% service "kv" | "echo"; object_bytes 1..8388608; concurrency 1..256;
%% duration_s 1..3600; vnodes 3..1024; n 3; r, w 1..3 with r + w > n; keys
%% 1..100000; read_pct 0..100; storage_delay_ms 0..1000; seed >= 0; transport
%% "one_connection" only (Distributed Erlang has one connection per node pair);
%% overlay "full_mesh" only (Distributed Erlang's nodes connect in a full mesh);
%% parallelism is Troupe's and ignored; nemesis must be empty (no history is
%% recorded here). A bad value is refused with one message naming the key.
-module(kv_config).

-export([load/1]).

load(Path) ->
    case troupe_json:read_file(Path) of
        {ok, {_} = Raw} ->
            try
                {ok, check(Raw), Raw}
            catch
                throw:{bad, Msg} -> {error, Msg}
            end;
        {ok, _} -> {error, "config " ++ Path ++ ": expected a JSON object"};
        {error, _} = E -> E
    end.

check(Raw) ->
    Get = fun(K) -> troupe_json:get(K, Raw) end,
    case Get(transport) of
        <<"one_connection">> -> ok;
        T -> bad(transport, T, "\"one_connection\" (Distributed Erlang has one connection per "
                               "node pair; channels is Troupe's)")
    end,
    case Get(overlay) of
        <<"full_mesh">> -> ok;
        O -> bad(overlay, O, "\"full_mesh\" (Distributed Erlang's nodes connect in a full mesh; "
                             "the overlays are Troupe's)")
    end,
    case Get(nemesis) of
        undefined -> ok;
        <<>> -> ok;
        Nem -> bad(nemesis, Nem, "empty (this peer records no history and carries out no "
                                 "nemesis yet: nemesis runs of kv are Troupe's only)")
    end,
    Service = case Get(service) of
                  <<"kv">> -> kv;
                  <<"echo">> -> echo;
                  S -> bad(service, S, "\"kv\" or \"echo\"")
              end,
    N = int_in(n, Get(n), 3, 3),
    R = int_in(r, Get(r), 1, 3),
    W = int_in(w, Get(w), 1, 3),
    R + W > N orelse throw({bad, "config keys r + w must be greater than n"}),
    #{service => Service,
      object_bytes => int_in(object_bytes, Get(object_bytes), 1, 8388608),
      concurrency => int_in(concurrency, Get(concurrency), 1, 256),
      duration_s => int_in(duration_s, Get(duration_s), 1, 3600),
      vnodes => int_in(vnodes, Get(vnodes), 3, 1024),
      n => N, r => R, w => W,
      keys => int_in(keys, Get(keys), 1, 100000),
      read_pct => int_in(read_pct, Get(read_pct), 0, 100),
      %% Absent in configs written before the key existed: no simulated storage.
      storage_delay_ms => case Get(storage_delay_ms) of
                              undefined -> 0;
                              D -> int_in(storage_delay_ms, D, 0, 1000)
                          end,
      seed => int_in(seed, Get(seed), 0, 1 bsl 62)}.

int_in(_K, V, Min, Max) when is_integer(V), V >= Min, V =< Max -> V;
int_in(K, V, Min, Max) ->
    bad(K, V, "an integer in " ++ integer_to_list(Min) ++ ".." ++ integer_to_list(Max)).

bad(K, undefined, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s is missing: it must be ~s", [K, Allowed]))});
bad(K, V, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s = ~s: must be ~s",
                                            [K, troupe_json:encode(V), Allowed]))}).
