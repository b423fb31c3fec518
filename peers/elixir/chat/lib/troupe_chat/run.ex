defmodule TroupeChat.Run do
  @moduledoc """
  What every process of one run is started with: the settings the actors need and the harness's
  counters (`:counters`, OTP's atomic arrays; the equivalent of the Troupe SUB's `AtomicU64`s
  and the other peers' atomics). The counters are instrumentation read by the orchestrator;
  no chat state lives in shared memory (fairness, seed 000 §4.3.1): members and the discovery
  map are each process's own immutable data.
  """
  defstruct [:counters, :starts, :send_interval, :clients_send, :retry_delay, :retry_max]

  @slots %{
    received: 1,
    joined: 2,
    registered: 3,
    errors: 4,
    injected: 5,
    skipped: 6,
    crashes: 7,
    connected: 8
  }

  def new(cfg) do
    %__MODULE__{
      counters: :counters.new(map_size(@slots), [:write_concurrency]),
      # one slot per chat: how many times it was started
      starts: :counters.new(TroupeChat.Config.total_chats(cfg), [:atomics]),
      send_interval: cfg["send_interval_ms"],
      clients_send: cfg["test_type"] == "throughput",
      retry_delay: cfg["retry_delay_ms"],
      retry_max: cfg["retry_max"]
    }
  end

  def topic(index), do: "chat-" <> Integer.to_string(index)

  def count(%__MODULE__{counters: c}, slot), do: :counters.add(c, Map.fetch!(@slots, slot), 1)
  def uncount(%__MODULE__{counters: c}, slot), do: :counters.sub(c, Map.fetch!(@slots, slot), 1)
  def get(%__MODULE__{counters: c}, slot), do: :counters.get(c, Map.fetch!(@slots, slot))

  @doc "Restarts so far: starts of every chat beyond its first."
  def restarts(%__MODULE__{starts: s}) do
    %{size: n} = :counters.info(s)
    Enum.reduce(1..n, 0, fn i, acc -> acc + max(:counters.get(s, i) - 1, 0) end)
  end

  @doc "Counts a start of chat `index` and returns how many came before it (0 on the first)."
  def next_incarnation(%__MODULE__{starts: s}, index) do
    :counters.add(s, index + 1, 1)
    :counters.get(s, index + 1) - 1
  end
end
