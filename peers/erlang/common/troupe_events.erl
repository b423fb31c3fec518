%% troupe_events: the event writer of the Erlang peers (events.md, "Transport").
%%
%% Rules this module keeps:
%%  1. emit/2 never blocks the caller: it stamps ts_us (CLOCK_REALTIME, us) at
%%     the call, bumps an atomic "in flight" counter and sends one message to
%%     the writer process; nothing else.
%%  2. The buffer is bounded: when `capacity` events are already in flight,
%%     emit/2 drops the event and counts it; the count is what run_finished
%%     reports as dropped_events.
%%  3. One dedicated writer process owns the file. It drains whatever is in its
%%     mailbox (up to a batch), encodes it and writes it with a single write on
%%     a raw (unbuffered) file descriptor, so every event reaches the OS within
%%     one batch; when idle it wakes once a second. Lines are JSON objects with
%%     the common fields first: ts_us, run, rt, node, ev.
%%  4. finish/0,2 is the only synchronous call: it waits until everything sent
%%     before it is on disk, closes the file and returns the drop count.
%%     finish/2 writes one last event (run_finished) after the drain, outside
%%     the bound, so that line is never dropped and carries the final count.
%%  5. TROUPE_EVENTS may be a file path or an amqp:// URL. For amqp:// the
%%     writer process owns the connection (troupe_amqp, in common/amqp/): each
%%     line is one message to the exchange troupe.events, routing key = the run
%%     id, published in order from this one process. start/5 fails with the
%%     broker's URL (password hidden) when it cannot connect. finish/2 returns
%%     only after the broker confirmed every line, run_finished included; a
%%     line refused, unroutable or unconfirmed in 30 s, or a lost connection,
%%     counts as a write error (the callers then fail the run).
%% tcp:// targets are refused at start with a clear error.
-module(troupe_events).

-export([start/4, start/5, emit/2, emit_at/3, finish/0, finish/2, dropped/0]).

-define(WRITER, troupe_events_writer).
-define(KEY, {?MODULE, state}).
-define(BATCH, 2000).
-define(IN_FLIGHT, 1).
-define(DROPPED, 2).

%% start(Path, RunId, Runtime, Node) -> ok | {error, Reason}.
start(Target, Run, Rt, Node) ->
    start(Target, Run, Rt, Node, 65536).

start("tcp://" ++ _ = T, _, _, _, _) ->
    {error, "unsupported TROUPE_EVENTS transport " ++ T ++ " (the Erlang peers take a file path or amqp://...)"};
start(Target, Run, Rt, Node, Capacity) ->
    Counters = atomics:new(2, [{signed, true}]),
    %% The prefix of every line is fixed for the run: encode it once.
    Prefix = iolist_to_binary([<<",\"run\":">>, troupe_json:encode(bin(Run)),
                               <<",\"rt\":">>, troupe_json:encode(bin(Rt)),
                               <<",\"node\":">>, troupe_json:encode(bin(Node)),
                               <<",\"ev\":">>]),
    Parent = self(),
    %% A raw file, like a passive socket, belongs to the process that opened
    %% it: the writer opens its sink.
    {Pid, Ref} = spawn_monitor(fun() ->
                                       case open_sink(Target, Run) of
                                           {ok, Sink} ->
                                               Parent ! {self(), opened},
                                               writer_init(Sink, Counters, Prefix);
                                           {error, Why} ->
                                               exit({open, Why})
                                       end
                               end),
    receive
        {Pid, opened} ->
            demonitor(Ref, [flush]),
            true = register(?WRITER, Pid),
            persistent_term:put(?KEY, {Pid, Counters, Capacity}),
            ok;
        {'DOWN', Ref, process, Pid, {open, Why}} ->
            {error, Why}
    after 15000 ->
            {error, "the event writer did not start"}
    end.

open_sink("amqp://" ++ _ = Url, Run) ->
    troupe_amqp:open(Url, Run);
open_sink(Path, _) ->
    case file:open(Path, [append, raw, binary]) of
        {ok, Fd} -> {ok, {file, Fd}};
        {error, Why} -> {error, lists:flatten(io_lib:format("cannot open events file ~ts: ~p", [Path, Why]))}
    end.

bin(B) when is_binary(B) -> B;
bin(L) when is_list(L) -> unicode:characters_to_binary(L).

%% emit(Ev :: atom(), Fields :: [{atom() | binary(), term()}]) -> ok.
emit(Ev, Fields) ->
    emit_at(os:system_time(microsecond), Ev, Fields).

%% emit_at(TsUs, Ev, Fields): as emit/2, with a timestamp taken earlier by the
%% caller (the injector stamps the instant of the kill, then reports it).
emit_at(Ts, Ev, Fields) ->
    {Pid, Counters, Capacity} = persistent_term:get(?KEY),
    case atomics:add_get(Counters, ?IN_FLIGHT, 1) of
        N when N > Capacity ->
            atomics:sub(Counters, ?IN_FLIGHT, 1),
            atomics:add(Counters, ?DROPPED, 1);
        _ ->
            Pid ! {event, Ts, Ev, Fields}
    end,
    ok.

dropped() ->
    {_, Counters, _} = persistent_term:get(?KEY),
    atomics:get(Counters, ?DROPPED).

%% finish() -> {ok, DroppedEvents, WriteErrors} | {error, Why}.
finish() -> finish(none, none).

