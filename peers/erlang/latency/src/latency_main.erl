%% latency_main: entry point of the Erlang latency peer (`peers/erlang/latency/run`),
%% node A.
%%
%% Reads the lab's environment (TROUPE_CONFIG, TROUPE_EVENTS, TROUPE_RUN_ID,
%% TROUPE_EXE), checks the config before anything starts, then, as the Troupe
%% program does (docs/latency.md):
%%  1. starts the lab's relay (`$TROUPE_EXE lab exec latency-relay`, a port
%%     program: it dies with this VM) and node B behind it (latency_far);
%%  2. spawns one partner per pair on B and one sender per pair here; each
%%     sender sends one unrecorded warm-up message (the full payload) and waits for
%%     its ack;
%%  3. starts all senders together; a sender sends its share of `messages` in
%%     turn: T0, Partner ! {msg, self(), Seq, Payload}, wait for the ack, record
%%     the microseconds since T0. The window runs from the start to the last ack;
%%  4. after the window: msg {pair, seq, latency_us} per message, window
%%     {elapsed_us, messages, bytes}, relay {...} (the relay's counts), then
%%     run_finished {dropped_events, errors}.
%% Exit codes: 0 done; 2 bad input (one stderr line naming the key; nothing
%% started); 1 failure during the run (run_finished still written).
-module(latency_main).

-export([main/0]).

main() ->
    try run() of
        ok -> halt(0)
    catch
        throw:{input, Msg} ->
            io:format(standard_error, "latency: ~ts~n", [Msg]),
            halt(2);
        throw:{failed, Msg} ->
            io:format(standard_error, "latency: run failed: ~ts~n", [Msg]),
            give_up(),
            halt(1);
        C:E:St ->
            io:format(standard_error, "latency: crashed: ~p:~p~n~p~n", [C, E, St]),
            give_up(),
            halt(1)
    end.

give_up() ->
    catch latency_far:stop(),
    case whereis(troupe_events_writer) of
        undefined -> ok;
        _ -> catch troupe_events:finish(run_finished, fun(D) -> [{dropped_events, D}, {errors, 1}] end)
    end.

env(Name) ->
    case os:getenv(Name) of
        false -> throw({input, Name ++ " is not set (troupe lab run sets it; see docs/latency.md)"});
        "" -> throw({input, Name ++ " is empty"});
        V -> V
    end.

run() ->
    ConfigPath = env("TROUPE_CONFIG"),
    {Config, Raw} = case latency_config:load(ConfigPath) of
                        {ok, C, R} -> {C, R};
                        {error, M1} -> throw({input, M1})
                    end,
    EventsPath = env("TROUPE_EVENTS"),
    Exe = env("TROUPE_EXE"),
    filelib:is_regular(Exe) orelse throw({input, "TROUPE_EXE = " ++ Exe ++ " is not a file (the troupe binary)"}),
    RunId = os:getenv("TROUPE_RUN_ID", "local"),
    #{pairs := Pairs, payload_bytes := Payload, messages := Messages, rtt_ms := Rtt} = Config,
    case troupe_events:start(EventsPath, RunId, "erlang", "a") of
        ok -> ok;
        {error, M2} -> throw({input, M2})
    end,
    Version = iolist_to_binary(["OTP ", erlang:system_info(otp_release),
                                " (erts ", erlang:system_info(version), ")"]),
    troupe_events:emit(run_started, [{workload, <<"latency">>}, {config, Raw}, {version, Version}]),
    is_alive() orelse throw({failed, "node A is not distributed: start it with peers/erlang/latency/run"}),
    Relay = open_port({spawn_executable, Exe},
                      [{args, ["lab", "exec", "latency-relay"]}, {line, 4096}, use_stdio, exit_status]),
    Cmd = fun(Line) -> relay_cmd(Relay, Line) end,
    Far = latency_far:start(Cmd),
    io:format(standard_error, "latency: ~b pairs x ~b bytes, ~b messages, rtt ~b ms, ~s, ~b schedulers~n",
              [Pairs, Payload, Messages, Rtt, Version, erlang:system_info(schedulers_online)]),
    Bin = binary:copy(<<16#a5>>, Payload),
    Limit = 60000 + (Pairs * Payload) div 5000 + Rtt * 20,
    process_flag(trap_exit, true),
    Self = self(),
    Senders = [begin
                   Partner = spawn(Far, latency_far, partner, []),
                   Share = Messages div Pairs + (case I < Messages rem Pairs of true -> 1; false -> 0 end),
                   spawn_link(fun() -> sender(Self, I, Partner, Share, Bin, Limit) end)
               end || I <- lists:seq(0, Pairs - 1)],
    [receive
         {ready, S} -> ok;
         {'EXIT', S, Why} -> throw({failed, io_lib:format("pair sender failed in the warm-up: ~p", [Why])})
     after Limit -> throw({failed, "a warm-up message got no ack"})
     end || S <- Senders],
    T0 = erlang:monotonic_time(microsecond),
    [S ! go || S <- Senders],
    Results = [receive
                   {done, S, Rs} -> Rs;
                   {'EXIT', S, Why} when Why =/= normal ->
                       throw({failed, io_lib:format("a pair sender failed: ~p", [Why])})
               after Limit * 4 -> throw({failed, "a sender did not finish"})
               end || S <- Senders],
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    Rows = lists:append(Results),
    [troupe_events:emit(msg, [{pair, P}, {seq, Q}, {latency_us, L}]) || {P, Q, L} <- Rows],
    troupe_events:emit(window, [{elapsed_us, Elapsed}, {messages, length(Rows)},
                                {bytes, length(Rows) * Payload}]),
    case Cmd("stats") of
        "stats " ++ Json ->
            case troupe_json:decode(list_to_binary(Json)) of
                {ok, {Fields}} when is_list(Fields) -> troupe_events:emit(relay, Fields);
                _ -> io:format(standard_error, "latency: relay stats not JSON: ~s~n", [Json])
            end;
        Other -> io:format(standard_error, "latency: no relay stats: ~s~n", [Other])
    end,
    latency_far:stop(),
    catch port_close(Relay),
    case troupe_events:finish(run_finished, fun(D) -> [{dropped_events, D}, {errors, 0}] end) of
        {ok, _Dropped, 0} -> ok;
        {ok, _, WriteErrors} ->
            io:format(standard_error, "latency: ~b event writes failed~n", [WriteErrors]),
            halt(1);
        {error, Why} ->
            io:format(standard_error, "latency: event writer: ~p~n", [Why]),
            halt(1)
    end.

%% One relay command, one answer line (crate::relay rule 6).
relay_cmd(Port, Line) ->
    true = port_command(Port, [Line, $\n]),
    receive
        {Port, {data, {eol, "error" ++ _ = E}}} -> throw({failed, "relay: " ++ E});
        {Port, {data, {eol, Answer}}} -> Answer;
        {Port, {exit_status, S}} -> throw({failed, "the relay exited with status " ++ integer_to_list(S)})
    after 60000 -> throw({failed, "the relay did not answer " ++ Line})
    end.

sender(Parent, Pair, Partner, N, Bin, Limit) ->
    Partner ! {msg, self(), -1, Bin},
    receive {ack, Partner, -1} -> ok after Limit -> exit(no_warmup_ack) end,
    Parent ! {ready, self()},
    receive go -> ok end,
    Rows = [one(Pair, Partner, Seq, Bin, Limit) || Seq <- lists:seq(0, N - 1)],
    Parent ! {done, self(), Rows}.

one(Pair, Partner, Seq, Bin, Limit) ->
    T0 = erlang:monotonic_time(microsecond),
    Partner ! {msg, self(), Seq, Bin},
    receive
        {ack, Partner, Seq} -> {Pair, Seq, erlang:monotonic_time(microsecond) - T0}
    after Limit -> exit({no_ack, Pair, Seq})
    end.
