// Owns the lab event stream of one Akka peer process (events.md): builds each JSON line with the
// common fields at the moment of the event, and hands it to a dedicated writer thread through a
// bounded queue. Exists so that no actor ever blocks on I/O: a full queue drops the line and
// counts it, and the count is reported in the final `run_finished` event.
package troupe.peers.akka.common;

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

public final class EventWriter {
    /** Lines the queue holds before new events are dropped (and counted). */
    public static final int CAPACITY = 65_536;
    private static final String STOP = new String("stop"); // identity sentinel

    private final ArrayBlockingQueue<String> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong writeErrors = new AtomicLong();
    private final String prefixTail; // ,"run":..,"rt":..,"node":..,"ev":
    private final Writer out;
    private final Thread thread;
    private volatile LongFunction<String> lastLine;

    private EventWriter(Writer out, String run, String rt, String node) {
        this.out = out;
        StringBuilder b = new StringBuilder(",\"run\":");
        Json.quote(b, run).append(",\"rt\":");
        Json.quote(b, rt).append(",\"node\":");
        Json.quote(b, node).append(",\"ev\":");
        this.prefixTail = b.toString();
        this.thread = new Thread(this::loop, "troupe-event-writer");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * Opens the destination named by {@code target} (TROUPE_EVENTS): a file path (appended to),
     * {@code tcp://HOST:PORT}, or {@code amqp://...} (one message per line to RabbitMQ, see
     * {@link AmqpLines}; every line is confirmed by the broker before {@link #finish} returns true).
     */
    public static EventWriter open(String target, String run, String rt, String node)
            throws IOException {
        Writer w;
        if (target.startsWith("tcp://")) {
            String hp = target.substring("tcp://".length());
            int colon = hp.lastIndexOf(':');
            if (colon <= 0) {
                throw new IOException("TROUPE_EVENTS " + target + ": expected tcp://HOST:PORT");
            }
            @SuppressWarnings("resource")
            Socket s = new Socket(hp.substring(0, colon), Integer.parseInt(hp.substring(colon + 1)));
            w = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
        } else if (target.startsWith("amqp://")) {
            return new EventWriter(AmqpLines.connect(target, run), run, rt, node);
        } else if (target.contains("://")) {
            throw new IOException("TROUPE_EVENTS " + redact(target)
                    + ": only a file path, tcp://HOST:PORT or amqp://... is supported by the Akka peer");
        } else {
            // Several processes of one run (the chat's node JVMs) append to the same file: each
            // write(2) must carry whole lines only, which O_APPEND then keeps in one piece.
            return new EventWriter(new WholeLines(new FileOutputStream(target, true)), run, rt, node);
        }
        return new EventWriter(new BufferedWriter(w, 1 << 16), run, rt, node);
    }

    /** {@code target} with the password of a URL's user replaced by ***, for messages. */
    public static String redact(String target) {
        int scheme = target.indexOf("://");
        if (scheme < 0) {
            return target;
        }
        int hostEnd = target.indexOf('/', scheme + 3);
        String auth = target.substring(scheme + 3, hostEnd < 0 ? target.length() : hostEnd);
        int at = auth.lastIndexOf('@');
        int colon = at < 0 ? -1 : auth.indexOf(':');
        if (colon < 0 || colon > at) {
            return target;
        }
        return target.substring(0, scheme + 3) + auth.substring(0, colon) + ":***"
                + target.substring(scheme + 3 + at);
    }

    /** Microseconds since the Unix epoch, wall clock. */
    public static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /** Builds the line for event {@code ev}; {@code extra} is ",\"k\":v..." or empty. */
    private String line(String ev, String extra) {
        StringBuilder b = new StringBuilder(96 + extra.length());
        b.append("{\"ts_us\":").append(nowMicros()).append(prefixTail);
        Json.quote(b, ev).append(extra).append('}');
        return b.toString();
    }

    /** Queues event {@code ev}; never blocks. {@code extra} is ",\"k\":v..." or empty. */
    public void emit(String ev, String extra) {
        if (!queue.offer(line(ev, extra))) {
            dropped.incrementAndGet();
        }
    }

    public long dropped() {
        return dropped.get();
    }

    public long writeErrors() {
        return writeErrors.get();
    }

    /**
     * Writes everything queued, then the event built by {@code last} from the final drop count
     * (the run_finished line, which must not be droppable), flushes and closes. Blocks the
     * caller up to {@code timeoutMs}; returns false if the writer did not finish in time.
     */
    public boolean finish(String ev, LongFunction<String> lastExtra, long timeoutMs)
            throws InterruptedException {
        lastLine = d -> line(ev, lastExtra.apply(d));
        if (!queue.offer(STOP, timeoutMs, TimeUnit.MILLISECONDS)) {
            return false;
        }
        thread.join(timeoutMs);
        return !thread.isAlive() && writeErrors.get() == 0;
    }

    private void loop() {
        List<String> batch = new ArrayList<>(1024);
        long lastFlush = System.nanoTime();
        boolean dirty = false;
        try {
            while (true) {
                String first = queue.poll(200, TimeUnit.MILLISECONDS);
                if (first != null) {
                    batch.add(first);
                    queue.drainTo(batch, 4096);
                    for (String l : batch) {
                        if (l == STOP) {
                            // Lines queued after STOP cannot exist: finish() is the last caller.
                            out.write(lastLine.apply(dropped.get()));
                            out.write('\n');
                            out.flush();
                            out.close();
                            return;
                        }
                        out.write(l);
                        out.write('\n');
                        dirty = true;
                    }
                    batch.clear();
                }
                long now = System.nanoTime();
                // Flush when idle, and at least once a second under load.
                if (dirty && (queue.isEmpty() || now - lastFlush >= 1_000_000_000L)) {
                    out.flush();
                    lastFlush = now;
                    dirty = false;
                }
            }
        } catch (IOException e) {
            writeErrors.incrementAndGet();
            System.err.println("event writer: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A buffered writer that hands the file whole lines only: it writes its buffer out in one
     * call when a newline ends it past 60 KiB, and on flush (the writer thread writes a line and
     * its newline, then flushes between batches, so the buffer always ends a line there).
     */
    private static final class WholeLines extends Writer {
        private final FileOutputStream out;
        private final StringBuilder buf = new StringBuilder(1 << 16);

        WholeLines(FileOutputStream out) {
            this.out = out;
        }

        @Override
        public void write(char[] cbuf, int off, int len) throws IOException {
            buf.append(cbuf, off, len);
            if (len > 0 && cbuf[off + len - 1] == '\n' && buf.length() >= 60 << 10) {
                flush();
            }
        }

        @Override
        public void write(String str) throws IOException {
            buf.append(str);
        }

        @Override
        public void write(int c) throws IOException {
            buf.append((char) c);
            if (c == '\n' && buf.length() >= 60 << 10) {
                flush();
            }
        }

        @Override
        public void flush() throws IOException {
            if (buf.length() > 0) {
                out.write(buf.toString().getBytes(StandardCharsets.UTF_8));
                buf.setLength(0);
            }
        }

        @Override
        public void close() throws IOException {
            flush();
            out.close();
        }
    }
}
