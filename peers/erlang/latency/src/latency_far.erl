%% latency_far: node B of the Erlang latency peer, and the lab's relay in front
%% of it.
%%
%% Rules:
%%  1. start(Relay) picks a free loopback port P for B's distribution, asks the
%%     relay (a `troupe lab exec latency-relay` port program, see latency_main)
%%     for a listening address R forwarding to 127.0.0.1:P, routes B's name to R
%%     (troupe_epmd), then starts B with OTP's `peer` module: an OS process that
%%     is a child of this VM (control over standard_io, so it halts when this VM
%%     goes away), listening on P only, with troupe_epmd as its discovery
%%     module. The first connection to B (net_adm:ping) is made through R.
%%  2. Its OS pid is announced on stderr ("latency: far node ... is OS process
%%     N"); stop/0 stops it and makes sure it is gone (SIGKILL after 5 s).
%%  3. partner/0 runs on B, one per pair: it answers {msg, From, Seq, Payload}
%%     with {ack, self(), Seq} to From, until told stop.
-module(latency_far).

-export([start/1, stop/0, partner/0]).

-define(KEY, {?MODULE, far}).
-define(NAME, "latency_far").

%% start(RelayCmd) -> FarNode. RelayCmd(Line) -> AnswerLine sends a relay command.
start(RelayCmd) ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, P} = inet:port(L),
    ok = gen_tcp:close(L),
    "listening " ++ R = RelayCmd("listen"),
    "ok" = RelayCmd("forward " ++ R ++ " 127.0.0.1:" ++ integer_to_list(P)),
    [_, RPort] = string:split(R, ":", trailing),
    troupe_epmd:route(?NAME, list_to_integer(RPort)),
    Ebin = filename:dirname(code:which(?MODULE)),
    Args = ["-setcookie", atom_to_list(erlang:get_cookie()),
            "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
            "-kernel", "inet_dist_listen_min", integer_to_list(P),
            "-kernel", "inet_dist_listen_max", integer_to_list(P),
            "-epmd_module", "troupe_epmd", "-start_epmd", "false",
            "-pa", Ebin],
    case peer:start_link(#{name => list_to_atom(?NAME), host => "127.0.0.1", longnames => true,
                           connection => standard_io, wait_boot => 60000, args => Args}) of
        {ok, Peer, Far} ->
            unlink(Peer),
            pong = net_adm:ping(Far),
            Os = erpc:call(Far, os, getpid, [], 10000),
            persistent_term:put(?KEY, {Peer, Far, Os}),
            io:format(standard_error, "latency: far node ~s is OS process ~s, distribution on 127.0.0.1:~b, "
                      "reached through the relay at ~s~n", [Far, Os, P, R]),
            Far;
        Other ->
            throw({failed, lists:flatten(io_lib:format("the far node did not start: ~p", [Other]))})
    end.

%% stop() -> ok.
stop() ->
    case persistent_term:get(?KEY, none) of
        none -> ok;
        {Peer, _Far, Os} ->
            persistent_term:erase(?KEY),
            catch peer:stop(Peer),
            wait_gone(Os, 50)
    end.

wait_gone(Os, 0) ->
    io:format(standard_error, "latency: the far node (OS process ~s) outlived peer:stop; killed~n", [Os]),
    _ = os:cmd("kill -KILL " ++ Os),
    ok;
wait_gone(Os, N) ->
    case file:read_file("/proc/" ++ Os ++ "/cmdline") of
        {ok, Cmd} ->
            case binary:match(Cmd, <<?NAME "@127.0.0.1">>) of
                nomatch -> ok;
                _ -> timer:sleep(100), wait_gone(Os, N - 1)
            end;
        {error, _} -> ok
    end.

partner() ->
    receive
        {msg, From, Seq, _Payload} ->
            From ! {ack, self(), Seq},
            partner();
        stop -> ok
    end.
