// The `amqp://` sink of the event writer (events.md, "Transport"): every line the writer thread
// writes becomes one AMQP 0-9-1 message, published with RabbitMQ's Java client
// (com.rabbitmq:amqp-client) to the topic exchange `troupe.events`, routing key = the run id.
// Exists so the Akka peers' events can travel through RabbitMQ like Troupe's own.
//
// Rules:
// 1. The exchange is declared as the lab's collector declares it (topic, not durable); messages
//    are published with `mandatory` and publisher confirms on, in the order the lines are
//    written, on one channel, by the writer thread only (never an actor).
// 2. Connecting (TCP, handshake, channel, declaration) is bounded by CONNECT_TIMEOUT_MS; a
//    failure is an IOException naming the URL with its password hidden.
// 3. At most MAX_UNCONFIRMED lines await a confirm; the next publish waits for them (blocking
//    the writer thread only, while the actors' bounded queue absorbs or drops and counts).
// 4. close() waits at most CONFIRM_TIMEOUT_MS for every confirm, then closes the connection; a
//    line the broker refused (nack) or could not route (returned: no collector bound to the run
//    id), or a confirm that did not come, makes close() throw, so the run fails rather than
//    losing events silently.
package troupe.peers.akka.common;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

final class AmqpLines extends Writer {
    static final String EXCHANGE = "troupe.events";
    static final int CONNECT_TIMEOUT_MS = 8_000;
    static final long CONFIRM_TIMEOUT_MS = 8_000;
    static final int MAX_UNCONFIRMED = 8_192;

    private final Connection connection;
    private final Channel channel;
    private final String routingKey;
    private final String url; // redacted
    private final StringBuilder line = new StringBuilder(256);
    private final AtomicLong returned = new AtomicLong();
    private long published;
    private long unconfirmed;
    private boolean nacked;

    private AmqpLines(Connection connection, Channel channel, String routingKey, String url) {
        this.connection = connection;
        this.channel = channel;
        this.routingKey = routingKey;
        this.url = url;
        channel.addReturnListener(r -> returned.incrementAndGet());
    }

    /** Connects to {@code url} and publishes to routing key {@code runId} (rules 1, 2). */
    static AmqpLines connect(String url, String runId) throws IOException {
        String shown = EventWriter.redact(url);
        if (runId.getBytes(StandardCharsets.UTF_8).length > 255) {
            throw new IOException("run id " + runId + " is longer than 255 bytes, the most an AMQP routing key holds");
        }
        ConnectionFactory f = new ConnectionFactory();
        Connection c = null;
        try {
            f.setUri(url);
            f.setConnectionTimeout(CONNECT_TIMEOUT_MS);
            f.setHandshakeTimeout(CONNECT_TIMEOUT_MS);
            f.setAutomaticRecoveryEnabled(false); // a lost broker fails the run (rule 4)
            c = f.newConnection("troupe akka peer events");
            Channel ch = c.createChannel();
            ch.exchangeDeclare(EXCHANGE, "topic", false);
            ch.confirmSelect();
            return new AmqpLines(c, ch, runId, shown);
        } catch (Exception e) {
            if (c != null) {
                c.abort();
            }
            String why = e.getMessage() != null ? e.getMessage() : e.toString();
            if (e.getCause() != null && e.getCause().getMessage() != null) {
                why += " (" + e.getCause().getMessage() + ")";
            }
            throw new IOException("cannot reach the RabbitMQ broker at " + shown + ": " + why
                    + "; start one with `bash scripts/rabbitmq.sh start DIR` (install it with `bash"
                    + " scripts/install-rabbitmq.sh`) and pass the URL it prints", e);
        }
    }

    private IOException fail(String what) {
        return new IOException("amqp publisher to " + url + ": " + what);
    }

    private void publish() throws IOException {
        if (line.length() == 0) {
            return;
        }
        if (unconfirmed >= MAX_UNCONFIRMED) {
            awaitConfirms(); // rule 3
        }
        byte[] body = line.toString().getBytes(StandardCharsets.UTF_8);
        line.setLength(0);
        try {
            channel.basicPublish(EXCHANGE, routingKey, true, null, body);
        } catch (RuntimeException e) { // the client's AlreadyClosedException and kin
            throw fail("publishing failed: " + e.getMessage());
        }
        published++;
        unconfirmed++;
    }

    private void awaitConfirms() throws IOException {
        try {
            if (!channel.waitForConfirms(CONFIRM_TIMEOUT_MS)) {
                nacked = true;
            }
            unconfirmed = 0;
        } catch (TimeoutException e) {
            throw fail(unconfirmed + " lines not confirmed by the broker within " + CONFIRM_TIMEOUT_MS + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw fail("interrupted while waiting for confirms");
        } catch (RuntimeException e) { // the channel closed while waiting
            throw fail("waiting for confirms failed: " + e.getMessage());
        }
    }

    @Override
    public void write(char[] cbuf, int off, int len) throws IOException {
        for (int i = off; i < off + len; i++) {
            write(cbuf[i]);
        }
    }

    @Override
    public void write(String str) throws IOException {
        int start = 0;
        for (int nl = str.indexOf('\n'); nl >= 0; nl = str.indexOf('\n', start)) {
            line.append(str, start, nl);
            publish();
            start = nl + 1;
        }
        line.append(str, start, str.length());
    }

    @Override
    public void write(int c) throws IOException {
        if (c == '\n') {
            publish();
        } else {
            line.append((char) c);
        }
    }

    /** Lines are published as they end; a flush only notices a channel the broker closed. */
    @Override
    public void flush() throws IOException {
        if (!channel.isOpen()) {
            throw fail("the broker closed the channel: " + channel.getCloseReason());
        }
    }

    /** Rule 4: every line confirmed, none refused or returned, then the connection closed. */
    @Override
    public void close() throws IOException {
        try {
            publish();
            awaitConfirms();
            long ret = returned.get();
            if (nacked || ret > 0) {
                throw fail("of " + published + " lines the broker refused " + (nacked ? "some" : "none")
                        + " and could not route " + ret + " (is a collector bound to run id " + routingKey
                        + "? start it before the workload)");
            }
        } finally {
            try {
                connection.close(CONNECT_TIMEOUT_MS);
            } catch (IOException | RuntimeException e) {
                connection.abort();
            }
        }
    }
}
