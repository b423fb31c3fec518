%% troupe_amqp_tests: EUnit checks of the AMQP publisher's parts that need no
%% broker: URL parsing with its defaults and percent-decoding, the password
%% hidden in every message, and a refused connection reported with the URL.
%% The publishing itself is checked against a private broker by
%% peers/lib/amqp-smoke.sh (which runs these tests too).
-module(troupe_amqp_tests).
-include_lib("eunit/include/eunit.hrl").

parse_defaults_and_decoding_test() ->
    ?assertEqual({ok, #{host => "127.0.0.1", port => 5672, user => "guest", pass => "guest",
                        vhost => "/"}},
                 troupe_amqp:parse_url("amqp://127.0.0.1")),
    ?assertEqual({ok, #{host => "h", port => 41000, user => "u", pass => "p@s", vhost => "/"}},
                 troupe_amqp:parse_url("amqp://u:p%40s@h:41000/%2f")),
    ?assertEqual({ok, #{host => "::1", port => 5673, user => "guest", pass => "guest",
                        vhost => "lab"}},
                 troupe_amqp:parse_url("amqp://[::1]:5673/lab")).

bad_urls_name_the_url_without_password_test() ->
    {error, E1} = troupe_amqp:parse_url("amqp://u:secret@h:notaport/%2f"),
    ?assertNotEqual(nomatch, string:find(E1, "amqp://u:***@h:notaport/%2f")),
    ?assertEqual(nomatch, string:find(E1, "secret")),
    {error, E2} = troupe_amqp:parse_url("amqps://u:secret@h/"),
    ?assertEqual(nomatch, string:find(E2, "secret")).

redact_test() ->
    ?assertEqual("amqp://guest:***@127.0.0.1:5672/%2f",
                 troupe_amqp:redact("amqp://guest:guest@127.0.0.1:5672/%2f")),
    ?assertEqual("amqp://127.0.0.1/%2f", troupe_amqp:redact("amqp://127.0.0.1/%2f")),
    ?assertEqual("/tmp/events.jsonl", troupe_amqp:redact("/tmp/events.jsonl")).

refused_connection_names_the_url_test() ->
    %% A port nobody listens on: bind one, note it, close it.
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    Url = "amqp://guest:hidden@127.0.0.1:" ++ integer_to_list(Port) ++ "/%2f",
    {error, Text} = troupe_amqp:open(Url, "r1", 2000),
    ?assertNotEqual(nomatch, string:find(Text, "amqp://guest:***@127.0.0.1:" ++ integer_to_list(Port))),
    ?assertNotEqual(nomatch, string:find(Text, "scripts/rabbitmq.sh")),
    ?assertEqual(nomatch, string:find(Text, "hidden")).

writer_start_fails_with_the_url_test() ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    Url = "amqp://guest:hidden@127.0.0.1:" ++ integer_to_list(Port) ++ "/%2f",
    {error, Text} = troupe_events:start(Url, "r1", "erlang", "n1"),
    ?assertNotEqual(nomatch, string:find(Text, "cannot reach the RabbitMQ broker at amqp://guest:***@")),
    ?assertEqual(undefined, whereis(troupe_events_writer)).
