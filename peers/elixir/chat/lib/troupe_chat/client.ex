defmodule TroupeChat.Client do
  @moduledoc """
  A chat client (seed 000 §4.2): a `GenServer` that resolves its chat through discovery, monitors
  it (`Process.monitor`), joins it and, in the throughput test, posts every `send_interval_ms`.

  Rules:
  1. Resolve, monitor, then join. Every resolve is a numbered attempt; answers to an older
     attempt are ignored. The first `:joined` counts the client as set up.
  2. The `:DOWN` of the chat it is joined to is a detected failure: `fault_detected {id: null,
     target, by}`, then it re-resolves at once. A failed attempt (no chat registered, or the chat
     found is already dead) is retried after `retry_delay_ms` (`Process.send_after`, fixed
     delay, no backoff), at most `retry_max` times in a row; then it gives up (`gave_up`, an
     error). A rejoin after a detection emits `reconnected {target, by, ms}`.
  3. Only a connected client posts, on a `Process.send_after` tick armed at absolute times
     (`abs: true`, so the period does not drift); every `{:broadcast, ...}` received adds one to
     the run's received counter.
  """
  use GenServer

  alias TroupeChat.{Discovery, Events, Run}

  @received 1

  def start({index, chat, run}), do: GenServer.start(__MODULE__, {index, chat, run})

  @impl true
  def init({index, chat, run}) do
    s = %{
      run: run,
      counters: run.counters,
      topic: Run.topic(chat),
      # every event of this client carries these two fields, rendered once
      fields: ~s("target":"chat-#{chat}","by":"c#{index}"),
      post: {:post, index, "hello from c#{index}"},
      discovery: Discovery.whereis(),
      attempt: 0,
      tries: 0,
      chat: nil,
      connected: false,
      ever_joined: false,
      lost_at: nil,
      gave_up: false,
      next_tick: nil
    }

    s =
      if run.clients_send do
        next = System.monotonic_time(:millisecond) + run.send_interval
        Process.send_after(self(), :tick, next, abs: true)
        %{s | next_tick: next}
      else
        s
      end

    {:ok, s, {:continue, :resolve}}
  end

  @impl true
  def handle_continue(:resolve, s), do: {:noreply, resolve(s)}

  @impl true
  def handle_info({:broadcast, _from, _text}, s) do
    :counters.add(s.counters, @received, 1)
    {:noreply, s}
  end

  def handle_info(:tick, s) do
    if s.connected, do: GenServer.cast(elem(s.chat, 0), s.post)
    next = s.next_tick + s.run.send_interval
    Process.send_after(self(), :tick, next, abs: true)
    {:noreply, %{s | next_tick: next}}
  end

  def handle_info({:found, attempt, chat}, %{attempt: attempt, connected: false} = s) do
    case chat do
      nil ->
        {:noreply, retry_later(s)}

      pid ->
        ref = Process.monitor(pid)
        GenServer.cast(pid, {:join, self(), attempt})
        {:noreply, %{s | chat: {pid, ref}}}
    end
  end

  def handle_info({:joined, attempt}, %{attempt: attempt, connected: false, chat: {_, _}} = s) do
    if s.lost_at != nil do
      ms = (System.monotonic_time(:microsecond) - s.lost_at) / 1000
      Events.emit_raw("reconnected", [s.fields, ~s(,"ms":), :erlang.float_to_binary(ms, [:short])])
    end

    unless s.ever_joined, do: Run.count(s.run, :joined)
    Run.count(s.run, :connected)
    {:noreply, %{s | connected: true, tries: 0, lost_at: nil, ever_joined: true}}
  end

  def handle_info({:retry, attempt}, %{attempt: attempt, connected: false, gave_up: false} = s),
    do: {:noreply, resolve(s)}

  def handle_info({:DOWN, ref, :process, _pid, _reason}, %{chat: {_, ref}} = s) do
    s = %{s | chat: nil}

    if s.connected do
      Events.emit_raw("fault_detected", [~s("id":null,), s.fields])
      Run.uncount(s.run, :connected)
      s = %{s | connected: false, lost_at: System.monotonic_time(:microsecond), tries: 0}
      {:noreply, resolve(s)}
    else
      # The chat found was already dead (discovery had not seen its :DOWN yet).
      {:noreply, retry_later(s)}
    end
  end

  # Answers to an attempt given up on, or to a state that moved on.
  def handle_info(_other, s), do: {:noreply, s}

  defp resolve(s) do
    s = %{s | attempt: s.attempt + 1, tries: s.tries + 1}

    case s.discovery do
      nil ->
        retry_later(%{s | discovery: Discovery.whereis()})

      d ->
        GenServer.cast(d, {:lookup, s.topic, s.attempt, self()})
        s
    end
  end

  defp retry_later(s) do
    s =
      case s.chat do
        {_, ref} ->
          Process.demonitor(ref, [:flush])
          %{s | chat: nil}

        nil ->
          s
      end

    cond do
      s.tries < s.run.retry_max ->
        Process.send_after(self(), {:retry, s.attempt}, s.run.retry_delay)
        s

      s.gave_up ->
        s

      true ->
        Run.count(s.run, :errors)
        Events.emit_raw("gave_up", [s.fields, ~s(,"tries":), Integer.to_string(s.tries)])
        %{s | gave_up: true}
    end
  end
end