%% finish(Ev, FieldsFun) writes event Ev last, with fields FieldsFun(Dropped)
%% computed once everything before it is written.
finish(Ev, FieldsFun) ->
    {Pid, Counters, _} = persistent_term:get(?KEY),
    Ref = monitor(process, Pid),
    Pid ! {finish, self(), Ref, Ev, FieldsFun},
    receive
        {Ref, WriteErrors} ->
            demonitor(Ref, [flush]),
            {ok, atomics:get(Counters, ?DROPPED), WriteErrors};
        {'DOWN', Ref, process, Pid, Why} ->
            {error, Why}
    after 60000 ->
            {error, timeout}
    end.

%%--------------------------------------------------------------------
%% The writer process
%%--------------------------------------------------------------------

writer_init(Sink, Counters, Prefix) ->
    %% A large mailbox must not be copied on every GC of the writer's heap.
    process_flag(message_queue_data, off_heap),
    writer_loop(Sink, Counters, Prefix, 0).

writer_loop(Sink, Counters, Prefix, Errors) ->
    receive
        {event, _, _, _} = E ->
            {Lines, N} = drain(Prefix, [line(E, Prefix)], 1),
            atomics:sub(Counters, ?IN_FLIGHT, N),
            {Sink1, Failed} = write(Sink, Lines),
            writer_loop(Sink1, Counters, Prefix, Errors + Failed);
        {finish, From, Ref, Ev, FieldsFun} ->
            %% Events emitted before finish was called by the same process are
            %% ahead of this message; events from others that already returned
            %% from emit/2 are in the mailbox too. Drain them all, then close.
            {Sink0, Errors0} = drain_all(Sink, Counters, Prefix, Errors),
            {Sink1, Errors1} = case Ev of
                                   none -> {Sink0, Errors0};
                                   _ ->
                                       Last = {event, os:system_time(microsecond), Ev,
                                               FieldsFun(atomics:get(Counters, ?DROPPED))},
                                       {S1, F1} = write(Sink0, [line(Last, Prefix)]),
                                       {S1, Errors0 + F1}
                               end,
            From ! {Ref, Errors1 + close(Sink1)}
    after 1000 ->
            {Sink1, Failed} = idle(Sink),
            writer_loop(Sink1, Counters, Prefix, Errors + Failed)
    end.

drain_all(Sink, Counters, Prefix, Errors) ->
    case drain(Prefix, [], 0) of
        {[], 0} -> {Sink, Errors};
        {Lines, N} ->
            atomics:sub(Counters, ?IN_FLIGHT, N),
            {Sink1, Failed} = write(Sink, Lines),
            drain_all(Sink1, Counters, Prefix, Errors + Failed)
    end.

drain(_Prefix, Acc, N) when N >= ?BATCH -> {lists:reverse(Acc), N};
drain(Prefix, Acc, N) ->
    receive
        {event, _, _, _} = E -> drain(Prefix, [line(E, Prefix) | Acc], N + 1)
    after 0 ->
            {lists:reverse(Acc), N}
    end.

%% write(Sink, Lines) -> {Sink, Errors}: one write(2) of the whole batch, or
%% one AMQP message per line (the broker's confirms are taken as they come).
write(Sink, []) -> {Sink, 0};
write({file, Fd} = Sink, Lines) ->
    case file:write(Fd, Lines) of
        ok -> {Sink, 0};
        {error, Why} ->
            io:format(standard_error, "troupe_events: write failed: ~p~n", [Why]),
            {Sink, 1}
    end;
write(Amqp, Lines) ->
    WasDead = troupe_amqp:error_text(Amqp) =/= none,
    case troupe_amqp:publish_iodata(Amqp, Lines) of
        {ok, Amqp1} -> {Amqp1, 0};
        {error, Why, Amqp1} ->
            %% Said once: after a lost connection every later batch fails too.
            WasDead orelse amqp_failed(Amqp1, Why),
            {Amqp1, 1}
    end.

%% idle(Sink) -> {Sink, Errors}: takes the broker's confirms while no line
%% comes, so a broker that went away is noticed (and counted) once.
idle({file, _} = Sink) -> {Sink, 0};
idle(Amqp) ->
    WasDead = troupe_amqp:error_text(Amqp) =/= none,
    Amqp1 = troupe_amqp:poll(Amqp),
    case troupe_amqp:error_text(Amqp1) of
        Why when Why =/= none, not WasDead -> amqp_failed(Amqp1, Why), {Amqp1, 1};
        _ -> {Amqp1, 0}
    end.

%% close(Sink) -> Errors: for amqp, every line confirmed first.
close({file, Fd}) ->
    _ = file:close(Fd),
    0;
close(Amqp) ->
    WasDead = troupe_amqp:error_text(Amqp) =/= none,
    Failed = case troupe_amqp:confirm(Amqp, 30000) of
                 {ok, _} -> 0;
                 {error, _, _} when WasDead -> 0;  % already counted and said
                 {error, Why, Amqp1} -> amqp_failed(Amqp1, Why), 1
             end,
    troupe_amqp:close(Amqp),
    Failed.

amqp_failed(Amqp, Why) ->
    io:format(standard_error, "troupe_events: amqp publisher to ~ts: ~ts~n", [troupe_amqp:url(Amqp), Why]),
    true.

line({event, Ts, Ev, Fields}, Prefix) ->
    [<<"{\"ts_us\":">>, integer_to_binary(Ts), Prefix, troupe_json:encode(Ev),
     troupe_json:encode_fields(Fields), <<"}\n">>].
