%% troupe_epmd: the node discovery module (`-epmd_module troupe_epmd`) shared by
%% the Erlang peers whose nodes the lab wires itself (latency, kv); it replaces
%% epmd, so no epmd daemon is started or used.
%%
%% Rules:
%%  1. A node listens where the kernel's inet_dist_listen_min/max say (a node
%%     others dial: one fixed port; a node that only dials: any free port):
%%     listen_port_please answers 0, which tells the distribution to use that
%%     range.
%%  2. Registering a node succeeds without contacting anyone (a fresh creation).
%%  3. Another node's port is the one route/2 stored for its name (the part
%%     before @); a node with no route is not reachable (noport). The latency
%%     peer routes the far node to the lab's relay, never to its own port, so
%%     every byte between them is delayed (docs/latency.md).
%%  4. A node's address is the IPv4 address its host part names (kv in the lab's
%%     network namespaces), else 127.0.0.1.
-module(troupe_epmd).

-export([start_link/0, register_node/2, register_node/3, port_please/2, port_please/3,
         listen_port_please/2, names/0, names/1, address_please/3, route/2]).

route(Name, Port) when is_list(Name), is_integer(Port) ->
    persistent_term:put({?MODULE, Name}, Port).

start_link() -> ignore.

register_node(Name, Port) -> register_node(Name, Port, inet_tcp).
register_node(_Name, _Port, _Family) -> {ok, rand:uniform(16#7fffffff) + 3}.

listen_port_please(_Name, _Host) -> {ok, 0}.

port_please(Name, Host) -> port_please(Name, Host, infinity).
port_please(Name, _Host, _Timeout) ->
    case persistent_term:get({?MODULE, to_list(Name)}, undefined) of
        undefined -> noport;
        Port -> {port, Port, 6}
    end.

address_please(_Name, Host, inet) ->
    %% A node named by an IPv4 address (the lab's network namespaces) is there;
    %% any other host name is this machine's loopback.
    case inet:parse_ipv4strict_address(to_list(Host)) of
        {ok, Ip} -> {ok, Ip};
        _ -> {ok, {127, 0, 0, 1}}
    end;
address_please(_Name, Host, Family) -> inet:getaddr(Host, Family).

names() -> names(localhost).
names(_Host) -> {error, address}.

to_list(A) when is_atom(A) -> atom_to_list(A);
to_list(L) -> L.
