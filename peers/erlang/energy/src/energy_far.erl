%% energy_far: the second OS process of the Erlang energy peer's distributed mode.
%%
%% It owns starting, announcing and stopping the far node:
%%  1. start/0 starts `energy_far@127.0.0.1` with OTP's `peer` module: an OS
%%     process that is a child of this VM, never detached (`peer` detaches a node
%%     unless it has a control connection: we give it `standard_io`, so the node
%%     stays in our process tree and halts when its stdin closes), same cookie and
%%     code path, Erlang distribution bound to 127.0.0.1 only, using the
%%     private epmd the `run` script started. It is started once, before the
%%     first repetition (outside every measured interval), and serves them all.
%%  2. Its OS pid is announced on stderr ("energy: far node ... is OS process N")
%%     and kept, so stop/0 and kill/0 can make sure it is gone.
%%  3. stop/0 stops it politely (peer:stop), then waits up to 5 s for the OS
%%     process to be gone and SIGKILLs it otherwise. kill/0 SIGKILLs at once
%%     (the failure path). A far node whose first node goes away halts by itself.
-module(energy_far).

-export([start/0, stop/0, kill/0]).

-define(KEY, {?MODULE, far}).
-define(NAME, "energy_far").

%% start() -> FarNode. Throws {failed, Msg} when the node cannot start.
start() ->
    is_alive() orelse
        throw({failed, "mode \"distributed\" needs a distributed Erlang node: "
               "start the program with peers/erlang/energy/run"}),
    Ebin = filename:dirname(code:which(?MODULE)),
    Args = ["-setcookie", atom_to_list(erlang:get_cookie()),
            "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
            "-pa", Ebin],
    case peer:start_link(#{name => list_to_atom(?NAME), host => "127.0.0.1", longnames => true,
                           connection => standard_io, wait_boot => 60000, args => Args}) of
        {ok, Peer, Far} ->
            unlink(Peer),
            pong = net_adm:ping(Far),
            %% The distributed clients address the far entry through `global`
            %% (energy_work rule 5): both nodes' name tables agree from here on.
            ok = global:sync(),
            Os = erpc:call(Far, os, getpid, [], 10000),
            persistent_term:put(?KEY, {Peer, Far, Os}),
            io:format(standard_error, "energy: far node ~s is OS process ~s~n", [Far, Os]),
            Far;
        Other ->
            throw({failed, lists:flatten(io_lib:format("the far node did not start: ~p", [Other]))})
    end.

%% stop() -> ok. Stops the far node, if one was started, and makes sure it is gone.
stop() ->
    case persistent_term:get(?KEY, none) of
        none -> ok;
        {Peer, _Far, Os} ->
            persistent_term:erase(?KEY),
            catch peer:stop(Peer),
            case wait_gone(Os, 50) of
                true -> ok;
                false ->
                    io:format(standard_error, "energy: the far node (OS process ~s) outlived peer:stop; killed~n", [Os]),
                    sigkill(Os)
            end
    end.

%% kill() -> ok. SIGKILLs the far node's OS process, if one was started.
kill() ->
    case persistent_term:get(?KEY, none) of
        none -> ok;
        {_Peer, _Far, Os} ->
            persistent_term:erase(?KEY),
            sigkill(Os)
    end.

wait_gone(_Os, 0) -> false;
wait_gone(Os, N) ->
    case alive(Os) of
        false -> true;
        true -> timer:sleep(100), wait_gone(Os, N - 1)
    end.

%% True while `Os` is a live (not zombie) process running this run's far node.
alive(Os) ->
    case file:read_file("/proc/" ++ Os ++ "/stat") of
        {ok, Stat} ->
            [_, AfterComm] = string:split(Stat, ") ", trailing),
            binary:first(AfterComm) =/= $Z andalso is_far(Os);
        {error, _} -> false
    end.

is_far(Os) ->
    case file:read_file("/proc/" ++ Os ++ "/cmdline") of
        {ok, Cmd} -> binary:match(Cmd, <<?NAME "@127.0.0.1">>) =/= nomatch;
        {error, _} -> false
    end.

sigkill(Os) ->
    case alive(Os) of
        true -> _ = os:cmd("kill -KILL " ++ Os), ok;
        false -> ok
    end.
