defmodule TroupeChat.PlacementTest do
  # The reader of the lab's namespace file (TroupeChat.Placement, rules 2 and 3).
  use ExUnit.Case, async: true

  alias TroupeChat.Placement

  @names ["server-0", "clients-0", "clients-1"]

  defp file(nodes) do
    TroupeChat.JSON.encode(%{
      "coordinator" => %{"netns" => "tl-ab-c", "addr" => "10.232.0.2"},
      "nodes" => nodes
    })
    |> IO.iodata_to_binary()
  end

  defp node(i, name),
    do: %{"index" => i, "name" => name, "netns" => "tl-ab-#{i}", "addr" => "10.232.#{i + 1}.2"}

  defp good, do: Enum.with_index(@names, fn name, i -> node(i, name) end)

  test "rule_2_a_file_naming_the_chats_nodes_in_order_places_each_one" do
    assert {:ok, p} = Placement.parse(file(good()), @names)
    assert Placement.coordinator_addr(p) == "10.232.0.2"
    assert Placement.addr(p, "clients-1") == "10.232.3.2"
    assert p.nodes["server-0"].netns == "tl-ab-0"
  end

  test "rule_2_a_missing_extra_or_reordered_node_is_refused" do
    assert {:error, msg} = Placement.parse(file(Enum.take(good(), 2)), @names)
    assert msg =~ "lists 2 nodes; this config has 3"
    assert {:error, msg} = Placement.parse(file(Enum.reverse(good())), @names)
    assert msg =~ "nodes[0].index is 2, expected 0"
    swapped = [node(0, "clients-0"), node(1, "server-0"), node(2, "clients-1")]
    assert {:error, msg} = Placement.parse(file(swapped), @names)
    assert msg =~ "nodes[0].name is \"clients-0\", expected \"server-0\""
  end

  test "rule_2_bad_addresses_and_namespace_names_are_refused" do
    bad_addr = List.replace_at(good(), 1, %{node(1, "clients-0") | "addr" => "10.232.2"})
    assert {:error, msg} = Placement.parse(file(bad_addr), @names)
    assert msg =~ "nodes[1].addr \"10.232.2\" is not an IPv4 address"
    bad_ns = List.replace_at(good(), 2, %{node(2, "clients-1") | "netns" => "../etc"})
    assert {:error, msg} = Placement.parse(file(bad_ns), @names)
    assert msg =~ "nodes[2].netns \"../etc\" is not a namespace name"
    assert {:error, msg} = Placement.parse(~s({"nodes": []}), @names)
    assert msg =~ "coordinator needs string fields"
    assert {:error, _} = Placement.parse("[1]", @names)
    assert {:error, _} = Placement.parse("{", @names)
  end

  test "rule_1_without_the_file_every_node_is_on_loopback" do
    assert {:ok, %{host: ~c"127.0.0.1"}, [~c"-kernel", ~c"inet_dist_use_interface", ~c"{127,0,0,1}"]} =
             Placement.peer_options(:loopback, "server-0")
  end

  test "rule_3_a_node_in_a_namespace_is_started_with_ip_netns_exec_on_its_address" do
    {:ok, p} = Placement.parse(file(good()), @names)

    case Placement.peer_options(p, "clients-0") do
      {:ok, %{host: ~c"10.232.2.2", exec: {ip, [~c"netns", ~c"exec", ~c"tl-ab-1", sp | rest]}} = opts,
       interface} ->
        assert List.to_string(ip) =~ ~r{/ip$}
        assert List.to_string(sp) =~ ~r{/setpriv$}
        assert [~c"--pdeathsig", ~c"KILL", erl] = rest
        assert List.to_string(erl) =~ ~r{/erl$}
        # rule 5: controlled over its standard I/O, not over the network
        assert opts.connection == :standard_io
        assert interface == [~c"-kernel", ~c"inet_dist_use_interface", ~c"{10,232,2,2}"]

      {:error, msg} ->
        # A machine without iproute2: the refusal names what is missing.
        assert msg =~ ~r/(ip \(iproute2\)|setpriv \(util-linux\)) not found/
    end
  end
end
