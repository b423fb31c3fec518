// Owns what every IoT process shares: the parsed run (config, schedule, event target), the
// Akka settings of the three kinds of actor system (server = cluster member, devices and
// orchestrator = remote only, never cluster members), the per-process counters for
// run_finished, and the control pipe from the orchestrator.
//
// Control pipe rules (orchestrator -> child on stdin, child -> orchestrator on stdout):
//  1. A child prints the line READY once it is ready (after its `ready` event).
//  2. The orchestrator writes `WINDOW <start_us>` once the window is set, and `STOP` at the end;
//     the child then stops its actor system, writes run_finished and exits 0.
//  3. End of stdin without STOP means the orchestrator is gone: the child halts at once, so no
//     process outlives the run.
package troupe.peers.akka.iot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule;

final class Node {
    static final String AKKA_VERSION = "2.6.21";
    /** Set (to 1) in the environment of a server restarted by the schedule. */
    static final String ENV_RESTARTED = "TROUPE_IOT_RESTARTED";
    /** The servers' actor system name (one Akka Cluster). */
    static final String SERVER_SYSTEM = "iot";

    final IotConfig cfg;
    final JsonNode rawConfig;
    final List<Schedule.Action> schedule;
    final String eventsTarget;
    final String runId;
    final AtomicLong errors = new AtomicLong();
    final AtomicLong skipped = new AtomicLong();
    EventWriter events;

    /** The window start (µs) once the orchestrator sent it, or -1. */
    volatile long windowStartUs = -1;
    final CountDownLatch windowSet = new CountDownLatch(1);
    final CountDownLatch stop = new CountDownLatch(1);
    private volatile boolean stopping;
    private final AtomicBoolean finished = new AtomicBoolean();

    Node(IotConfig cfg, JsonNode rawConfig, List<Schedule.Action> schedule, String eventsTarget,
         String runId, long scheduleErrors) {
        this.cfg = cfg;
        this.rawConfig = rawConfig;
        this.schedule = schedule;
        this.eventsTarget = eventsTarget;
        this.runId = runId;
        this.errors.addAndGet(scheduleErrors);
    }

    /** Opens this process's event writer and writes run_started. */
    void start(String node) throws Exception {
        events = EventWriter.open(eventsTarget, runId, "akka", node);
        String version = "akka " + AKKA_VERSION + " (java " + System.getProperty("java.version") + ")";
        events.emit("run_started", ",\"workload\":\"iot\",\"config\":"
                + new ObjectMapper().writeValueAsString(rawConfig) + ",\"version\":" + Json.quote(version)
                + ",\"pid\":" + ProcessHandle.current().pid());
    }

    /** Writes run_finished; false if the writer failed. */
    boolean finish(String extra) throws InterruptedException {
        if (!finished.compareAndSet(false, true)) {
            return true; // already written (by the SIGTERM hook, or before it ran)
        }
        long err = errors.get();
        long skip = skipped.get();
        boolean ok = events.finish("run_finished", d -> ",\"dropped_events\":" + d + ",\"errors\":" + err
                + ",\"skipped_faults\":" + skip + extra, 10_000);
        if (!ok) {
            System.err.println("akka iot: the event writer failed; " + EventWriter.redact(eventsTarget) + " may be incomplete");
        }
        return ok;
    }

    /**
     * On SIGTERM (the lab's Ctrl-C): runs {@code first} (the orchestrator kills its children),
     * then writes run_finished with {@code extra} and "interrupted": true, unless it was written.
     */
    void onSignal(Runnable first, String extra) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            first.run();
            if (!finished.get()) {
                try {
                    finish(extra + ",\"interrupted\":true");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "iot-sigterm"));
    }

    /** Rule 1: tells the orchestrator this child is ready. */
    static void sayReady() {
        System.out.println("READY");
        System.out.flush();
    }

    /** Rules 2-3: reads the control pipe on a daemon thread. */
    void listen(String node) {
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("WINDOW ")) {
                        windowStartUs = Long.parseLong(line.substring(7).trim());
                        windowSet.countDown();
                    } else if (line.equals("STOP")) {
                        stopping = true;
                        stop.countDown();
                    }
                }
            } catch (Exception e) {
                System.err.println("akka iot " + node + ": control pipe: " + e);
            }
            if (!stopping) {
                System.err.println("akka iot " + node + ": the orchestrator went away; halting");
                Runtime.getRuntime().halt(3);
            }
        }, "control-pipe");
        t.setDaemon(true);
        t.start();
    }

    private static Config base(String provider, String host, int port) {
        return ConfigFactory.parseString(String.join("\n",
                "akka.actor.provider = " + provider,
                "akka.remote.artery.canonical.hostname = \"" + host + "\"",
                "akka.remote.artery.canonical.port = " + port,
                "akka.actor.serialization-bindings { \"troupe.peers.akka.iot.IotWire\" = jackson-cbor }",
                "akka.loglevel = WARNING"));
    }

    // Settings: system properties (-Dakka..., e.g. from TROUPE_AKKA_JAVA_OPTS) win over this
    // peer's few settings below, which win over Akka's defaults (reference.conf).

    /** A server: an Akka Cluster member on its fixed port, role server-s, every server a seed. */
    static Config serverConfig(int s, int[] ports) {
        StringBuilder seeds = new StringBuilder();
        for (int port : ports) {
            seeds.append(seeds.length() > 0 ? ", " : "").append('"').append("akka://")
                    .append(SERVER_SYSTEM).append("@127.0.0.1:").append(port).append('"');
        }
        return ConfigFactory.systemProperties().withFallback(ConfigFactory.parseString(String.join("\n",
                        "akka.cluster.seed-nodes = [" + seeds + "]",
                        "akka.cluster.roles = [\"" + Protocol.serverName(s) + "\"]",
                        "akka.cluster.log-info = off",
                        "akka.cluster.jmx.enabled = off")))
                .withFallback(base("cluster", "127.0.0.1", ports[s]))
                .withFallback(ConfigFactory.load());
    }

    /** A device process or the orchestrator: Artery remoting only, a free port. */
    static Config remoteConfig() {
        // Not cluster members on purpose (the devices of workloads.md §3): Akka's warnings about
        // using the remote provider directly are known and turned off.
        return ConfigFactory.systemProperties().withFallback(ConfigFactory.parseString(String.join("\n",
                        "akka.remote.warn-about-direct-use = off",
                        "akka.remote.warn-unsafe-watch-outside-cluster = off")))
                .withFallback(base("remote", "127.0.0.1", 0))
                .withFallback(ConfigFactory.load());
    }

    /** Parses "p0,p1,..." (the servers' ports, handed down by the orchestrator). */
    static int[] parsePorts(String csv, int servers) {
        String[] parts = csv.split(",");
        if (parts.length != servers) {
            throw new IllegalArgumentException("expected " + servers + " server ports, got '" + csv + "'");
        }
        int[] ports = new int[servers];
        for (int i = 0; i < servers; i++) {
            ports[i] = Integer.parseInt(parts[i].trim());
        }
        return ports;
    }
}
