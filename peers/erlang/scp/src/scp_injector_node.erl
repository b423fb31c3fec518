%% scp_injector_node: the injector's own Erlang node, for injector = "node"
%% (the default; docs/scp.md, "Where the injector runs"), as seed 001 ran it.
%%
%% Rules:
%%  1. The SUB's VM becomes a distributed node only in this mode:
%%     scp@127.0.0.1, listening on 127.0.0.1 only, node discovery by
%%     troupe_epmd (the run script's -epmd_module; no epmd daemon is started
%%     or used, so nothing can outlive the run and no other node on the machine
%%     can find this one), a fresh random cookie.
%%  2. The injector node, injector@127.0.0.1, is a child OS process of the SUB's
%%     VM (OTP's peer module, control over standard_io, so it halts when the
%%     SUB's VM goes away), on a free loopback port routed by troupe_epmd. It is
%%     started, and its event writer opened (node `injector`, run_started with
%%     role injector), before the supervision tree, so it is up when the
%%     window opens whatever the warm-up.
%%  3. go/4 hands it the schedule and the window start, as OS system time (the
%%     two VMs' monotonic clocks are not comparable); the injector process
%%     (scp_injector:start_remote/4) runs there from then on.
%%  4. stop/1 stops the node once the injector has answered {injector_done, _}.
-module(scp_injector_node).

-export([start/3, go/4, stop/1, remote_init/3]).

-define(NAME, "injector").

%% start(EventsTarget, RunId, RawConfig) -> #{peer, node, os_pid}; throws
%% {failed, Msg} when the node cannot be started.
start(Events, RunId, Raw) ->
    distribute(),
    Port = free_port(),
    troupe_epmd:route(?NAME, Port),
    Ebin = filename:dirname(code:which(?MODULE)),
    P = integer_to_list(Port),
    Args = ["-setcookie", atom_to_list(erlang:get_cookie()),
            "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
            "-kernel", "inet_dist_listen_min", P, "-kernel", "inet_dist_listen_max", P,
            "-epmd_module", "troupe_epmd", "-start_epmd", "false", "-pa", Ebin],
    Peer = case peer:start_link(#{name => list_to_atom(?NAME), host => "127.0.0.1", longnames => true,
                                  connection => standard_io, wait_boot => 60000, args => Args}) of
               {ok, Pr, _} -> Pr;
               Err -> failed("the injector node did not start: ~p", [Err])
           end,
    Node = list_to_atom(?NAME ++ "@127.0.0.1"),
    pong =:= net_adm:ping(Node) orelse failed("the injector node ~s does not answer", [Node]),
    case erpc:call(Node, ?MODULE, remote_init, [Events, RunId, Raw], 30000) of
        ok -> ok;
        {error, Why} -> failed("the injector node's event writer: ~ts", [Why])
    end,
    OsPid = list_to_integer(erpc:call(Node, os, getpid, [], 10000)),
    #{peer => Peer, node => Node, os_pid => OsPid}.

%% Rule 1.
distribute() ->
    case init:get_argument(epmd_module) of
        {ok, [["troupe_epmd"]]} -> ok;
        _ -> failed("injector = \"node\" needs the VM flags of peers/erlang/scp/run "
                    "(-epmd_module troupe_epmd); start the peer with that script", [])
    end,
    case net_kernel:start('scp@127.0.0.1', #{name_domain => longnames}) of
        {ok, _} -> ok;
        {error, Why} -> failed("cannot start Erlang distribution: ~p", [Why])
    end,
    true = erlang:set_cookie(binary_to_atom(<<"c", (binary:encode_hex(crypto:strong_rand_bytes(16)))/binary>>)),
    ok.

free_port() ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, P} = inet:port(L),
    ok = gen_tcp:close(L),
    P.

%% On the injector node (rule 2): its event writer and its run_started.
remote_init(Events, RunId, Raw) ->
    case troupe_events:start(Events, RunId, "erlang", ?NAME) of
        ok ->
            troupe_events:emit(run_started, [{workload, <<"scp">>}, {role, <<"injector">>}, {config, Raw}]),
            ok;
        {error, _} = E -> E
    end.

%% Rule 3: starts the injector process; returns its pid (on the injector node).
go(#{node := Node}, Actions, T0, Config) ->
    T0Us = os:system_time(microsecond) + (T0 * 1000 - erlang:monotonic_time(microsecond)),
    erpc:call(Node, scp_injector, start_remote, [Actions, T0Us, Config, node()], 30000).

%% Rule 4.
stop(#{peer := Peer}) ->
    unlink(Peer),
    catch peer:stop(Peer),
    ok.

failed(Fmt, Args) ->
    throw({failed, lists:flatten(io_lib:format(Fmt, Args))}).
