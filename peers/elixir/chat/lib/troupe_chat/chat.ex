defmodule TroupeChat.Poison do
  @moduledoc "The exception a chat raises on the injected poison message (`msg_type = error`)."
  defexception [:topic]

  @impl true
  def message(%{topic: t}), do: "#{t}: poison message (injected fault)"
end

defmodule TroupeChat.Chat do
  @moduledoc """
  A chat room (seed 000 §4.2): a `GenServer` child of its group's one_for_one `Supervisor`.

  Rules:
  1. `init/1` sends the registration to discovery before the chat serves its mailbox, so it takes
     no client before it is findable. Each start is a fresh process (new pid, no members); the
     2nd and later starts of chat c emit `restarted {target, attempt}`.
  2. `{:join, client, attempt}` adds the client once and answers `{:joined, attempt}`.
  3. `{:post, from, text}` is broadcast to every member as `{:broadcast, from, text}`.
  4. Faults: `:poison` raises `TroupeChat.Poison` (the process crashes and the supervisor starts
     a fresh one); `{:stress, cpu_ms, ram_mb}` holds the handler (spins, or allocates and
     touches `ram_mb` MiB); `kill` is `Process.exit(pid, :kill)` by the injector (no chat code
     runs).
  """
  use GenServer, restart: :permanent

  alias TroupeChat.{Discovery, Events, Run}

  def start_link({index, run}), do: GenServer.start_link(__MODULE__, {index, run})

  def child_spec({index, _run} = arg),
    do: %{id: index, start: {__MODULE__, :start_link, [arg]}, restart: :permanent, type: :worker}

  @impl true
  def init({index, run}) do
    topic = Run.topic(index)
    incarnation = Run.next_incarnation(run, index)

    if incarnation > 0 do
      Events.emit("restarted", [{"target", topic}, {"attempt", incarnation}])
    end

    case Discovery.whereis() do
      nil ->
        {:stop, "#{topic}: discovery is not registered"}

      discovery ->
        GenServer.cast(discovery, {:register, topic, self()})
        {:ok, %{topic: topic, run: run, first: incarnation == 0, members: [], member_set: MapSet.new()}}
    end
  end

  @impl true
  def handle_cast({:join, client, attempt}, s) do
    s =
      if MapSet.member?(s.member_set, client),
        do: s,
        else: %{s | members: [client | s.members], member_set: MapSet.put(s.member_set, client)}

    send(client, {:joined, attempt})
    {:noreply, s}
  end

  def handle_cast({:post, from, text}, s) do
    msg = {:broadcast, from, text}
    Enum.each(s.members, &send(&1, msg))
    {:noreply, s}
  end

  def handle_cast(:poison, s), do: raise(TroupeChat.Poison, topic: s.topic)

  def handle_cast({:stress, cpu_ms, ram_mb}, s) do
    stress(cpu_ms, ram_mb)
    {:noreply, s}
  end

  @impl true
  def handle_info(:registered, s) do
    if s.first, do: Run.count(s.run, :registered)
    {:noreply, s}
  end

  @doc "Spins `cpu_ms`, then allocates `ram_mb` MiB, writing every byte, and frees it."
  def stress(cpu_ms, ram_mb) do
    if cpu_ms > 0, do: spin(System.monotonic_time(:millisecond) + cpu_ms, 1)

    if ram_mb > 0 do
      block = :binary.copy(<<1>>, ram_mb * 1024 * 1024)
      _ = :binary.last(block)
      :erlang.garbage_collect()
    end

    :ok
  end

  defp spin(until, x) do
    x =
      Enum.reduce(1..1000, x, fn i, acc ->
        rem(acc * 6_364_136_223_846_793_005 + i, 18_446_744_073_709_551_616)
      end)

    if System.monotonic_time(:millisecond) < until, do: spin(until, x), else: x
  end
end
