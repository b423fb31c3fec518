%% troupe_amqp: a minimal AMQP 0-9-1 publisher over gen_tcp, for the `amqp://`
%% event transport of the Erlang and Elixir peers (events.md, "Transport").
%%
%% Written here from the public AMQP 0-9-1 specification (frame layout,
%% the connection, channel, exchange, confirm and basic classes), because no
%% Erlang AMQP client library is packaged for Debian apart from the copy
%% bundled inside the broker's own package (rabbitmq-server's plugins), and
%% hex.pm is not used by the peers. It implements only what a publisher of
%% event lines needs:
%%   connection.start/start-ok (PLAIN), tune/tune-ok, open/open-ok;
%%   channel.open on channel 1; exchange.declare; confirm.select;
%%   basic.publish (mandatory) with its content header and body frames;
%%   basic.ack / basic.nack / basic.return from the broker; channel.close and
%%   connection.close in both directions.
%%
%% Rules this module keeps:
%%  1. Lines go to the topic exchange <<"troupe.events">>, declared not
%%     durable (as the lab's collector declares it), one message per line
%%     without its newline, routing key = the run id, with `mandatory` set and
%%     publisher confirms on. Heartbeats are off (tune-ok heartbeat 0).
%%  2. open/2 is bounded by ?CONNECT_TIMEOUT (TCP connect and every step of
%%     the handshake together); every failure is {error, Text} where Text
%%     names the URL with its password replaced by *** (redact/1).
%%  3. The state is a plain value owned by the calling process (the socket is
%%     passive and belongs to it); publish/2 sends the lines in the order
%%     given, on one channel, so the broker keeps that order.
%%  4. At most ?MAX_UNCONFIRMED lines are awaiting a confirm; publish/2 waits
%%     for confirms before going past that (this blocks only the caller, the
%%     event writer process, never an emitting process).
%%  5. confirm/2 returns once every line published so far is confirmed; a
%%     line the broker refused (nack) or could not route (return: no queue is
%%     bound to the run id, i.e. no collector) is counted in `failed` and
%%     makes confirm/2 an error, as does a confirm not arriving in time.
%%  6. A broker that closes the channel or the connection makes the state
%%     `dead` with the broker's reason; publish/2 and confirm/2 then fail at
%%     once (never silently succeed).
-module(troupe_amqp).

-export([open/2, open/3, publish/2, publish_iodata/2, poll/1, confirm/2, close/1,
         redact/1, parse_url/1, published/1, failed/1, error_text/1, url/1]).

-define(EXCHANGE, <<"troupe.events">>).
-define(CONNECT_TIMEOUT, 8000).
-define(MAX_UNCONFIRMED, 8192).
-define(FRAME_END, 16#CE).
-define(CH, 1).

-record(amqp, {
          sock,
          url = "" :: string(),          % redacted, for messages
          key = <<>> :: binary(),        % routing key (the run id)
          frame_max = 131072 :: pos_integer(),
          buf = <<>> :: binary(),        % received bytes not yet a whole frame
          next_tag = 1 :: pos_integer(), % delivery tag of the next publish
          pending = gb_sets:empty(),     % tags awaiting ack/nack
          published = 0 :: non_neg_integer(),
          failed = 0 :: non_neg_integer(),   % nacked + returned lines
          skip = none,                   % none | header | {body, Bytes}: a basic.return's content
          dead = none                    % none | Reason (string)
         }).

%%--------------------------------------------------------------------
%% URLs
%%--------------------------------------------------------------------

%% redact(Url) -> Url with the password replaced by ***.
redact(Url) ->
    case string:split(Url, "://") of
        [Scheme, Rest] ->
            {Auth, Tail} = split_auth(Rest),
            case Auth of
                none -> Url;
                _ ->
                    case string:split(Auth, ":") of
                        [User, _Pass] -> Scheme ++ "://" ++ User ++ ":***@" ++ Tail;
                        [_] -> Url
                    end
            end;
        _ -> Url
    end.

%% "user:pass@host:port/vhost" -> {"user:pass", "host:port/vhost"} | {none, Rest}
split_auth(Rest) ->
    HostPart = lists:takewhile(fun(C) -> C =/= $/ end, Rest),
    case string:rchr(HostPart, $@) of
        0 -> {none, Rest};
        At -> {lists:sublist(Rest, At - 1), lists:nthtail(At, Rest)}
    end.

%% parse_url(Url) -> {ok, #{host, port, user, pass, vhost}} | {error, Text}.
%% amqp://[USER[:PASS]@]HOST[:PORT][/VHOST]; defaults guest, guest, 5672, "/".
parse_url("amqp://" ++ Rest0) ->
    Rest = lists:takewhile(fun(C) -> C =/= $? end, Rest0),
    {Auth, HostPath} = split_auth(Rest),
    {User, Pass} = case Auth of
                       none -> {"guest", "guest"};
                       _ -> case string:split(Auth, ":") of
                                [U, P] -> {U, P};
                                [U] -> {U, "guest"}
                            end
                   end,
    {HostPort, VPath} = case string:split(HostPath, "/") of
                            [HP, V] -> {HP, V};
                            [HP] -> {HP, ""}
                        end,
    HostPortResult = case HostPort of
                         "[" ++ R6 ->
                             case string:split(R6, "]") of
                                 [H6, ""] -> {ok, H6, "5672"};
                                 [H6, ":" ++ P6] -> {ok, H6, P6};
                                 _ -> error
                             end;
                         _ ->
                             case string:split(HostPort, ":") of
                                 [H, PortPart] -> {ok, H, PortPart};
                                 [H] -> {ok, H, "5672"}
                             end
                     end,
    case HostPortResult of
        {ok, Host, PortText} when Host =/= "" ->
            case {catch list_to_integer(PortText), pct(User), pct(Pass), pct(VPath)} of
                {Port, {ok, U1}, {ok, P1}, {ok, V1}} when is_integer(Port), Port > 0, Port < 65536 ->
                    VHost = case V1 of "" -> "/"; _ -> V1 end,
                    {ok, #{host => Host, port => Port, user => U1, pass => P1, vhost => VHost}};
                _ ->
                    {error, "bad amqp URL " ++ redact("amqp://" ++ Rest0)
                     ++ " (expected amqp://USER:PASS@HOST:PORT/VHOST)"}
            end;
        _ ->
            {error, "bad amqp URL " ++ redact("amqp://" ++ Rest0)
             ++ " (expected amqp://USER:PASS@HOST:PORT/VHOST)"}
    end;
parse_url(Url) ->
    {error, "not an amqp:// URL: " ++ redact(Url) ++ " (amqps:// is not supported)"}.

%% Percent-decoding of one URL part.
pct(S) -> pct(S, []).
pct([], Acc) -> {ok, lists:reverse(Acc)};
pct([$%, A, B | T], Acc) ->
    case catch list_to_integer([A, B], 16) of
        N when is_integer(N) -> pct(T, [N | Acc]);
        _ -> error
    end;
pct([$% | _], _) -> error;
pct([C | T], Acc) -> pct(T, [C | Acc]).

%%--------------------------------------------------------------------
%% Opening (rule 2)
%%--------------------------------------------------------------------

open(Url, RunId) -> open(Url, RunId, ?CONNECT_TIMEOUT).

%% open(Url, RunId, TimeoutMs) -> {ok, State} | {error, Text}.
open(Url, RunId, Timeout) ->
    Key = unicode:characters_to_binary(RunId),
    Red = redact(Url),
    Fail = fun(What) ->
                   Hint = case lists:prefix("TCP connect", lists:flatten(What)) of
                              true -> "start one with `bash scripts/rabbitmq.sh start DIR` (install it "
                                      "with `bash scripts/install-rabbitmq.sh`) and pass the URL it prints";
                              false -> "check the user, password and vhost of the URL"
                          end,
                   {error, lists:flatten(io_lib:format("cannot reach the RabbitMQ broker at ~ts: ~ts; ~ts",
                                                       [Red, What, Hint]))}
           end,
    case parse_url(Url) of
        {error, _} = E -> E;
        {ok, _} when byte_size(Key) > 255 ->
            {error, "run id " ++ RunId ++ " is longer than 255 bytes, the most an AMQP routing key holds"};
        {ok, #{host := Host, port := Port, user := User, pass := Pass, vhost := VHost}} ->
            Deadline = erlang:monotonic_time(millisecond) + Timeout,
            case gen_tcp:connect(Host, Port, [binary, {active, false}, {packet, raw},
                                              {nodelay, true}], Timeout) of
                {ok, Sock} ->
                    S0 = #amqp{sock = Sock, url = Red, key = Key},
                    try handshake(S0, User, Pass, VHost, Deadline) of
                        {ok, S} -> {ok, S};
                        {error, What} -> gen_tcp:close(Sock), Fail(What)
                    catch
                        throw:{amqp, What} -> gen_tcp:close(Sock), Fail(What);
                        error:{badmatch, Got} ->
                            gen_tcp:close(Sock),
                            Fail(io_lib:format("unexpected answer during the AMQP handshake: ~P", [Got, 8]))
                    end;
                {error, Why} ->
                    Fail(io_lib:format("TCP connect to ~ts:~b: ~ts", [Host, Port, inet:format_error(Why)]))
            end
    end.

handshake(S0, User, Pass, VHost, Deadline) ->
    ok = send(S0, <<"AMQP", 0, 0, 9, 1>>),
    {S1, {10, 10, Start}} = expect_method(S0, 0, Deadline),
    <<_Major, _Minor, Rest0/binary>> = Start,
    {_ServerProps, Rest1} = table(Rest0),
    {Mechanisms, _} = longstr(Rest1),
    case lists:member(<<"PLAIN">>, binary:split(Mechanisms, <<" ">>, [global])) of
        false -> throw({amqp, io_lib:format("the broker offers no PLAIN login (only ~ts)", [Mechanisms])});
        true -> ok
    end,
    Caps = [{<<"publisher_confirms">>, true}, {<<"basic.nack">>, true},
            {<<"authentication_failure_close">>, true}],
    Props = [{<<"product">>, <<"troupe erlang/elixir peer">>},
             {<<"platform">>, list_to_binary("Erlang/OTP " ++ erlang:system_info(otp_release))},
             {<<"capabilities">>, {table, Caps}}],
    Response = iolist_to_binary([0, unicode:characters_to_binary(User), 0,
                                 unicode:characters_to_binary(Pass)]),
    ok = send_method(S1, 0, 10, 11, [enc_table(Props), shortstr(<<"PLAIN">>), longstr_enc(Response),
                                     shortstr(<<"en_US">>)]),
    {S2, {10, 30, <<ChannelMax:16, FrameMax:32, _Heartbeat:16>>}} = expect_method(S1, 0, Deadline),
    Fmax = case FrameMax of 0 -> 131072; F -> min(F, 131072) end,
    Cmax = case ChannelMax of 0 -> 2047; C -> C end,
    ok = send_method(S2, 0, 10, 31, <<(min(Cmax, 1)):16, Fmax:32, 0:16>>),
    ok = send_method(S2, 0, 10, 40, [shortstr(unicode:characters_to_binary(VHost)), shortstr(<<>>), 0]),
    {S3, {10, 41, _}} = expect_method(S2#amqp{frame_max = Fmax}, 0, Deadline),
    ok = send_method(S3, ?CH, 20, 10, shortstr(<<>>)),
    {S4, {20, 11, _}} = expect_method(S3, ?CH, Deadline),
    %% exchange.declare: ticket, name, type, bits (passive, durable, auto-delete,
    %% internal, no-wait) all 0, no arguments.
    ok = send_method(S4, ?CH, 40, 10, [<<0:16>>, shortstr(?EXCHANGE), shortstr(<<"topic">>), 0,
                                       enc_table([])]),
    {S5, {40, 11, _}} = expect_method(S4, ?CH, Deadline),
    ok = send_method(S5, ?CH, 85, 10, <<0>>),
    {S6, {85, 11, _}} = expect_method(S5, ?CH, Deadline),
    {ok, S6}.

%% The next method frame on Channel, before Deadline; a close from the broker
%% or anything unexpected throws {amqp, Reason}.
expect_method(S, Channel, Deadline) ->
    case next_frame(S, Deadline) of
        {S1, {1, Channel, <<10:16, 50:16, Code:16, Rest/binary>>}} ->
            {Text, _} = shortstr_dec(Rest),
            _ = send_method(S1, 0, 10, 51, <<>>),
            throw({amqp, io_lib:format("the broker closed the connection: ~b ~ts", [Code, Text])});
        {S1, {1, Channel, <<20:16, 40:16, Code:16, Rest/binary>>}} ->
            {Text, _} = shortstr_dec(Rest),
            throw({amqp, closed_text(S1, "channel", Code, Text)});
        {S1, {1, Channel, <<Class:16, Method:16, Args/binary>>}} ->
            {S1, {Class, Method, Args}};
        {S1, {8, _, _}} -> expect_method(S1, Channel, Deadline);
        {_, {Type, Ch, _}} ->
            throw({amqp, io_lib:format("unexpected frame (type ~b, channel ~b) during the handshake",
                                       [Type, Ch])});
        {_, timeout} ->
            throw({amqp, "no answer in time during the AMQP handshake"});
        {_, {closed, Why}} ->
            throw({amqp, io_lib:format("the connection closed during the AMQP handshake (~p); "
                                       "wrong user, password or vhost?", [Why])})
    end.

closed_text(_S, What, Code, Text) ->
    lists:flatten(io_lib:format("the broker closed the ~s: ~b ~ts", [What, Code, Text])).

%%--------------------------------------------------------------------
%% Publishing (rules 1, 3, 4)
%%--------------------------------------------------------------------

%% publish_iodata(State, Iodata): publishes every newline-ended line of Iodata.
publish_iodata(S, Data) ->
    publish(S, binary:split(iolist_to_binary(Data), <<"\n">>, [global, trim_all])).

%% publish(State, [Line :: binary()]) -> {ok, State} | {error, Text, State}.
publish(#amqp{dead = Why} = S, _) when Why =/= none -> {error, Why, S};
publish(S, []) -> {ok, S};
publish(S, Lines) ->
    Room = ?MAX_UNCONFIRMED - gb_sets:size(S#amqp.pending),
    {Now, Later} = case length(Lines) =< Room of
                       true -> {Lines, []};
                       false -> lists:split(max(Room, 0), Lines)
                   end,
    S1 = send_lines(S, Now),
    case {S1#amqp.dead, Later} of
        {none, []} -> poll_ok(S1);
        {none, _} ->
            %% Rule 4: wait for room before publishing the rest.
            case wait_confirms(S1, ?MAX_UNCONFIRMED div 2, 30000) of
                {ok, S2} -> publish(S2, Later);
                {error, _, _} = E -> E
            end;
        {Why, _} -> {error, Why, S1}
    end.

poll_ok(S) ->
    S1 = poll(S),
    case S1#amqp.dead of
        none -> {ok, S1};
        Why -> {error, Why, S1}
    end.

send_lines(S, []) -> S;
send_lines(#amqp{next_tag = Tag0, key = Key, frame_max = Fmax} = S, Lines) ->
    Publish = frame(1, ?CH, [<<60:16, 40:16, 0:16>>, shortstr(?EXCHANGE), shortstr(Key), 1]),
    {Frames, Tag} =
        lists:foldl(fun(Line, {Acc, T}) ->
                            Size = byte_size(Line),
                            Header = frame(2, ?CH, <<60:16, 0:16, Size:64, 0:16>>),
                            {[Acc, Publish, Header, body_frames(Line, Fmax - 8)], T + 1}
                    end, {[], Tag0}, Lines),
    Pending = lists:foldl(fun gb_sets:add/2, S#amqp.pending, lists:seq(Tag0, Tag - 1)),
    case gen_tcp:send(S#amqp.sock, Frames) of
        ok ->
            S#amqp{next_tag = Tag, pending = Pending, published = S#amqp.published + length(Lines)};
        {error, Why} ->
            S#amqp{dead = lists:flatten(io_lib:format("sending to the broker failed: ~p", [Why]))}
    end.

body_frames(<<>>, _) -> [];
body_frames(Bin, Max) when byte_size(Bin) =< Max -> frame(3, ?CH, Bin);
body_frames(Bin, Max) ->
    <<Chunk:Max/binary, Rest/binary>> = Bin,
    [frame(3, ?CH, Chunk) | body_frames(Rest, Max)].

%%--------------------------------------------------------------------
%% Confirms (rules 5, 6)
%%--------------------------------------------------------------------

%% poll(State): takes the confirms already received, without waiting.
poll(#amqp{dead = Why} = S) when Why =/= none -> S;
poll(S) ->
    case next_frame(S, now_ms()) of
        {S1, timeout} -> S1;
        {S1, Frame} -> poll(handle(S1, Frame))
    end.

%% confirm(State, TimeoutMs) -> {ok, State} | {error, Text, State}: every line
%% published so far confirmed, none refused or returned (rule 5).
confirm(S, Timeout) ->
    case wait_confirms(S, 0, Timeout) of
        {ok, #amqp{failed = 0} = S1} -> {ok, S1};
        {ok, S1} -> {error, failed_text(S1), S1};
        Error -> Error
    end.

failed_text(#amqp{failed = N, published = P, key = Key}) ->
    lists:flatten(io_lib:format("of ~b lines the broker refused or could not route ~b (is a collector "
                                "bound to run id ~ts? start it before the workload)", [P, N, Key])).

%% Waits until at most Left tags are pending.
wait_confirms(S, Left, Timeout) ->
    wait_until(S, Left, now_ms() + Timeout).

wait_until(#amqp{dead = Why} = S, _, _) when Why =/= none -> {error, Why, S};
wait_until(S, Left, Deadline) ->
    case gb_sets:size(S#amqp.pending) =< Left of
        true -> {ok, S};
        false ->
            case next_frame(S, Deadline) of
                {S1, timeout} ->
                    N = gb_sets:size(S1#amqp.pending),
                    {error, lists:flatten(io_lib:format("~b lines not confirmed by the broker in time", [N])), S1};
                {S1, Frame} -> wait_until(handle(S1, Frame), Left, Deadline)
            end
    end.

%% One frame from the broker, after the handshake.
handle(S, {closed, Why}) ->
    S#amqp{dead = lists:flatten(io_lib:format("the connection to the broker was lost (~p)", [Why]))};
handle(S, {8, _, _}) -> S;                                   % heartbeat
handle(#amqp{skip = header} = S, {2, ?CH, <<60:16, _:16, Size:64, _/binary>>}) ->
    %% The content header of a returned message; its body frames follow.
    S#amqp{skip = case Size of 0 -> none; _ -> {body, Size} end};
handle(#amqp{skip = {body, Left}} = S, {3, ?CH, Payload}) ->
    S#amqp{skip = case Left - byte_size(Payload) of N when N > 0 -> {body, N}; _ -> none end};
handle(S, {1, ?CH, <<60:16, 80:16, Tag:64, Multiple:8>>}) ->     % basic.ack
    S#amqp{pending = settle(S#amqp.pending, Tag, Multiple band 1)};
handle(S, {1, ?CH, <<60:16, 120:16, Tag:64, Bits:8>>}) ->         % basic.nack
    Before = gb_sets:size(S#amqp.pending),
    Pending = settle(S#amqp.pending, Tag, Bits band 1),
    S#amqp{pending = Pending, failed = S#amqp.failed + Before - gb_sets:size(Pending)};
handle(S, {1, ?CH, <<60:16, 50:16, _/binary>>}) ->                % basic.return
    %% Its header and body frames follow; the ack for the line comes after.
    S#amqp{failed = S#amqp.failed + 1, skip = header};
handle(S, {1, ?CH, <<20:16, 40:16, Code:16, Rest/binary>>}) ->    % channel.close
    {Text, _} = shortstr_dec(Rest),
    _ = send_method(S, ?CH, 20, 41, <<>>),
    S#amqp{dead = closed_text(S, "channel", Code, Text)};
handle(S, {1, 0, <<10:16, 50:16, Code:16, Rest/binary>>}) ->      % connection.close
    {Text, _} = shortstr_dec(Rest),
    _ = send_method(S, 0, 10, 51, <<>>),
    S#amqp{dead = closed_text(S, "connection", Code, Text)};
handle(S, {1, 0, <<10:16, M:16, _/binary>>}) when M =:= 60; M =:= 61 ->  % (un)blocked
    S;
handle(S, {Type, Ch, Payload}) ->
    S#amqp{dead = lists:flatten(io_lib:format("unexpected frame from the broker (type ~b, channel ~b, ~p)",
                                              [Type, Ch, binary:part(Payload, 0, min(8, byte_size(Payload)))]))}.

settle(Pending, Tag, 0) -> gb_sets:del_element(Tag, Pending);
settle(Pending, Tag, _) -> settle_upto(Pending, Tag).

settle_upto(Pending, Tag) ->
    case gb_sets:is_empty(Pending) of
        true -> Pending;
        false ->
            case gb_sets:take_smallest(Pending) of
                {T, Rest} when T =< Tag -> settle_upto(Rest, Tag);
                _ -> Pending
            end
    end.

%%--------------------------------------------------------------------
%% Closing
%%--------------------------------------------------------------------

%% close(State) -> ok: connection.close, close-ok awaited at most 2 s.
close(#amqp{sock = Sock, dead = none} = S) ->
    _ = send_method(S, 0, 10, 50, [<<200:16>>, shortstr(<<"bye">>), <<0:16, 0:16>>]),
    _ = await_close_ok(S, now_ms() + 2000),
    gen_tcp:close(Sock);
close(#amqp{sock = Sock}) ->
    gen_tcp:close(Sock).

await_close_ok(S, Deadline) ->
    case next_frame(S, Deadline) of
        {_, {1, 0, <<10:16, 51:16, _/binary>>}} -> ok;
        {_, timeout} -> timeout;
        {_, {closed, _}} -> ok;
        {S1, _} -> await_close_ok(S1, Deadline)
    end.

published(#amqp{published = P}) -> P.
failed(#amqp{failed = F}) -> F.
error_text(#amqp{dead = D}) -> D.
url(#amqp{url = U}) -> U.

%%--------------------------------------------------------------------
%% Frames
%%--------------------------------------------------------------------

now_ms() -> erlang:monotonic_time(millisecond).

%% next_frame(State, Deadline) -> {State, {Type, Channel, Payload}} |
%%                                {State, timeout} | {State, {closed, Why}}.
next_frame(#amqp{buf = Buf} = S, Deadline) ->
    case Buf of
        <<Type, Ch:16, Size:32, Payload:Size/binary, End, Rest/binary>> ->
            case End of
                ?FRAME_END -> {S#amqp{buf = Rest}, {Type, Ch, Payload}};
                _ -> {S#amqp{buf = <<>>}, {closed, bad_frame_end}}
            end;
        _ ->
            Wait = max(0, Deadline - now_ms()),
            case gen_tcp:recv(S#amqp.sock, 0, Wait) of
                {ok, More} -> next_frame(S#amqp{buf = <<Buf/binary, More/binary>>}, Deadline);
                {error, timeout} -> {S, timeout};
                {error, Why} -> {S, {closed, Why}}
            end
    end.

frame(Type, Ch, Payload) ->
    P = iolist_to_binary(Payload),
    [<<Type, Ch:16, (byte_size(P)):32>>, P, ?FRAME_END].

send(#amqp{sock = Sock}, Data) -> gen_tcp:send(Sock, Data).

send_method(S, Ch, Class, Method, Args) ->
    send(S, frame(1, Ch, [<<Class:16, Method:16>>, Args])).

shortstr(B) when byte_size(B) < 256 -> [byte_size(B), B].
longstr_enc(B) -> [<<(byte_size(B)):32>>, B].

shortstr_dec(<<N, S:N/binary, Rest/binary>>) -> {S, Rest};
shortstr_dec(_) -> {<<>>, <<>>}.

longstr(<<N:32, S:N/binary, Rest/binary>>) -> {S, Rest}.

%% A field table we only skip over (the server's properties).
table(<<N:32, T:N/binary, Rest/binary>>) -> {T, Rest}.

enc_table(Pairs) ->
    Body = iolist_to_binary([[shortstr(K), enc_value(V)] || {K, V} <- Pairs]),
    [<<(byte_size(Body)):32>>, Body].

enc_value(true) -> <<$t, 1>>;
enc_value(false) -> <<$t, 0>>;
enc_value({table, Pairs}) -> [$F, enc_table(Pairs)];
enc_value(B) when is_binary(B) -> [$S, longstr_enc(B)].
