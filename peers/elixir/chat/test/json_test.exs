defmodule TroupeChat.JSONTest do
  use ExUnit.Case, async: true

  alias TroupeChat.JSON

  defp enc(term), do: JSON.encode_to_binary(term)

  describe "decode" do
    test "scalars" do
      assert JSON.decode("0") == {:ok, 0}
      assert JSON.decode("-12") == {:ok, -12}
      assert JSON.decode("9223372036854775807") == {:ok, 9_223_372_036_854_775_807}
      assert JSON.decode("1.5") == {:ok, 1.5}
      assert JSON.decode("-0.25e2") == {:ok, -25.0}
      assert JSON.decode("2E-3") == {:ok, 0.002}
      assert JSON.decode("1e2") == {:ok, 100.0}
      assert JSON.decode(" true ") == {:ok, true}
      assert JSON.decode("false") == {:ok, false}
      assert JSON.decode("null") == {:ok, nil}
      assert JSON.decode(~s("")) == {:ok, ""}
    end

    test "a config object and a schedule line" do
      text = ~s({"test_type":"throughput", "num_supervisor" : 1,\n "events":"amqp://h:5672/%2f","seed":1})

      assert JSON.decode(text) ==
               {:ok,
                %{
                  "test_type" => "throughput",
                  "num_supervisor" => 1,
                  "events" => "amqp://h:5672/%2f",
                  "seed" => 1
                }}

      line = ~s({"at_ms":300,"id":"f-0","kind":"kill","group":0,"slot":0,"restart":true})

      assert JSON.decode(line) ==
               {:ok,
                %{
                  "at_ms" => 300,
                  "id" => "f-0",
                  "kind" => "kill",
                  "group" => 0,
                  "slot" => 0,
                  "restart" => true
                }}
    end

    test "nesting" do
      assert JSON.decode(~s({"a":[1,[2,{}],{"b":null}],"c":{"d":[]}})) ==
               {:ok, %{"a" => [1, [2, %{}], %{"b" => nil}], "c" => %{"d" => []}}}

      assert JSON.decode("[ ]") == {:ok, []}
      assert JSON.decode("{ }") == {:ok, %{}}
    end

    test "string escapes" do
      assert JSON.decode(~S("a\"b\\c\/d\b\f\n\r\t")) == {:ok, "a\"b\\c/d\b\f\n\r\t"}
      assert JSON.decode(~S("\u00e9\u20AC")) == {:ok, "é€"}
      assert JSON.decode(~S("\ud83d\ude00")) == {:ok, "😀"}
      assert JSON.decode(~s("héllo 😀")) == {:ok, "héllo 😀"}
    end

    test "invalid texts are errors, not crashes" do
      for bad <- [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "+1",
            "tru",
            "nul",
            "\"abc",
            "\"a\nb\"",
            ~S("\x"),
            ~S("\u12"),
            ~S("\u12G4"),
            ~S("\ud800"),
            ~S("\udc00"),
            ~S("\ud800\u0041"),
            <<?", 0xFF, ?">>,
            "1 2",
            "[1] x",
            "NaN"
          ] do
        assert {:error, reason} = JSON.decode(bad), "accepted #{inspect(bad)}"
        assert is_binary(reason)
      end
    end
  end

  describe "encode" do
    test "scalars" do
      assert enc(nil) == "null"
      assert enc(true) == "true"
      assert enc(false) == "false"
      assert enc(42) == "42"
      assert enc(-7) == "-7"
      assert enc(1.5) == "1.5"
      assert enc(10.855) == "10.855"
      assert enc(:kill) == ~s("kill")
    end

    test "objects keep sorted keys, arrays their order" do
      assert enc(%{"b" => 1, :a => [1, "x", nil]}) == ~s({"a":[1,"x",null],"b":1})
      assert enc([]) == "[]"
      assert enc(%{}) == "{}"
    end

    test "string escaping" do
      assert enc("plain") == ~s("plain")
      assert enc(~s(q"b\\)) == ~S("q\"b\\")
      assert enc("\n\r\t\b\f") == ~S("\n\r\t\b\f")
      assert enc(<<0, 1, 0x1F>>) == ~S("\u0000\u0001\u001F")
      assert enc("é😀") == ~s("é😀")
      assert enc("a\u2028b\u2029") == ~S("a\u2028b\u2029")
      assert enc("/") == ~s("/")
    end

    test "round trip" do
      terms = [
        %{"run" => "smoke-chat", "ids" => ["f-0", "f-1"], "n" => 3, "x" => -0.5, "ok" => true, "none" => nil},
        ["\u0000\u001f\"\\ é 😀 \u2028", 1.0e-7, 123_456_789_012, []],
        %{"nested" => %{"deep" => [%{"k" => "v"}]}}
      ]

      for t <- terms do
        assert JSON.decode(enc(t)) == {:ok, t}
      end
    end

    test "every byte below 0x80 round-trips" do
      s = IO.iodata_to_binary(for c <- 0..127, do: c)
      assert JSON.decode(enc(s)) == {:ok, s}
    end

    test "unencodable terms raise" do
      assert_raise ArgumentError, fn -> JSON.encode({:tuple}) end
      assert_raise ArgumentError, fn -> JSON.encode(%{1 => 2}) end
    end
  end

  describe "events" do
    test "a rendered event line is valid JSON with the fields in order" do
      fields =
        TroupeChat.Events.render([{"id", {:raw, JSON.encode("f\"1")}}, {"target", "chat-0"}, {"count", 3}])

      line = IO.iodata_to_binary([?{, fields, ?}])
      assert line == ~S({"id":"f\"1","target":"chat-0","count":3})
      assert JSON.decode(line) == {:ok, %{"id" => "f\"1", "target" => "chat-0", "count" => 3}}
    end
  end

  describe "config" do
    test "defaults fill missing keys; a wrong type is refused" do
      assert {:ok, cfg, raw} = TroupeChat.Config.parse(~s({"deployment":"single","chats_per_sup":3}))

      assert cfg["chats_per_sup"] == 3 and cfg["clients_per_server"] == 5 and
               raw == %{"deployment" => "single", "chats_per_sup" => 3}

      assert {:error, msg} = TroupeChat.Config.parse(~s({"chats_per_sup":"3"}))
      assert msg =~ "chats_per_sup"
      assert cfg["lookup"] == "retry"
      assert {:ok, %{"lookup" => "park"}, _} = TroupeChat.Config.parse(~s({"lookup":"park"}))
      assert {:error, msg} = TroupeChat.Config.parse(~s({"lookup":"wait"}))
      assert msg =~ "lookup" and msg =~ "retry, park"
      assert {:error, _} = TroupeChat.Config.parse("[1]")
      assert {:error, _} = TroupeChat.Config.parse("{")
    end

    test "the schedule is read in time order" do
      text =
        ~s({"at_ms":900,"id":"b","kind":"kill","group":1,"slot":0}\n\n{"at_ms":300,"id":"a","kind":"error","group":0,"slot":0}\n)

      assert {:ok, [%{id: "a", at_ms: 300, kind: "error", group: 0}, %{id: "b"}]} =
               TroupeChat.Config.parse_schedule(text)

      assert {:error, "line 1: " <> _} = TroupeChat.Config.parse_schedule(~s({"at_ms":"x"}))
    end
  end
end
