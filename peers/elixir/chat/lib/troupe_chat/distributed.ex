defmodule TroupeChat.Distributed do
  @moduledoc """
  `deployment = "distributed"`: the chat system over Erlang distribution, one BEAM node (OS
  process) per server group and per client group, with a random cookie (set up by `chat/run`),
  on loopback with a private epmd, or each node in the network namespace the lab gives it
  (`TROUPE_NETNS`, `TroupeChat.Placement`: only the nodes' addresses and the `ip netns exec`
  prefix differ). The node running `TroupeChat.Main` is `discovery`.

  Rules:
  1. Set-up order (seed 000 §4.2, "Orchestrator"): discovery (`:global` name on this node), then
     one node `server-g` per supervisor (ready once its chats registered), then one node
     `clients-i` per `clients_per_process` clients (ready once its clients joined). Nodes are
     started with OTP's `:peer` (linked: a peer node halts when this node goes away) and run
     their group in a process spawned there and linked to this one (`Node.spawn_link/4`).
  2. Every node writes its own events (node `server-g`, `clients-i`, `discovery`) to the same
     `TROUPE_EVENTS` file (appends of whole batches of lines).
  3. The window opens `warmup_s` after the last group is ready: this node emits
     `ready {what: "window"}` and sends `start_us` to every group; each times the window from
     it (the machine's one wall clock).
  4. The injector of chat c runs on the client node holding the chat's first client, and kills
     or poisons the chat on its server node (`Process.exit(pid, :kill)` across the wire).
  5. Client groups finish at the window's end (once their clients have rejoined after the last
     faults, bounded), server groups one second after the window; each writes its
     `run_finished` and tells this node, which then stops the nodes and writes its own.
  6. A group process or node that fails (exits, loses its connection) fails the run: the other
     nodes are stopped and `run_finished {failed_nodes}` names it with the reason; every wait is
     bounded.
  """
  alias TroupeChat.{Chat, Client, Config, Discovery, Events, Injector, JSON, Main, Run}

  @setup_limit_ms 120_000

  # ------------------------------------------------------------------------------------------
  # The orchestrator (this node)

  @doc "Runs the distributed system; returns the orchestrator's tally for `run_finished`."
  def orchestrate(cfg, actions, common, placement) do
    Process.flag(:trap_exit, true)
    {:ok, _} = Discovery.start_link(lookup: cfg["lookup"], park_ms: cfg["retry_delay_ms"])
    groups = %{}

    with {:ok, groups} <- start_groups(groups, server_specs(cfg, common), placement),
         :ok <- Events.emit("ready", [{"what", "server_groups"}, {"count", cfg["num_supervisor"]}]),
         {:ok, groups} <- start_groups(groups, client_specs(cfg, actions, common), placement) do
      d = cfg["test_duration_secs"]
      start_us = System.os_time(:microsecond) + cfg["warmup_s"] * 1_000_000
      Events.emit("ready", [{"what", "window"}, {"count", d}, {"start_us", start_us}])
      for {pid, _} <- groups, do: send(pid, {:window, start_us})

      window_end_ms =
        System.monotonic_time(:millisecond) + div(start_us - System.os_time(:microsecond), 1000) + d * 1000

      result = await(groups, :done, window_end_ms + 30_000)
      stop_all(groups)
      tally(result)
    else
      {:failed, groups, failed} ->
        stop_all(groups)
        tally({:failed, failed})
    end
  end

  defp tally(:ok), do: %{errors: 0, skipped: 0, interrupted: false, exit: 0, failed_nodes: []}
  defp tally(:interrupted), do: %{errors: 0, skipped: 0, interrupted: true, exit: 0, failed_nodes: []}

  defp tally({:failed, failed}),
    do: %{errors: 1, skipped: 0, interrupted: false, exit: 0, failed_nodes: failed}

  defp server_specs(cfg, common) do
    for g <- 0..(cfg["num_supervisor"] - 1) do
      {"server-#{g}", :server_group, Map.merge(common, %{cfg: cfg, group: g})}
    end
  end

  @doc """
  The network nodes in the lab's order (its `net_nodes`): `server-0` .. `server-{num_supervisor-1}`,
  then `clients-0` .. (one per client group); the names `TROUPE_NETNS` places.
  """
  def net_nodes(cfg) do
    servers = for g <- 0..(cfg["num_supervisor"] - 1), do: "server-#{g}"
    servers ++ for i <- 0..(length(client_groups(cfg)) - 1), do: "clients-#{i}"
  end

  @doc "The client groups: `{first, count}` per `clients_per_process` clients (as the lab's)."
  def client_groups(cfg) do
    total = Config.total_clients(cfg)
    per = cfg["clients_per_process"]
    for g <- 0..(div(total + per - 1, per) - 1), do: {g * per, min(per, total - g * per)}
  end

  defp client_specs(cfg, actions, common) do
    per = cfg["clients_per_server"]

    cfg
    |> client_groups()
    |> Enum.with_index()
    |> Enum.map(fn {{first, count}, i} ->
      mine = Enum.filter(actions, &(&1.group * per >= first and &1.group * per < first + count))

      {"clients-#{i}", :client_group,
       Map.merge(common, %{cfg: cfg, group: i, first: first, count: count, actions: mine})}
    end)
  end

  # Starts the nodes of one kind and waits until every group is ready (rule 1).
  defp start_groups(groups, specs, placement) do
    started =
      Enum.reduce_while(specs, {:ok, groups, %{}}, fn {name, fun, args}, {:ok, all, new} ->
        case start_node(name, placement) do
          {:ok, peer, node} ->
            pid = Node.spawn_link(node, __MODULE__, fun, [Map.put(args, :orchestrator, self())])
            g = %{name: name, peer: peer, node: node}
            {:cont, {:ok, Map.put(all, pid, g), Map.put(new, pid, g)}}

          {:error, reason} ->
            {:halt, {:failed, all, ["#{name} (could not be started: #{inspect(reason)})"]}}
        end
      end)

    with {:ok, all, new} <- started do
      case await(new, :ready, System.monotonic_time(:millisecond) + @setup_limit_ms, all) do
        :ok -> {:ok, all}
        {:failed, failed} -> {:failed, all, failed}
        :interrupted -> {:failed, all, ["interrupted during set-up"]}
      end
    end
  end

  # Starts node `name` where the placement puts it: its host (address), the interface its
  # distribution listens on and, in a namespace, the `ip netns exec` prefix. The rest is the
  # same in both modes; `TROUPE_ELIXIR_PEER_ARGS` (from `chat/run`) carries the process limit
  # and, in namespaces, the epmd-less distribution flags.
  defp start_node(name, placement) do
    paths = Enum.flat_map(:code.get_path(), fn p -> [~c"-pa", p] end)
    cookie = Atom.to_charlist(Node.get_cookie())
    extra = System.get_env("TROUPE_ELIXIR_PEER_ARGS", "") |> String.split() |> Enum.map(&String.to_charlist/1)

    with {:ok, where, interface} <- TroupeChat.Placement.peer_options(placement, name) do
      where
      |> Map.merge(%{
        name: String.to_atom(name),
        longnames: true,
        args: [~c"-setcookie", cookie | interface] ++ extra ++ paths,
        wait_boot: 60_000
      })
      |> :peer.start_link()
    end
  end

  # Waits for `{kind, pid}` from every group in `waiting`; any group or node failing, or the
  # deadline passing, fails the run (rule 6).
  defp await(waiting, kind, deadline, all \\ nil) do
    all = all || waiting

    if map_size(waiting) == 0 do
      :ok
    else
      receive do
        {^kind, pid} when is_map_key(waiting, pid) ->
          await(Map.delete(waiting, pid), kind, deadline, all)

        {:failed, pid, reason} when is_map_key(all, pid) ->
          {:failed, ["#{all[pid].name} (#{reason})"]}

        {:EXIT, pid, reason} when is_map_key(all, pid) ->
          {:failed, ["#{all[pid].name} (its group process exited: #{inspect(reason, limit: 5)})"]}

        {:EXIT, peer, reason} ->
          case Enum.find(all, fn {_, g} -> g.peer == peer end) do
            {_, g} -> {:failed, ["#{g.name} (its node went down: #{inspect(reason, limit: 5)})"]}
            nil -> await(waiting, kind, deadline, all)
          end

        :interrupted ->
          :interrupted
      after
        max(0, deadline - System.monotonic_time(:millisecond)) ->
          names = waiting |> Map.values() |> Enum.map(& &1.name) |> Enum.join(", ")
          {:failed, ["#{names} (no #{kind} in time)"]}
      end
    end
  end

  defp stop_all(groups) do
    for {pid, g} <- groups do
      Process.unlink(pid)
      Process.unlink(g.peer)

      try do
        :peer.stop(g.peer)
      catch
        _, _ -> :ok
      end
    end

    :ok
  end

  # ------------------------------------------------------------------------------------------
  # The groups (on their own nodes)

  @doc false
  def server_group(a) do
    first = a.group * a.cfg["chats_per_sup"]
    count = a.cfg["chats_per_sup"]

    group(a, "server-#{a.group}", "chat-server", fn run ->
      chats = for c <- first..(first + count - 1), do: {Chat, {c, run}}

      {:ok, _sup} =
        Supervisor.start_link(chats, strategy: :one_for_one, max_restarts: 1_000_000, max_seconds: 1)

      with :ok <- wait_for(run, :registered, count, "chats registered") do
        Events.emit("ready", [{"what", "chats"}, {"count", count}])
        send(a.orchestrator, {:ready, self()})
        start_us = receive_window(a)
        # Server groups end one second after the window (rule 5).
        sleep_until(window_ms(start_us) + a.cfg["test_duration_secs"] * 1000 + 1000)
        %{errors: Run.get(run, :errors), skipped: 0}
      end
    end)
  end

  @doc false
  def client_group(a) do
    per = a.cfg["clients_per_server"]

    group(a, "clients-#{a.group}", "chat-clients", fn run ->
      for k <- a.first..(a.first + a.count - 1), do: {:ok, _} = Client.start({k, div(k, per), run})

      with :ok <- wait_for(run, :joined, a.count, "clients joined") do
        Events.emit("ready", [{"what", "clients"}, {"count", a.count}, {"rss_bytes", Main.rss_bytes()}])
        send(a.orchestrator, {:ready, self()})
        start_us = receive_window(a)
        start_ms = window_ms(start_us)
        stress = {a.cfg["stress_ms"], a.cfg["stress_mb"]}

        injectors =
          a.actions
          |> Enum.group_by(& &1.group)
          |> Enum.map(fn {chat, acts} ->
            {:ok, pid} = Injector.start({chat, acts, start_ms, run, stress})
            Process.monitor(pid)
          end)

        Main.count_seconds(run, start_ms, a.cfg["test_duration_secs"])
        late = Main.await_down(MapSet.new(injectors), System.monotonic_time(:millisecond) + 10_000)
        # The rejoins after a crash in the window's last instants (the chat restarts on its
        # server node, which ends a second after the window).
        Main.settle(run, a.count, Main.settle_deadline(a.cfg), false)
        %{errors: Run.get(run, :errors) + late, skipped: 0}
      end
    end)
  end

  # What every group does around its body: events, run_started, run_finished, `:done`.
  defp group(a, node_name, role, body) do
    Main.quiet_injected_crashes()
    {:ok, _} = Events.start(a.events_path, a.run_id, "elixir", node_name)

    Events.emit("run_started", [
      {"workload", "chat"},
      {"role", role},
      {"config", {:raw, JSON.encode(a.raw)}},
      {"version", Main.version()}
    ])

    :global.sync()
    run = Run.new(a.cfg)

    case body.(run) do
      %{errors: errors} ->
        fields = [
          {"errors", errors},
          {"skipped_faults", Run.get(run, :skipped)},
          {"injected", Run.get(run, :injected)}
        ]

        :ok = Events.finish(fields)
        send(a.orchestrator, {:done, self()})

      {:failed, reason} ->
        Events.finish([{"errors", 1}, {"skipped_faults", 0}, {"injected", 0}])
        send(a.orchestrator, {:failed, self(), reason})
    end

    # Stay until this node is stopped, so the link does not report an early exit.
    receive do
      :never -> :ok
    end
  end

  defp receive_window(a) do
    receive do
      {:window, start_us} -> start_us
    after
      @setup_limit_ms * 3 -> send(a.orchestrator, {:failed, self(), "no window start"}) && exit(:no_window)
    end
  end

  defp window_ms(start_us),
    do: System.monotonic_time(:millisecond) + div(start_us - System.os_time(:microsecond), 1000)

  defp sleep_until(t) do
    receive do
    after
      max(0, t - System.monotonic_time(:millisecond)) -> :ok
    end
  end

  defp wait_for(run, slot, target, what) do
    deadline = System.monotonic_time(:millisecond) + @setup_limit_ms
    poll(run, slot, target, what, deadline)
  end

  defp poll(run, slot, target, what, deadline) do
    got = Run.get(run, slot)

    cond do
      got >= target -> :ok
      System.monotonic_time(:millisecond) > deadline -> {:failed, "only #{got} of #{target} #{what} in time"}
      true -> sleep_until(System.monotonic_time(:millisecond) + 2) && poll(run, slot, target, what, deadline)
    end
  end
end
