defmodule TroupeChat.Config do
  @moduledoc """
  The chat config (docs/chat.md, the chat key table) and schedule (`TROUPE_SCHEDULE`, one action
  per line), read with `TroupeChat.JSON`. Missing keys keep the lab's defaults; a key of the
  wrong type or out of range is a configuration error (exit 2).
  """
  alias TroupeChat.JSON

  @defaults %{
    "test_type" => "throughput",
    "num_supervisor" => 1,
    "chats_per_sup" => 256,
    "clients_per_server" => 5,
    "fault_pause_ms" => 5000,
    "msg_type" => "error",
    "test_duration_secs" => 60,
    "warmup_s" => 5,
    "send_interval_ms" => 200,
    "retry_delay_ms" => 10,
    "retry_max" => 500,
    "lookup" => "retry",
    "stress_ms" => 100,
    "stress_mb" => 64,
    "deployment" => "distributed",
    "clients_per_process" => 10_000,
    "fault_phase" => "random",
    "events" => "file",
    "seed" => 1
  }

  # key => minimum, for the integer keys the peer uses
  @minimums %{
    "num_supervisor" => 1,
    "chats_per_sup" => 1,
    "clients_per_server" => 1,
    "test_duration_secs" => 1,
    "warmup_s" => 0,
    "send_interval_ms" => 1,
    "retry_delay_ms" => 1,
    "retry_max" => 1,
    "stress_ms" => 1,
    "stress_mb" => 1,
    "clients_per_process" => 1
  }

  @doc "The config from a JSON object text: `{:ok, cfg, raw_map}` or `{:error, reason}`."
  def parse(text) do
    with {:ok, raw} <- JSON.decode(text),
         true <- is_map(raw) || {:error, "the config is not a JSON object"},
         cfg = Map.merge(@defaults, raw),
         :ok <- check(cfg) do
      {:ok, cfg, raw}
    end
  end

  defp check(cfg) do
    bad = Enum.find(@minimums, fn {k, min} -> not (is_integer(cfg[k]) and cfg[k] >= min) end)

    cond do
      bad != nil ->
        {k, min} = bad
        {:error, "#{k} must be an integer >= #{min}, got #{inspect(cfg[k])}"}

      cfg["test_type"] not in ["throughput", "reconnection_time", "detection_time"] ->
        {:error,
         "test_type #{inspect(cfg["test_type"])} is not one of throughput, reconnection_time, detection_time"}

      cfg["lookup"] not in ["retry", "park"] ->
        {:error, "lookup #{inspect(cfg["lookup"])} is not one of retry, park"}

      cfg["deployment"] not in ["single", "distributed"] ->
        {:error, "deployment #{inspect(cfg["deployment"])} is not one of single, distributed"}

      true ->
        :ok
    end
  end

  @doc "Total chats and clients."
  def total_chats(cfg), do: cfg["num_supervisor"] * cfg["chats_per_sup"]
  def total_clients(cfg), do: total_chats(cfg) * cfg["clients_per_server"]

  @doc """
  The schedule's actions, `%{at_ms, id, kind, group}` sorted by `at_ms` (stable), from the
  text of `schedule.jsonl`; `{:error, reason}` naming the line on a bad one.
  """
  def parse_schedule(text) do
    text
    |> String.split("\n")
    |> Enum.with_index(1)
    |> Enum.reject(fn {l, _} -> String.trim(l) == "" end)
    |> Enum.reduce_while({:ok, []}, fn {l, n}, {:ok, acc} ->
      case JSON.decode(l) do
        {:ok, %{"at_ms" => at, "kind" => kind, "group" => g} = a}
        when is_integer(at) and at >= 0 and is_binary(kind) and is_integer(g) ->
          {:cont, {:ok, [%{at_ms: at, id: Map.get(a, "id"), kind: kind, group: g} | acc]}}

        {:ok, _} ->
          {:halt, {:error, "line #{n}: an action needs integer at_ms and group and a string kind"}}

        {:error, reason} ->
          {:halt, {:error, "line #{n}: #{reason}"}}
      end
    end)
    |> case do
      {:ok, acts} -> {:ok, acts |> Enum.reverse() |> Enum.sort_by(& &1.at_ms)}
      err -> err
    end
  end
end
