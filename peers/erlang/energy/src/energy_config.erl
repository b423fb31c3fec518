%% energy_config: reads and checks the config the lab hands the Erlang energy peer
%% (TROUPE_CONFIG, the energy peer contract in peers/erlang/README.md).
%%
%% It owns the keys and their allowed values:
%%   workload  "prime" | "ping_pong" | "ping_pong_lb" | "ping_pong_lb_prime"
%%   mode      "native" | "distributed"
%%   clients, msgs, servers, reps: integers >= 1;  range: integer 2..10^9 (the
%%   lab's bound; the seed's find_primes/1 holds a list of the whole range).
%% `seed` and `sample_ms` are the lab's; the programs ignore them (and accept
%% them missing). Every other key is carried into run_started unchanged.
%% A bad or missing value is refused with one message naming the key, the value
%% and what is allowed; the caller exits 2 before anything starts.
-module(energy_config).

-export([load/1]).

-define(WORKLOADS, [<<"prime">>, <<"ping_pong">>, <<"ping_pong_lb">>, <<"ping_pong_lb_prime">>]).
-define(MODES, [<<"native">>, <<"distributed">>]).
-define(MAX_RANGE, 1000000000).

%% load(Path) -> {ok, Config :: map(), Raw :: json object} | {error, Msg :: string()}.
%% Config has the atoms workload and mode and the integers clients, msgs,
%% servers, range, reps.
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
    Workload = one_of(workload, Get(workload), ?WORKLOADS),
    Mode = one_of(mode, Get(mode), ?MODES),
    Ints = [{K, int_at_least(K, Get(K), Min)}
            || {K, Min} <- [{clients, 1}, {msgs, 1}, {servers, 1}, {reps, 1}]],
    Range = int_in(range, Get(range), 2, ?MAX_RANGE),
    maps:from_list([{workload, Workload}, {mode, Mode}, {range, Range} | Ints]).

one_of(K, V, Allowed) ->
    case lists:member(V, Allowed) of
        true -> binary_to_atom(V, utf8);
        false ->
            Names = lists:join(", ", [[$", A, $"] || A <- Allowed]),
            bad(K, V, "one of " ++ binary_to_list(iolist_to_binary(Names)))
    end.

int_in(_K, V, Min, Max) when is_integer(V), V >= Min, V =< Max -> V;
int_in(K, V, Min, Max) ->
    bad(K, V, lists:flatten(io_lib:format("an integer from ~b to ~b (the lab's range key)", [Min, Max]))).

int_at_least(_K, V, Min) when is_integer(V), V >= Min -> V;
int_at_least(K, V, Min) -> bad(K, V, "an integer >= " ++ integer_to_list(Min)).

bad(K, undefined, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s is missing: it must be ~s",
                                            [K, Allowed]))});
bad(K, V, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s = ~s: must be ~s",
                                            [K, troupe_json:encode(V), Allowed]))}).
