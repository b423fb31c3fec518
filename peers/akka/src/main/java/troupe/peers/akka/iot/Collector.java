// Owns the orchestrator's window: the collector (every second it asks each server's gateway
// GetTotals over Artery and emits `throughput {second, count}`, the reports summed cluster-wide
// in that second; a server whose total went down restarted, so what it has counts) and the
// server kills of the schedule (SIGKILL the server JVM: `fault_injected`; start it again on the
// same port restart_s later: `restarted`; a kill of a server that is down is skipped).
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorRefResolver;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.AskPattern;
import akka.actor.typed.javadsl.Behaviors;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule;
import troupe.peers.akka.iot.Protocol.ToGateway;

final class Collector {
    /** How long one poll waits for a server's answer. */
    static final long POLL_TIMEOUT_MS = 800;

    private final Node node;
    private final Orchestrator o;
    private long startNanos;
    private final ActorSystem<Void> system;
    private final List<ActorRef<ToGateway>> gateways = new ArrayList<>();
    private final ScheduledExecutorService kills = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "iot-server-kills");
        t.setDaemon(true);
        return t;
    });
    private final AtomicIntegerArray restarts;
    private volatile boolean closing;

    /** Starts the collector's actor system (before the servers, so it is warm by the window). */
    Collector(Node node, Orchestrator o) {
        this.node = node;
        this.o = o;
        this.system = ActorSystem.create(Behaviors.empty(), "iot-collector", Node.remoteConfig());
        ActorRefResolver resolver = ActorRefResolver.get(system);
        for (int port : o.ports) {
            gateways.add(resolver.resolveActorRef(Protocol.gatewayPath(port)));
        }
        this.restarts = new AtomicIntegerArray(o.ports.length);
    }

    /** Polls every server once (opens the connections before the window); true if all answered. */
    boolean warm() {
        for (long t : poll()) {
            if (t < 0) {
                return false;
            }
        }
        return true;
    }

    /** Fixes the window start and plans the schedule's server kills. */
    void open(long startUs) {
        this.startNanos = System.nanoTime() + (startUs - EventWriter.nowMicros()) * 1000L;
        for (Schedule.Action a : node.schedule) {
            if (a.kind().equals("node_kill") && a.group() >= 0 && a.group() < o.ports.length
                    && a.atMs() < node.cfg.durationS() * 1000L) {
                long delay = startNanos + a.atMs() * 1_000_000L - System.nanoTime();
                kills.schedule(() -> kill(a), Math.max(0, delay), TimeUnit.NANOSECONDS);
            }
        }
    }

    /** Actions no process of this peer carries out, with the reason (counted as errors). */
    static List<String> badActions(Node node) {
        List<String> bad = new ArrayList<>();
        for (Schedule.Action a : node.schedule) {
            if (a.kind().equals("kill") && (a.group() < 0 || a.group() >= node.cfg.devices())) {
                bad.add(a.id() + ": device " + a.group() + " does not exist (devices = " + node.cfg.devices() + ")");
            } else if (a.kind().equals("node_kill") && (a.group() < 0 || a.group() >= node.cfg.servers())) {
                bad.add(a.id() + ": server " + a.group() + " does not exist (servers = " + node.cfg.servers() + ")");
            } else if (!a.kind().equals("kill") && !a.kind().equals("node_kill")) {
                bad.add(a.id() + ": kind " + Json.quote(a.kind()) + " is not an iot fault (kill | node_kill)");
            }
        }
        return bad;
    }

    private void kill(Schedule.Action a) {
        if (closing) {
            return;
        }
        String name = Protocol.serverName(a.group());
        Orchestrator.Child c = o.live.get(name);
        if (c == null || !c.process.isAlive()) {
            node.skipped.incrementAndGet();
            return;
        }
        c.killedOnPurpose = true;
        c.process.destroyForcibly(); // SIGKILL
        node.events.emit("fault_injected", ",\"id\":" + Json.quote(a.id()) + ",\"target\":\"" + name
                + "\",\"kind\":\"node_kill\"");
        if (a.restart()) {
            kills.schedule(() -> restart(a.group(), c), node.cfg.restartMs(), TimeUnit.MILLISECONDS);
        }
    }

    private void restart(int s, Orchestrator.Child old) {
        if (closing) {
            return;
        }
        try {
            old.process.waitFor(10, TimeUnit.SECONDS); // its port must be free again
            o.start("server", s, true);
            node.events.emit("restarted", ",\"target\":\"" + Protocol.serverName(s) + "\",\"attempt\":"
                    + restarts.incrementAndGet(s));
        } catch (Exception e) {
            node.errors.incrementAndGet();
            System.err.println("akka iot: could not restart server-" + s + ": " + e);
        }
    }

    /** Every server's reports total, or -1 where it did not answer in time. */
    private long[] poll() {
        List<CompletableFuture<Protocol.Totals>> asks = new ArrayList<>();
        for (ActorRef<ToGateway> g : gateways) {
            asks.add(AskPattern.<ToGateway, Protocol.Totals>ask(g, Protocol.GetTotals::new,
                    Duration.ofMillis(POLL_TIMEOUT_MS), system.scheduler()).toCompletableFuture());
        }
        long[] out = new long[asks.size()];
        for (int s = 0; s < out.length; s++) {
            try {
                out[s] = asks.get(s).get(POLL_TIMEOUT_MS + 200, TimeUnit.MILLISECONDS).reports();
            } catch (Exception e) {
                out[s] = -1; // down, restarting or slow: counted at its next answer
            }
        }
        return out;
    }

    /** The window: one throughput line per second; ends early if a child fails. */
    void run() {
        parkUntil(startNanos);
        long[] last = poll();
        for (int sec = 0; sec < node.cfg.durationS(); sec++) {
            parkUntil(startNanos + (sec + 1) * 1_000_000_000L);
            long[] now = poll();
            long count = 0;
            for (int s = 0; s < now.length; s++) {
                if (now[s] < 0) {
                    continue; // no answer: adds nothing, keeps its last known total
                }
                if (last[s] >= 0) {
                    // Contract rule 11: a total that went down (a restarted server) counts whole;
                    // a server's first answer only sets its baseline.
                    count += now[s] >= last[s] ? now[s] - last[s] : now[s];
                }
                last[s] = now[s];
            }
            node.events.emit("throughput", ",\"second\":" + sec + ",\"count\":" + count);
            if (!o.checkExits()) {
                throw new IllegalStateException("a child process failed during the window: " + o.failed);
            }
        }
    }

    void stopKills() {
        closing = true;
        kills.shutdownNow();
    }

    void close() throws Exception {
        Processes.terminate(system, node, "orchestrator");
    }

    private static void parkUntil(long deadline) {
        long now;
        while ((now = System.nanoTime()) < deadline) {
            LockSupport.parkNanos(deadline - now);
        }
    }
}
