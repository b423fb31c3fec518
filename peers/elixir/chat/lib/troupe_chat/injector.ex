defmodule TroupeChat.Injector do
  @moduledoc """
  The fault injector of one chat (seed 000: one injector per chat): a process holding that chat's
  actions, each fired at `start + at_ms` by `Process.send_after` (absolute monotonic time).

  Per action it asks discovery for the chat's current incarnation (`{:find, topic}`), emits
  `fault_injected {id, target, kind}` and then hurts it: `kill` is `Process.exit(pid, :kill)`,
  `error` the poison message it crashes on, `cpu`/`ram` the stress message. An action whose chat
  is not registered at that instant (restarting) is skipped and counted. The process ends after
  its last action.
  """
  use GenServer

  alias TroupeChat.{Discovery, Events, JSON, Run}

  @doc "Starts the injector of `chat` for `actions` (sorted by `at_ms`); `start_ms` is monotonic."
  def start({chat, actions, start_ms, run, stress}),
    do: GenServer.start(__MODULE__, {chat, actions, start_ms, run, stress})

  @impl true
  def init({chat, actions, start_ms, run, stress}) do
    s = %{
      topic: Run.topic(chat),
      actions: actions,
      start_ms: start_ms,
      run: run,
      stress: stress,
      discovery: Discovery.whereis()
    }

    {:ok, arm(s)}
  end

  defp arm(%{actions: [a | _]} = s) do
    Process.send_after(self(), :fire, s.start_ms + a.at_ms, abs: true)
    s
  end

  defp arm(s), do: s

  @impl true
  def handle_info(:fire, %{actions: [a | rest]} = s) do
    case GenServer.call(s.discovery, {:find, s.topic}, 5_000) do
      nil ->
        Run.count(s.run, :skipped)

      pid ->
        # Stamped before the fault, so no detection can precede it.
        Events.emit("fault_injected", [
          {"id", {:raw, JSON.encode(a.id)}},
          {"target", s.topic},
          {"kind", a.kind}
        ])

        hurt(a.kind, pid, s.stress)
        Run.count(s.run, :injected)
        if a.kind in ["kill", "error"], do: Run.count(s.run, :crashes)
    end

    s = arm(%{s | actions: rest})
    if rest == [], do: {:stop, :normal, s}, else: {:noreply, s}
  end

  defp hurt("kill", pid, _), do: Process.exit(pid, :kill)
  defp hurt("error", pid, _), do: GenServer.cast(pid, :poison)
  defp hurt("cpu", pid, {cpu_ms, _}), do: GenServer.cast(pid, {:stress, cpu_ms, 0})
  defp hurt("ram", pid, {_, ram_mb}), do: GenServer.cast(pid, {:stress, 0, ram_mb})
end
