defmodule TroupeChat.Main do
  @moduledoc """
  The Elixir peer of the Troupe lab's chat benchmark (seed 000); docs/chat.md, "The chat peer
  contract". Reads `TROUPE_CONFIG`, `TROUPE_SCHEDULE`, `TROUPE_EVENTS`, `TROUPE_RUN_ID`; writes
  JSON Lines events; exits 0. `deployment = "single"` runs everything in this node (below);
  `"distributed"` is `TroupeChat.Distributed` (this node is then `discovery`).

  The orchestrator (this function, outside the actor system, as seed 000's orchestrator):
  1. discovery (`TroupeChat.Discovery`, `:global` name), then the server groups: one
     one_for_one `Supervisor` per `num_supervisor`, `chats_per_sup` chats each, restarting them
     for ever (intensity 1,000,000 per second, as the Troupe SUB); `ready {what: "chats"}` once
     every chat registered;
  2. the clients (`TroupeChat.Client`); `ready {what: "clients", count, rss_bytes}` once every
     client joined;
  3. `ready {what: "window", count, start_us}` `warmup_s` later; the injectors (one per chat
     with actions) and the per-second throughput counter are timed from `start_us`;
  4. after the window: the injectors' tally, `run_finished {dropped_events, errors,
     skipped_faults, injected}`, exit 0. SIGTERM ends the run early with `interrupted: true`.
  An action with an unknown kind or chat is skipped, counted, and named on stderr.
  """
  alias TroupeChat.{Chat, Client, Config, Discovery, Events, Injector, JSON, Run}

  @rt "elixir"
  @node "elixir"
  @setup_limit_ms 120_000
  @kinds ["kill", "error", "cpu", "ram"]

  def main do
    quiet_injected_crashes()
    cfg_path = env!("TROUPE_CONFIG")
    events_path = env!("TROUPE_EVENTS")
    run_id = System.get_env("TROUPE_RUN_ID", "")

    {cfg, raw} =
      with {:ok, text} <- File.read(cfg_path),
           {:ok, cfg, raw} <- Config.parse(text) do
        {cfg, raw}
      else
        {:error, reason} when is_atom(reason) ->
          die(1, "reading config #{cfg_path}: #{:file.format_error(reason)}")

        {:error, reason} ->
          die(2, "config #{cfg_path}: #{reason}")
      end

    single = cfg["deployment"] == "single"

    if not single and not Node.alive?() do
      die(2, "deployment=distributed needs a distributed node: start the peer with peers/elixir/chat/run")
    end

    placement = if single, do: :loopback, else: placement!(cfg)

    if String.contains?(events_path, "://") and not String.starts_with?(events_path, "amqp://") do
      die(2, "TROUPE_EVENTS=#{events_path}: only a file path or an amqp:// URL is implemented")
    end

    actions =
      case System.get_env("TROUPE_SCHEDULE", "") do
        "" ->
          []

        path ->
          with {:ok, text} <- File.read(path), {:ok, acts} <- Config.parse_schedule(text) do
            acts
          else
            {:error, reason} when is_atom(reason) ->
              die(1, "reading schedule #{path}: #{:file.format_error(reason)}")

            {:error, reason} ->
              die(1, "schedule #{path}: #{reason}")
          end
      end

    case Events.start(events_path, run_id, @rt, if(single, do: @node, else: "discovery")) do
      {:ok, _} -> :ok
      {:error, reason} when is_binary(reason) -> die(1, "events: #{reason}")
      {:error, reason} -> die(1, "events: #{inspect(reason)}")
    end

    Events.emit("run_started", [
      {"workload", "chat"},
      {"config", {:raw, JSON.encode(raw)}},
      {"version", version()}
    ])

    main = self()
    System.trap_signal(:sigterm, :troupe_chat_stop, fn -> send(main, :interrupted) && :ok end)

    total_chats = Config.total_chats(cfg)
    {good, bad} = Enum.split_with(actions, &(&1.kind in @kinds and &1.group >= 0 and &1.group < total_chats))

    for a <- bad do
      IO.puts(
        :stderr,
        "elixir chat: action #{inspect(a.id)} (kind #{inspect(a.kind)}, chat #{a.group} of #{total_chats}) cannot be carried out; skipped"
      )
    end

    run = Run.new(cfg)

    tally =
      if single,
        do: run_system(cfg, good, run),
        else:
          TroupeChat.Distributed.orchestrate(
            cfg,
            good,
            %{events_path: events_path, run_id: run_id, raw: raw},
            placement
          )

    errors = Run.get(run, :errors) + tally.errors + length(bad)

    fields =
      [
        {"errors", errors},
        {"skipped_faults", Run.get(run, :skipped) + tally.skipped + length(bad)},
        {"injected", Run.get(run, :injected)}
      ] ++
        if(tally.interrupted, do: [{"interrupted", true}], else: []) ++
        if(tally[:failed_nodes] not in [nil, []], do: [{"failed_nodes", tally.failed_nodes}], else: [])

    case Events.finish(fields) do
      :ok ->
        System.halt(tally.exit)

      {:error, reason} ->
        IO.puts(:stderr, "elixir chat: writing events: #{reason}")
        System.halt(1)
    end
  end

  defp run_system(cfg, actions, run) do
    total_chats = Config.total_chats(cfg)
    total_clients = Config.total_clients(cfg)
    per = cfg["clients_per_server"]

    # 1. Discovery, then the server groups.
    {:ok, _} = Discovery.start_link(lookup: cfg["lookup"], park_ms: cfg["retry_delay_ms"])

    for g <- 0..(cfg["num_supervisor"] - 1) do
      first = g * cfg["chats_per_sup"]
      chats = for c <- first..(first + cfg["chats_per_sup"] - 1), do: {Chat, {c, run}}
      {:ok, _} = Supervisor.start_link(chats, strategy: :one_for_one, max_restarts: 1_000_000, max_seconds: 1)
    end

    with :ok <- wait_for(run, :registered, total_chats, "chats registered"),
         Events.emit("ready", [{"what", "chats"}, {"count", total_chats}]),
         # 2. The clients.
         :ok <- spawn_clients(total_clients, per, run),
         :ok <- wait_for(run, :joined, total_clients, "clients joined") do
      Events.emit("ready", [{"what", "clients"}, {"count", total_clients}, {"rss_bytes", rss_bytes()}])
      window(cfg, actions, run)
    end
  end

  defp spawn_clients(total, per, run) do
    Enum.reduce_while(0..(total - 1), :ok, fn k, :ok ->
      case Client.start({k, div(k, per), run}) do
        {:ok, _} -> {:cont, :ok}
        other -> {:halt, setup_failed("client c#{k} did not start: #{inspect(other)}")}
      end
    end)
  end

  # 3-4. The window.
  defp window(cfg, actions, run) do
    d = cfg["test_duration_secs"]
    start_us = System.os_time(:microsecond) + cfg["warmup_s"] * 1_000_000
    Events.emit("ready", [{"what", "window"}, {"count", d}, {"start_us", start_us}])
    start_ms = System.monotonic_time(:millisecond) + div(start_us - System.os_time(:microsecond), 1000)

    stress = {cfg["stress_ms"], cfg["stress_mb"]}

    injectors =
      actions
      |> Enum.group_by(& &1.group)
      |> Enum.map(fn {chat, acts} ->
        {:ok, pid} = Injector.start({chat, acts, start_ms, run, stress})
        Process.monitor(pid)
      end)

    interrupted = count_seconds(run, start_ms, d)
    # The last action is due before the window's end: the injectors are done or finishing.
    late =
      if interrupted,
        do: 0,
        else: await_down(MapSet.new(injectors), System.monotonic_time(:millisecond) + 10_000)

    if late > 0, do: IO.puts(:stderr, "elixir chat: #{late} injectors did not finish their schedule")
    # A crash injected in the window's last instants is still being recovered from: its restart
    # and its clients' rejoins are waited for (bounded) before run_finished closes the events.
    unless interrupted, do: settle(run, Config.total_clients(cfg), settle_deadline(cfg), true)

    %{errors: late, skipped: 0, interrupted: interrupted, exit: 0}
  end

  @doc false
  def settle_deadline(cfg), do: System.monotonic_time(:millisecond) + 2_000 + 3 * cfg["retry_delay_ms"]

  @doc """
  Waits until this node's `clients` are all connected and, with `restarts?` (the chats are on
  this node), every injected crash was followed by a restart; or until `deadline`.
  """
  def settle(run, clients, deadline, restarts?) do
    pending = Run.get(run, :connected) < clients or (restarts? and Run.restarts(run) < Run.get(run, :crashes))

    if pending and System.monotonic_time(:millisecond) < deadline do
      receive do
      after
        2 -> settle(run, clients, deadline, restarts?)
      end
    end
  end

  # Emits `throughput {second, count}` at the end of every window second; true if interrupted.
  @doc false
  def count_seconds(run, start_ms, d) do
    sleep_until(start_ms)
    prev = Run.get(run, :received)

    Enum.reduce_while(0..(d - 1), prev, fn s, prev ->
      case sleep_until(start_ms + (s + 1) * 1000) do
        :interrupted ->
          {:halt, :interrupted}

        :ok ->
          now = Run.get(run, :received)
          Events.emit("throughput", [{"second", s}, {"count", now - prev}])
          {:cont, now}
      end
    end) == :interrupted
  end

  defp sleep_until(t) do
    receive do
      :interrupted -> :interrupted
    after
      max(0, t - System.monotonic_time(:millisecond)) -> :ok
    end
  end

  @doc false
  def await_down(refs, deadline) do
    if MapSet.size(refs) == 0 do
      0
    else
      receive do
        {:DOWN, ref, :process, _, _} -> await_down(MapSet.delete(refs, ref), deadline)
      after
        max(0, deadline - System.monotonic_time(:millisecond)) -> MapSet.size(refs)
      end
    end
  end

  # Polls a counter until it reaches `target`; a setup step has @setup_limit_ms.
  defp wait_for(run, slot, target, what) do
    deadline = System.monotonic_time(:millisecond) + @setup_limit_ms

    Stream.repeatedly(fn -> Run.get(run, slot) end)
    |> Enum.reduce_while(nil, fn got, _ ->
      cond do
        got >= target ->
          {:halt, :ok}

        System.monotonic_time(:millisecond) > deadline ->
          {:halt, setup_failed("only #{got} of #{target} #{what} within #{div(@setup_limit_ms, 1000)} s")}

        true ->
          receive do
            :interrupted -> {:halt, %{errors: 1, skipped: 0, interrupted: true, exit: 0}}
          after
            2 -> {:cont, nil}
          end
      end
    end)
  end

  defp setup_failed(msg) do
    IO.puts(:stderr, "elixir chat: " <> msg)
    %{errors: 1, skipped: 0, interrupted: false, exit: 1}
  end

  @doc false
  def version do
    "Elixir #{System.version()} on Erlang/OTP #{:erlang.system_info(:otp_release)}, erts #{:erlang.system_info(:version)}"
  end

  @doc false
  def rss_bytes do
    with {:ok, text} <- File.read("/proc/self/status"),
         [_, kb] <- Regex.run(~r/VmRSS:\s+(\d+)\s+kB/, text) do
      String.to_integer(kb) * 1024
    else
      _ -> 0
    end
  end

  defp env!(name) do
    case System.get_env(name, "") do
      "" -> die(2, "TROUPE_CONFIG and TROUPE_EVENTS must be set (#{name} is not)")
      v -> v
    end
  end

  # Where the distributed nodes run (`TroupeChat.Placement`); a bad `TROUPE_NETNS` file, or
  # this node not on the coordinator's address, is a configuration error (exit 2).
  defp placement!(cfg) do
    case TroupeChat.Placement.load(TroupeChat.Distributed.net_nodes(cfg)) do
      {:ok, placement} ->
        want = TroupeChat.Placement.coordinator_addr(placement)

        case Node.self() |> Atom.to_string() |> String.split("@") do
          [_, ^want] -> placement
          _ -> die(2, "this node is #{Node.self()}, not on the coordinator's address #{want}")
        end

      {:error, msg} ->
        die(2, msg)
    end
  end

  defp die(code, msg) do
    IO.puts(:stderr, "elixir chat: " <> msg)
    System.halt(code)
  end

  # The injected crashes are expected by the thousand: keep their crash reports off stderr (as the
  # Troupe SUB's quiet panic hook and the Akka peer's `withLoggingEnabled(false)` do); every other
  # report is logged as usual.
  @doc false
  def quiet_injected_crashes do
    :logger.add_primary_filter(:troupe_chat_injected, {&__MODULE__.log_filter/2, nil})
  end

  @doc false
  def log_filter(%{msg: {:report, %{reason: reason}}}, _) do
    if injected?(reason), do: :stop, else: :ignore
  end

  def log_filter(%{msg: {:report, %{report: report}}}, _) when is_list(report) do
    if injected?(report[:reason]), do: :stop, else: :ignore
  end

  def log_filter(_, _), do: :ignore

  defp injected?({%TroupeChat.Poison{}, _stack}), do: true
  defp injected?(:killed), do: true
  defp injected?(_), do: false
end
