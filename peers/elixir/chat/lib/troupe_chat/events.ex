defmodule TroupeChat.Events do
  @moduledoc """
  The event sink (shared/spec/events.md): every process builds its own line, stamped with the
  wall clock when it emits, and hands it to one writer process; no emitter ever waits.

  Rules:
  1. A line is `{"ts_us":..,"run":..,"rt":"elixir","node":..,"ev":..,<fields>}` and a newline;
     fields keep the order they are given in.
  2. The buffer is bounded: an atomic count of lines handed over but not yet written; a line
     that finds `@limit` of them waiting is dropped and counted (`run_finished.dropped_events`).
  3. The writer (a process at high priority, as a dedicated writer thread) batches lines and
     writes at least every `@flush_ms` and at exit.
  4. `finish/1` writes `run_finished` after every line already handed over and closes the file;
     lines emitted after that are ignored, so `run_finished` is the last line.
  5. `TROUPE_EVENTS` may be a file path or an `amqp://` URL. For `amqp://` the writer owns the
     connection (`:troupe_amqp`, the Erlang peers' own AMQP 0-9-1 publisher in
     `peers/erlang/common/amqp`, compiled into this app): each line is one message to the
     exchange `troupe.events`, routing key = the run id, published in order by this one process.
     `start/4` fails naming the URL (password hidden) when the broker cannot be reached;
     `finish/1` returns `:ok` only once the broker confirmed every line, `run_finished`
     included, and `{:error, reason}` when a line was refused, unroutable or not confirmed in
     30 s, or the connection was lost.

  The sink's settings are in `:persistent_term` (read by every emitting process, written once).
  """
  use GenServer

  alias TroupeChat.JSON

  @limit 65_536
  @flush_ms 200
  @flush_bytes 65_536
  # :counters slots
  @pending 1
  @dropped 2
  @stopped 3

  @doc "Starts the writer appending to `path` (or publishing to an `amqp://` URL); every line carries `run`, `rt` and `node`."
  def start(path, run, rt, node) do
    head =
      IO.iodata_to_binary([
        ~s("run":),
        JSON.string(run),
        ~s(,"rt":),
        JSON.string(rt),
        ~s(,"node":),
        JSON.string(node)
      ])

    counters = :counters.new(3, [:write_concurrency])

    with {:ok, pid} <- GenServer.start(__MODULE__, {path, run, counters}) do
      :persistent_term.put(__MODULE__, {pid, head, counters})
      {:ok, pid}
    end
  end

  @doc "Emits one event with `fields`, a list of `{key, value}` pairs (values JSON-encoded, or `{:raw, iodata}`)."
  def emit(ev, fields) when is_list(fields), do: emit_raw(ev, render(fields))

  @doc "Emits one event whose fields are already rendered (`\"k\":v,...`, iodata; may be empty)."
  def emit_raw(ev, fields) do
    {pid, head, counters} = :persistent_term.get(__MODULE__)

    if :counters.get(counters, @stopped) == 0 do
      :counters.add(counters, @pending, 1)

      if :counters.get(counters, @pending) > @limit do
        :counters.sub(counters, @pending, 1)
        :counters.add(counters, @dropped, 1)
      else
        send(pid, {:line, line(head, ev, fields)})
      end
    end

    :ok
  end

  @doc "Renders `{key, value}` pairs as a JSON object's inside, in order."
  def render(fields) do
    Enum.map_intersperse(fields, ?,, fn
      {k, {:raw, v}} -> [JSON.string(to_string(k)), ?:, v]
      {k, v} -> [JSON.string(to_string(k)), ?:, JSON.encode(v)]
    end)
  end

  defp line(head, ev, fields) do
    tail = if fields == "" or fields == [], do: "}\n", else: [?,, fields, "}\n"]

    IO.iodata_to_binary([
      ~s({"ts_us":),
      Integer.to_string(System.os_time(:microsecond)),
      ?,,
      head,
      ~s(,"ev":"),
      ev,
      ?",
      tail
    ])
  end

  @doc """
  Writes `run_finished {dropped_events, <fields>}` last (rule 4) and closes the file; returns
  `:ok` or `{:error, reason}` when a write failed at any point.
  """
  def finish(fields) do
    {pid, head, counters} = :persistent_term.get(__MODULE__)
    :counters.put(counters, @stopped, 1)
    GenServer.call(pid, {:finish, head, fields}, 60_000)
  end

  # ------------------------------------------------------------------------------------------
  # The writer

  @impl true
  def init({path, run, counters}) do
    # The writer stands for the other runtimes' writer thread: at the BEAM's normal priority it
    # would get one time slice in 50,000 when every client is runnable (a detection burst) and
    # the bounded buffer would overflow; at high priority it keeps up, as an OS thread does.
    Process.flag(:priority, :high)

    case open_sink(path, run) do
      {:ok, sink} ->
        Process.send_after(self(), :flush, @flush_ms)
        {:ok, %{sink: sink, counters: counters, buf: [], size: 0, error: nil}}

      {:error, reason} ->
        {:stop, reason}
    end
  end

  defp open_sink("amqp://" <> _ = url, run) do
    case :troupe_amqp.open(String.to_charlist(url), String.to_charlist(run)) do
      {:ok, conn} -> {:ok, {:amqp, conn}}
      {:error, text} -> {:error, List.to_string(text)}
    end
  end

  defp open_sink(path, _run) do
    case :file.open(String.to_charlist(path), [:append, :binary, :raw]) do
      {:ok, fd} -> {:ok, {:file, fd}}
      {:error, reason} -> {:error, "cannot open #{path}: #{:file.format_error(reason)}"}
    end
  end

  @impl true
  def handle_info({:line, bin}, s) do
    :counters.sub(s.counters, @pending, 1)
    s = %{s | buf: [s.buf | bin], size: s.size + byte_size(bin)}
    {:noreply, if(s.size >= @flush_bytes, do: flush(s), else: s)}
  end

  def handle_info(:flush, s) do
    Process.send_after(self(), :flush, @flush_ms)
    {:noreply, s |> flush() |> poll()}
  end

  @impl true
  def handle_call({:finish, head, fields}, _from, s) do
    s = drain(s)
    dropped = :counters.get(s.counters, @dropped)
    last = line(head, "run_finished", render([{"dropped_events", dropped} | fields]))
    s = flush(%{s | buf: [s.buf | last]})
    closed = close(s.sink)

    reply =
      cond do
        s.error != nil -> {:error, s.error}
        match?({:error, why} when is_binary(why), closed) -> closed
        closed != :ok -> {:error, inspect(closed)}
        true -> :ok
      end

    {:stop, :normal, reply, s}
  end

  # Every line already in the mailbox goes before run_finished.
  defp drain(s) do
    receive do
      {:line, bin} ->
        :counters.sub(s.counters, @pending, 1)
        drain(%{s | buf: [s.buf | bin], size: s.size + byte_size(bin)})
    after
      0 -> s
    end
  end

  defp flush(%{size: 0, buf: []} = s), do: s

  defp flush(s) do
    case s.sink do
      {:file, fd} ->
        case :file.write(fd, s.buf) do
          :ok -> %{s | buf: [], size: 0}
          {:error, reason} -> %{s | buf: [], size: 0, error: s.error || :file.format_error(reason)}
        end

      {:amqp, conn} ->
        case :troupe_amqp.publish_iodata(conn, s.buf) do
          {:ok, conn} ->
            %{s | sink: {:amqp, conn}, buf: [], size: 0}

          {:error, why, conn} ->
            %{s | sink: {:amqp, conn}, buf: [], size: 0, error: s.error || amqp_error(conn, why)}
        end
    end
  end

  # While idle, take the broker's confirms (and notice a broker that went away).
  defp poll(%{sink: {:amqp, conn}} = s) do
    conn = :troupe_amqp.poll(conn)

    case :troupe_amqp.error_text(conn) do
      :none -> %{s | sink: {:amqp, conn}}
      why -> %{s | sink: {:amqp, conn}, error: s.error || amqp_error(conn, why)}
    end
  end

  defp poll(s), do: s

  defp close({:file, fd}), do: :file.close(fd)

  defp close({:amqp, conn}) do
    reply =
      case :troupe_amqp.confirm(conn, 30_000) do
        {:ok, _} -> :ok
        {:error, why, conn} -> {:error, amqp_error(conn, why)}
      end

    :troupe_amqp.close(conn)
    reply
  end

  defp amqp_error(conn, why), do: "amqp publisher to #{:troupe_amqp.url(conn)}: #{why}"
end
