defmodule TroupeChat.Placement do
  @moduledoc """
  Where the nodes of `deployment = "distributed"` run: all on loopback, or each in the network
  namespace the lab made for it (so that the lab's network faults, applied in a hub namespace
  outside every runtime, hit this peer as they hit the others; docs/chat.md,
  "The chat peer contract").

  Rules:
  1. Without `TROUPE_NETNS` every node is on 127.0.0.1 and started by `:peer` as before (a
     private epmd on loopback, set up by `chat/run`).
  2. With it, `TROUPE_NETNS` is the path of the lab's JSON file
     `{"coordinator": {"netns", "addr"}, "nodes": [{"index", "name", "netns", "addr"}, ...]}`.
     Its nodes must be exactly the chat's network nodes in order (`server-0` ..
     `server-{num_supervisor-1}`, then `clients-0` ..; `index` = position). Anything else (a
     missing or extra node, another order, an address that is not IPv4, a namespace name that is
     not a plain file name) is refused with a message naming the file and the field.
  3. Node `name` is started with `ip netns exec <netns> ... erl ...`, named `name@addr`, listening
     on `addr` only. The orchestrator (`discovery`) already runs in the coordinator namespace
     (the lab starts `chat/run` there) and is `discovery@<coordinator addr>`.
  4. Each namespace has its own loopback, so there is no shared epmd: in this mode every node
     runs without epmd (`-start_epmd false`) and listens on the one fixed distribution port
     `chat/run` gives (`-erl_epmd_port`), which it can, being alone on its address.
  5. A node in a namespace never outlives the orchestrator, whatever the network does: `:peer`
     controls it over its standard I/O (`connection: :standard_io`), not over distribution,
     and it is started under `setpriv --pdeathsig KILL`, so the kernel kills it when its parent
     (the orchestrator BEAM's `erl_child_setup`, which exits with that BEAM) is gone. Over distribution alone a node
     cut off by the lab halts only after the net tick time, and OTP's `erlang:halt/0` then
     waits to flush distribution data that can no longer be delivered (seen: a node left
     running minutes after its namespaces were deleted).
  """

  @enforce_keys [:coordinator, :nodes]
  defstruct [:coordinator, :nodes]

  @typedoc "A namespace and the IPv4 address a node listens on there."
  @type spot :: %{netns: String.t(), addr: String.t()}
  @type t :: %__MODULE__{coordinator: spot, nodes: %{String.t() => spot}} | :loopback

  @doc """
  Reads the placement for the nodes `names` (in the chat's order): `{:ok, :loopback}` without
  `TROUPE_NETNS`, else the file's namespaces, or `{:error, message}`.
  """
  @spec load([String.t()]) :: {:ok, t} | {:error, String.t()}
  def load(names) do
    case System.get_env("TROUPE_NETNS", "") do
      "" ->
        {:ok, :loopback}

      path ->
        case File.read(path) do
          {:ok, text} ->
            with {:error, why} <- parse(text, names), do: {:error, "TROUPE_NETNS=#{path}: #{why}"}

          {:error, reason} ->
            {:error, "TROUPE_NETNS=#{path}: cannot read it: #{:file.format_error(reason)}"}
        end
    end
  end

  @doc "Parses the lab's namespace file for the nodes `names` (rule 2)."
  @spec parse(binary, [String.t()]) :: {:ok, t} | {:error, String.t()}
  def parse(text, names) do
    with {:ok, %{} = doc} <- TroupeChat.JSON.decode(text),
         {:ok, coordinator} <- spot(doc["coordinator"], "coordinator"),
         {:ok, nodes} <- nodes(doc["nodes"], names) do
      {:ok, %__MODULE__{coordinator: coordinator, nodes: nodes}}
    else
      {:ok, _} -> {:error, "not a JSON object"}
      {:error, why} -> {:error, why}
    end
  end

  defp nodes(list, names) when is_list(list) do
    if length(list) != length(names) do
      {:error,
       "\"nodes\" lists #{length(list)} nodes; this config has #{length(names)} (#{Enum.join(names, ", ")})"}
    else
      list
      |> Enum.zip(names)
      |> Enum.with_index()
      |> Enum.reduce_while({:ok, %{}}, fn {{node, name}, i}, {:ok, acc} ->
        field = "nodes[#{i}]"

        with :ok <- expect(node, "index", i, field),
             :ok <- expect(node, "name", name, field),
             {:ok, spot} <- spot(node, field) do
          {:cont, {:ok, Map.put(acc, name, spot)}}
        else
          {:error, why} -> {:halt, {:error, why}}
        end
      end)
    end
  end

  defp nodes(_, _), do: {:error, "\"nodes\" is not a list"}

  defp expect(%{} = node, key, want, field) do
    case node[key] do
      ^want -> :ok
      got -> {:error, "#{field}.#{key} is #{inspect(got)}, expected #{inspect(want)}"}
    end
  end

  defp expect(_, _, _, field), do: {:error, "#{field} is not an object"}

  defp spot(%{"netns" => ns, "addr" => addr}, field) when is_binary(ns) and is_binary(addr) do
    cond do
      not Regex.match?(~r/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, ns) ->
        {:error, "#{field}.netns #{inspect(ns)} is not a namespace name"}

      not match?({:ok, _}, :inet.parse_ipv4strict_address(String.to_charlist(addr))) ->
        {:error, "#{field}.addr #{inspect(addr)} is not an IPv4 address"}

      true ->
        {:ok, %{netns: ns, addr: addr}}
    end
  end

  defp spot(_, field), do: {:error, "#{field} needs string fields \"netns\" and \"addr\""}

  @doc "The address the orchestrator (`discovery`) runs on."
  @spec coordinator_addr(t) :: String.t()
  def coordinator_addr(:loopback), do: "127.0.0.1"
  def coordinator_addr(%__MODULE__{coordinator: c}), do: c.addr

  @doc "The address node `name` listens on and is named after (`name@addr`)."
  @spec addr(t, String.t()) :: String.t()
  def addr(:loopback, _name), do: "127.0.0.1"
  def addr(%__MODULE__{nodes: nodes}, name), do: Map.fetch!(nodes, name).addr

  @doc """
  The `:peer` options that put node `name` where it belongs: its host, the interface its
  distribution listens on, and (in a namespace) the `ip netns exec` prefix and the standard I/O
  control channel (rules 3 and 5).
  """
  @spec peer_options(t, String.t()) :: {:ok, map, [charlist]} | {:error, String.t()}
  def peer_options(placement, name) do
    addr = addr(placement, name)
    {:ok, ip} = :inet.parse_ipv4strict_address(String.to_charlist(addr))
    interface = [~c"-kernel", ~c"inet_dist_use_interface", :io_lib.format(~c"~w", [ip]) |> List.flatten()]

    case placement do
      :loopback ->
        {:ok, %{host: String.to_charlist(addr)}, interface}

      %__MODULE__{nodes: nodes} ->
        with {:ok, ip_bin} <- find(["ip", "/usr/sbin/ip", "/sbin/ip"], "ip (iproute2)"),
             {:ok, setpriv} <- find(["setpriv", "/usr/bin/setpriv"], "setpriv (util-linux)"),
             {:ok, erl} <- find(["erl"], "erl") do
          ns = String.to_charlist(nodes[name].netns)
          exec = {ip_bin, [~c"netns", ~c"exec", ns, setpriv, ~c"--pdeathsig", ~c"KILL", erl]}
          {:ok, %{host: String.to_charlist(addr), exec: exec, connection: :standard_io}, interface}
        end
    end
  end

  defp find(candidates, what) do
    Enum.find_value(
      candidates,
      {:error, "#{what} not found (looked for #{Enum.join(candidates, ", ")})"},
      fn c ->
        case :os.find_executable(String.to_charlist(c)) do
          false -> nil
          path -> {:ok, path}
        end
      end
    )
  end
end
