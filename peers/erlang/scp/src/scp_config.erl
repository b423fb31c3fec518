%% scp_config: reads and validates the SCP inputs the lab hands the Erlang peer.
%%
%% It owns two things: the resolved config object (TROUPE_CONFIG, keys of
%% workloads.md §1) and the fault schedule (TROUPE_SCHEDULE, events.md "The
%% fault schedule"). Everything is checked before anything starts; a bad input
%% is reported with the key/line, the value and what is allowed, and the run
%% exits 2 without starting the SUB. Keys this peer does not use (pattern,
%% failure_rate, burst_size, seed, ...) are accepted and carried into
%% run_started unchanged, because the lab resolves them for every runtime.
-module(scp_config).

-export([load_config/1, load_schedule/3]).

%% The parts of the config the SUB itself uses; defaults from workloads.md §1.
-define(DEFAULTS, [{pairs, 1024}, {supervisors, 32}, {delay_ms, 200},
                   {payload_bytes, 500}, {recovery, true}, {duration_s, 60},
                   {warmup_s, 5}, {injector, <<"node">>}]).

%% load_config(Path) -> {ok, Config :: map(), Raw :: json object} | {error, Msg}.
load_config(Path) ->
    case troupe_json:read_file(Path) of
        {ok, {_} = Raw} ->
            try
                C = maps:from_list([{K, value(K, troupe_json:get(K, Raw, D))} || {K, D} <- ?DEFAULTS]),
                #{pairs := P, supervisors := S} = C,
                S =< P orelse bad(supervisors, S, "1..pairs (" ++ integer_to_list(P) ++ ")"),
                P rem S =:= 0 orelse bad(supervisors, S, "a divisor of pairs (" ++ integer_to_list(P) ++ ")"),
                {ok, C#{pairs_per_sup => P div S}, Raw}
            catch
                throw:{bad, Msg} -> {error, Msg}
            end;
        {ok, _} -> {error, "config " ++ Path ++ ": expected a JSON object"};
        {error, _} = E -> E
    end.

value(K, V) when K =:= pairs; K =:= supervisors; K =:= duration_s ->
    int_at_least(K, V, 1);
value(K, V) when K =:= delay_ms; K =:= payload_bytes ->
    int_at_least(K, V, 0);
value(recovery, V) when is_boolean(V) -> V;
value(recovery, V) -> bad(recovery, V, "true or false");
value(warmup_s, V) when is_number(V), V >= 0 -> V;
value(warmup_s, V) -> bad(warmup_s, V, "a number >= 0");
%% Where the injector runs (scp_injector, scp_injector_node).
value(injector, <<"node">>) -> node;
value(injector, <<"in_process">>) -> in_process;
value(injector, V) -> bad(injector, V, "\"node\" or \"in_process\"").

int_at_least(_K, V, Min) when is_integer(V), V >= Min -> V;
int_at_least(K, V, Min) -> bad(K, V, "an integer >= " ++ integer_to_list(Min)).

bad(K, V, Allowed) ->
    throw({bad, lists:flatten(io_lib:format("config key ~s = ~s: must be ~s",
                                            [K, troupe_json:encode(V), Allowed]))}).

%% load_schedule(Path | false, Supervisors, PairsPerSup) ->
%%     {ok, [#{at_ms, id, kind, group, slot, restart}]} | {error, Msg}.
%% Actions are returned sorted by at_ms (stable, so equal offsets keep file order).
load_schedule(false, _, _) -> {ok, []};
load_schedule("", _, _) -> {ok, []};
load_schedule(Path, Sups, PPS) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            Lines = binary:split(Bin, [<<"\n">>, <<"\r\n">>], [global]),
            try
                Actions = parse_lines(Lines, 1, Sups, PPS, []),
                {ok, lists:keysort(1, Actions)}
            of
                {ok, Sorted} -> {ok, [A || {_, A} <- Sorted]}
            catch
                throw:{bad, Msg} -> {error, Path ++ ": " ++ Msg}
            end;
        {error, Why} ->
            {error, lists:flatten(io_lib:format("cannot read schedule ~ts: ~p", [Path, Why]))}
    end.

parse_lines([], _, _, _, Acc) -> lists:reverse(Acc);
parse_lines([L | Rest], N, Sups, PPS, Acc) ->
    case string:trim(L) of
        <<>> -> parse_lines(Rest, N + 1, Sups, PPS, Acc);
        T ->
            A = action(troupe_json:decode(T), N, Sups, PPS),
            parse_lines(Rest, N + 1, Sups, PPS, [{maps:get(at_ms, A), A} | Acc])
    end.

action({error, Why}, N, _, _) -> line_bad(N, "bad JSON: " ++ Why);
action({ok, {_} = O}, N, Sups, PPS) ->
    Get = fun(K) -> troupe_json:get(K, O) end,
    At = Get(at_ms),
    (is_integer(At) andalso At >= 0) orelse line_bad(N, "at_ms must be an integer >= 0"),
    Id = Get(id),
    (is_binary(Id) orelse is_integer(Id)) orelse line_bad(N, "id must be a string"),
    Get(kind) =:= <<"kill">> orelse
        line_bad(N, "kind " ++ binary_to_list(troupe_json:encode(Get(kind)))
                 ++ " is not supported by the SCP peer (only \"kill\")"),
    G = Get(group),
    (is_integer(G) andalso G >= 0 andalso G < Sups) orelse
        line_bad(N, "group must be an integer in 0.." ++ integer_to_list(Sups - 1)),
    S = Get(slot),
    (is_integer(S) andalso S >= 0 andalso S < PPS) orelse
        line_bad(N, "slot must be an integer in 0.." ++ integer_to_list(PPS - 1)),
    Restart = case Get(restart) of
                  undefined -> true;
                  B when is_boolean(B) -> B;
                  _ -> line_bad(N, "restart must be true or false")
              end,
    #{at_ms => At, id => Id, kind => kill, group => G, slot => S, restart => Restart};
action({ok, _}, N, _, _) -> line_bad(N, "expected a JSON object").

line_bad(N, Msg) ->
    throw({bad, lists:flatten(io_lib:format("line ~b: ~s", [N, Msg]))}).
