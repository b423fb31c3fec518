defmodule TroupeChat.Discovery do
  @moduledoc """
  The discovery server (seed 000 §4.2.2, "Elixir Implementation Details"): a `GenServer`
  registered under the `:global` name `:"chat-discovery"`, found by everyone through
  `:global.whereis_name/1` (no address is handed around). Its state is an immutable map, no
  ETS (fairness, seed 000 §4.3.1).

  Rules:
  1. `{:register, topic, chat}` maps the topic to the chat that registered last, monitors it
     (`Process.monitor`) and acknowledges with `:registered`; a replaced entry is demonitored.
  2. On a chat's `:DOWN` its entry is removed (unless a newer incarnation replaced it already).
  3. `{:lookup, topic, attempt, client}` answers `{:found, attempt, pid | nil}` at once: `nil`
     while the chat is restarting; the client retries after `retry_delay_ms` (as the Akka and
     Proto.Actor peers do; the lookup is not parked).
  4. `{:find, topic}` (a call, used by the injectors) returns the pid or `nil`.
  """
  use GenServer

  @name :"chat-discovery"

  def name, do: @name

  def start_link(_ \\ []), do: GenServer.start_link(__MODULE__, [], name: {:global, @name})

  @doc "The discovery server's pid, found by its global name (or `nil`)."
  def whereis do
    case :global.whereis_name(@name) do
      :undefined -> nil
      pid -> pid
    end
  end

  @impl true
  def init(_), do: {:ok, %{chats: %{}, by_ref: %{}}}

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

    {:noreply, %{s | chats: Map.put(s.chats, topic, {chat, ref}), by_ref: Map.put(by_ref, ref, topic)}}
  end

  def handle_cast({:lookup, topic, attempt, client}, s) do
    send(client, {:found, attempt, chat_of(s, topic)})
    {:noreply, s}
  end

  @impl true
  def handle_call({:find, topic}, _from, s), do: {:reply, chat_of(s, topic), s}

  @impl true
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

  defp chat_of(s, topic) do
    case s.chats do
      %{^topic => {pid, _}} -> pid
      _ -> nil
    end
  end
end
