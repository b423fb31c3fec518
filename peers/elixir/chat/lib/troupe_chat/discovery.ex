defmodule TroupeChat.Discovery do
  @moduledoc """
  The discovery server (seed 000 §4.2.2, "Elixir Implementation Details"): a `GenServer`
  registered under the `:global` name `:"chat-discovery"`, found by everyone through
  `:global.whereis_name/1` (no address is handed around). Its state is an immutable map, no
  ETS (fairness, seed 000 §4.3.1).

  Rules (docs/chat.md, "Behaviour contract", rules 2-3):
  1. `{:register, topic, chat}` maps the topic to the chat that registered last, monitors it
     (`Process.monitor`) and acknowledges with `:registered`; a replaced entry is demonitored.
  2. On a chat's `:DOWN` its entry is removed (unless a newer incarnation replaced it already).
  3. `{:lookup, topic, attempt, client}` answers `{:found, attempt, pid}` at once when the topic
     has a live chat. When it has none (the chat is restarting), the `lookup` key decides:
     - `"retry"` (the default, seed 000's behaviour, as the Akka and Proto.Actor peers):
       `{:found, attempt, nil}` at once; the client retries after `retry_delay_ms`;
     - `"park"`: the lookup is held and answered `{:found, attempt, pid}` the moment the chat
       registers again, or `{:found, attempt, nil}` `retry_delay_ms` after the first lookup
       held for that topic, whichever comes first: one `Process.send_after` timer per topic
       and holding, numbered, so a timer of an earlier holding never answers a later one.
  4. `{:find, topic}` (a call, used by the injectors) returns the pid or `nil`.
  """
  use GenServer

  @name :"chat-discovery"

  def name, do: @name

  @doc """
  Starts discovery under its global name. `opts`: `lookup` (`"retry"`, the default, or
  `"park"`) and `park_ms` (how long a held lookup waits at most: the run's `retry_delay_ms`).
  """
  def start_link(opts \\ []) do
    lookup = Keyword.get(opts, :lookup, "retry")
    park_ms = Keyword.get(opts, :park_ms, 10)
    GenServer.start_link(__MODULE__, {lookup, park_ms}, name: {:global, @name})
  end

  @doc "The discovery server's pid, found by its global name (or `nil`)."
  def whereis do
    case :global.whereis_name(@name) do
      :undefined -> nil
      pid -> pid
    end
  end

  @impl true
  def init({lookup, park_ms}) when lookup in ["retry", "park"] and is_integer(park_ms) and park_ms > 0 do
    # parked: topic => {holding, [{attempt, client}]} (newest first); holdings: the last number
    {:ok, %{chats: %{}, by_ref: %{}, park: lookup == "park", park_ms: park_ms, parked: %{}, holdings: 0}}
  end

  @impl true
  def handle_cast({:register, topic, chat}, s) do
    ref = Process.monitor(chat)
    send(chat, :registered)

    by_ref =
      case s.chats do
        %{^topic => {_old, old_ref}} ->
          Process.demonitor(old_ref, [:flush])
          Map.delete(s.by_ref, old_ref)

        _ ->
          s.by_ref
      end

    # park (rule 3): the lookups held for this topic get the chat that just registered.
    {held, parked} = Map.pop(s.parked, topic)

    with {_holding, waiting} <- held do
      for {attempt, client} <- Enum.reverse(waiting), do: send(client, {:found, attempt, chat})
    end

    {:noreply,
     %{s | chats: Map.put(s.chats, topic, {chat, ref}), by_ref: Map.put(by_ref, ref, topic), parked: parked}}
  end

  def handle_cast({:lookup, topic, attempt, client}, s) do
    case chat_of(s, topic) do
      nil when s.park ->
        {:noreply, hold(s, topic, attempt, client)}

      chat ->
        send(client, {:found, attempt, chat})
        {:noreply, s}
    end
  end

  @impl true
  def handle_call({:find, topic}, _from, s), do: {:reply, chat_of(s, topic), s}

  @impl true
  def handle_info({:expire, topic, holding}, s) do
    case s.parked do
      %{^topic => {^holding, waiting}} ->
        for {attempt, client} <- Enum.reverse(waiting), do: send(client, {:found, attempt, nil})
        {:noreply, %{s | parked: Map.delete(s.parked, topic)}}

      _ ->
        {:noreply, s}
    end
  end

  def handle_info({:DOWN, ref, :process, _pid, _reason}, s) do
    case Map.pop(s.by_ref, ref) do
      {nil, _} ->
        {:noreply, s}

      {topic, by_ref} ->
        chats =
          case s.chats do
            %{^topic => {_, ^ref}} -> Map.delete(s.chats, topic)
            _ -> s.chats
          end

        {:noreply, %{s | chats: chats, by_ref: by_ref}}
    end
  end

  # `park` (rule 3): the first lookup held for a topic starts a holding and its timer.
  defp hold(s, topic, attempt, client) do
    case s.parked do
      %{^topic => {holding, waiting}} ->
        %{s | parked: Map.put(s.parked, topic, {holding, [{attempt, client} | waiting]})}

      _ ->
        holding = s.holdings + 1
        Process.send_after(self(), {:expire, topic, holding}, s.park_ms)
        %{s | parked: Map.put(s.parked, topic, {holding, [{attempt, client}]}), holdings: holding}
    end
  end

  defp chat_of(s, topic) do
    case s.chats do
      %{^topic => {pid, _}} -> pid
      _ -> nil
    end
  end
end
