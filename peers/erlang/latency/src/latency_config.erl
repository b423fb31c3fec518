%% latency_config: reads and checks the config the lab hands the Erlang latency
%% peer (TROUPE_CONFIG, the latency peer contract in docs/latency.md).
%%
%% It owns the keys and their allowed values:
%%   pairs 1..128; payload_bytes 524288..8388608; messages >= 10 and >= pairs;
%%   rtt_ms 0..200 (the relay reads it; the program only checks it);
%%   transport "one_connection" only: Distributed Erlang has one connection per
%%   node pair, so the other transports are refused naming the key;
%%   overlay "full_mesh" only: Distributed Erlang's nodes connect in a full mesh,
%%   so the overlays (Troupe's) are refused naming the key.
%% `parallelism` and `seed` are the lab's; the program ignores them. A bad or
%% missing value is refused with one message naming the key, the value and what
%% is allowed; the caller exits 2 before anything starts.
-module(latency_config).

-export([load/1]).

%% load(Path) -> {ok, Config :: map(), Raw} | {error, Msg :: string()}.
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
    Pairs = int_in(pairs, Get(pairs), 1, 128),
    Payload = int_in(payload_bytes, Get(payload_bytes), 524288, 8388608),
    Messages = int_in(messages, Get(messages), max(10, Pairs), 1000000),
    Rtt = int_in(rtt_ms, Get(rtt_ms), 0, 200),
    case Get(transport) of
        <<"one_connection">> -> ok;
        undefined -> bad(transport, undefined, "\"one_connection\"");
        T -> bad(transport, T, "\"one_connection\" (Distributed Erlang has one connection per "
                               "node pair; the other transports are Troupe's)")
    end,
    case Get(overlay) of
        <<"full_mesh">> -> ok;
        undefined -> bad(overlay, undefined, "\"full_mesh\"");
        O -> bad(overlay, O, "\"full_mesh\" (Distributed Erlang's nodes connect in a full mesh; "
                             "the overlays are Troupe's)")
    end,
    #{pairs => Pairs, payload_bytes => Payload, messages => Messages, rtt_ms => Rtt}.

int_in(_K, V, Min, Max) when is_integer(V), V >= Min, V =< Max -> V;
int_in(K, V, Min, Max) ->
    bad(K, V, "an integer in " ++ integer_to_list(Min) ++ ".." ++ integer_to_list(Max)).

bad(K, undefined, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s is missing: it must be ~s", [K, Allowed]))});
bad(K, V, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s = ~s: must be ~s",
                                            [K, troupe_json:encode(V), Allowed]))}).
