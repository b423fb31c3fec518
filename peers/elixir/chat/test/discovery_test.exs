defmodule TroupeChat.DiscoveryTest do
  # Discovery runs under its one :global name, so these tests run one at a time.
  use ExUnit.Case, async: false

  alias TroupeChat.Discovery

  # Every wait has a deadline; no assertion can fail because the machine is slow: they rest on
  # the order in which one process's messages reach another (Erlang keeps it between any two
  # processes), and on timers never firing early.
  @limit 10_000
  @year 365 * 86_400_000

  defp start(lookup, park_ms), do: start_supervised!({Discovery, [lookup: lookup, park_ms: park_ms]})

  # A stand-in chat: a process that stays until the test ends or kills it.
  defp chat do
    spawn(fn ->
      receive do
        :never -> :ok
      end
    end)
  end

  defp lookup(d, attempt), do: GenServer.cast(d, {:lookup, "chat-0", attempt, self()})
  defp register(d, pid), do: GenServer.cast(d, {:register, "chat-0", pid})

  # Waits (bounded) until discovery has handled the chat's :DOWN and no longer lists it.
  defp forgotten(d, deadline \\ nil) do
    deadline = deadline || System.monotonic_time(:millisecond) + @limit

    cond do
      GenServer.call(d, {:find, "chat-0"}) == nil -> :ok
      System.monotonic_time(:millisecond) > deadline -> flunk("discovery never saw the chat's :DOWN")
      true -> forgotten(d, deadline)
    end
  end

  test "retry answers not registered at once, even when the chat registers right after" do
    # A year: were the lookup held, only the registration could answer it.
    d = start("retry", @year)
    c = chat()
    lookup(d, 1)
    register(d, c)
    assert_receive {:found, 1, nil}, @limit
    refute_received {:found, 1, _}
    lookup(d, 2)
    assert_receive {:found, 2, ^c}, @limit
  end

  test "park answers a held lookup with the chat the moment it registers" do
    d = start("park", @year)
    first = chat()
    lookup(d, 1)
    lookup(d, 2)
    register(d, first)
    # Both held lookups get the chat, and nothing said "not registered" before it.
    assert_receive {:found, 1, ^first}, @limit
    assert_receive {:found, 2, ^first}, @limit
    refute_received {:found, _, nil}
    # The chat dies and restarts: a lookup in between is held for the new incarnation.
    Process.exit(first, :kill)
    forgotten(d)
    second = chat()
    lookup(d, 3)
    register(d, second)
    assert_receive {:found, 3, ^second}, @limit
  end

  test "park answers not registered once the limit passes; an earlier holding's timer never ends a later one" do
    limit = 400
    d = start("park", limit)
    c = chat()
    first_held = System.monotonic_time(:millisecond)
    lookup(d, 1)
    register(d, c)
    assert_receive {:found, 1, ^c}, @limit
    Process.exit(c, :kill)
    forgotten(d)
    # Half the limit later (a gap, not a wait for anything), a new holding: the first holding's
    # timer fires about half-way through it and must not answer it; only its own timer may,
    # never before `limit` after it began.
    Process.sleep(max(0, first_held + div(limit, 2) - System.monotonic_time(:millisecond)))
    asked = System.monotonic_time(:millisecond)
    lookup(d, 2)
    assert_receive {:found, 2, nil}, @limit
    waited = System.monotonic_time(:millisecond) - asked
    assert waited >= limit, "answered after #{waited} ms, before the #{limit} ms hold"
  end
end
