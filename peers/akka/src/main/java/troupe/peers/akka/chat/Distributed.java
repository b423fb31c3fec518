// Owns the chat's distributed deployment (deployment = "distributed"), laid out as Troupe's own
// (crates/troupe-lab-workloads/src/chat/sub.rs): the JVM the lab starts is the orchestrator,
// node "discovery"; it hosts discovery and the coordinator and starts one JVM per supervisor
// (`Main server G`, node "server-G") and one per client group of at most clients_per_process
// clients (`Main clients G`, node "clients-G"). All are members of one Akka Cluster (Artery TCP
// on 127.0.0.1, a free port each; the orchestrator is the seed node and joins itself), or, with
// TROUPE_NETNS, each JVM in the network namespace the lab gives it, on its address there
// (Placement: only the address and an `ip netns exec` prefix differ).
//
// Rules:
//  1. Discovery and the coordinator are found through the cluster-wide Receptionist (their
//     ServiceKeys); no node is told an actor's address, only the seed node's.
//  2. Set-up order: server groups (each ready once its chats registered), then client groups
//     (each ready once its clients joined); each asks the coordinator Ready and gets the window
//     start once every group is ready; the orchestrator emits ready {what: "window"}.
//  3. Clients watch their chat across nodes (Akka remote watch: Terminated when the chat stops,
//     or when its node is gone); the injector of chat c runs in the client group holding the
//     chat's first client and stops (classic stop of the remote ref: a Terminate system message,
//     no chat code runs) or poisons the chat across the wire, as Troupe's does.
//  4. Client groups end at the window's end, server groups one second later, each leaving the
//     cluster as its actor system terminates (CoordinatedShutdown). The orchestrator waits for
//     every node JVM under a deadline; one that exits early, exits non-zero or is still running
//     at the deadline fails the run: the others are killed, all are reaped, and the
//     orchestrator's run_finished names them in failed_nodes. A node JVM holds the read end of a
//     pipe from the orchestrator on stdin and halts when it closes, so no node outlives it.
//  5. Every JVM appends its own lines (whole lines per write) to the one TROUPE_EVENTS file with
//     its node name, and writes run_finished last.
package troupe.peers.akka.chat;

import akka.actor.Address;
import akka.actor.AddressFromURIString;
import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.AskPattern;
import akka.cluster.typed.Cluster;
import akka.cluster.typed.Join;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule;

final class Distributed {
    /** The seed node's address (the orchestrator's), handed to the node JVMs. */
    static final String ENV_SEED = "TROUPE_AKKA_SEED";
    /** The address a node JVM's Artery listens on and advertises, handed to it (Placement). */
    static final String ENV_HOST = "TROUPE_AKKA_HOST";

    private Distributed() {}

    /**
     * A cluster node on a free port of `host` (127.0.0.1, or its namespace's address). Everything
     * else is Akka's default, except that the chat's messages (marked {@link Wire}) are
     * serialized with Akka's jackson-cbor and the cluster's INFO logging is off.
     */
    static Config nodeConfig(String host) {
        return ConfigFactory.parseString(String.join("\n",
                        "akka.actor.provider = cluster",
                        "akka.remote.artery.canonical.hostname = \"" + host + "\"",
                        "akka.remote.artery.canonical.port = 0",
                        "akka.actor.serialization-bindings { \"troupe.peers.akka.chat.Wire\" = jackson-cbor }",
                        "akka.cluster.log-info = off",
                        "akka.cluster.jmx.enabled = off"))
                .withFallback(ConfigFactory.load());
    }

    // -----------------------------------------------------------------------------------------
    // Orchestrator

    private record Exit(String name, int status, long atNanos) {}

    static String describe(int status) {
        // Java reports a process killed by signal N as 128 + N.
        return status > 128 ? "killed by signal " + (status - 128) : "exit status " + status;
    }

    static int orchestrator(Main.Run r) throws Exception {
        ChatConfig cfg = r.cfg();
        Placement placement;
        try {
            placement = Placement.load(Placement.netNodes(cfg));
        } catch (IllegalArgumentException e) {
            System.err.println("akka chat: " + e.getMessage());
            return 2;
        } catch (IllegalStateException e) {
            System.err.println("akka chat: missing toolchain: " + e.getMessage());
            return 3;
        }
        EventWriter events = r.start("discovery", "chat");
        Shared shared = new Shared(cfg, events, 0, 0);
        shared.errors.addAndGet(r.scheduleErrors().get());
        AtomicInteger ready = new AtomicInteger();
        ActorSystem<Root.Command> system = ActorSystem.create(
                Root.create(shared, new Root.Layout(true, 0, 0, 0, 0, ready)), "chat",
                nodeConfig(placement.coordinatorAddr()));
        Cluster cluster = Cluster.get(system);
        Address self = cluster.selfMember().address();
        cluster.manager().tell(Join.create(self));

        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> jvmArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
        String classPath = System.getProperty("java.class.path");
        LinkedBlockingQueue<Exit> exits = new LinkedBlockingQueue<>();
        Map<String, Process> running = new ConcurrentHashMap<>();
        List<String> failed = new ArrayList<>();
        int[] started = {0};
        NodeStarter start = (role, g) -> {
            String name = role + "-" + g;
            List<String> cmd = new ArrayList<>(placement.execPrefix(name));
            cmd.add(java);
            cmd.addAll(jvmArgs);
            cmd.addAll(List.of("-cp", classPath, Main.class.getName(), role, Integer.toString(g)));
            ProcessBuilder pb = new ProcessBuilder(cmd)
                    .redirectInput(ProcessBuilder.Redirect.PIPE)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.INHERIT);
            pb.environment().put(ENV_SEED, self.toString());
            pb.environment().put(ENV_HOST, placement.addr(name));
            Process p = pb.start();
            running.put(name, p);
            started[0]++;
            p.onExit().thenAccept(ph -> {
                running.remove(name);
                exits.add(new Exit(name, ph.exitValue(), System.nanoTime()));
            });
        };
        String outcome = null;
        try {
            for (int g = 0; g < cfg.numSupervisor(); g++) {
                start.start("server", g);
            }
            waitReady(ready, started[0], exits, failed);
            events.emit("ready", ",\"what\":\"server_groups\",\"count\":" + cfg.numSupervisor());
            int groups = cfg.clientGroups().size();
            for (int g = 0; g < groups; g++) {
                start.start("clients", g);
            }
            waitReady(ready, started[0], exits, failed);
            long startUs = EventWriter.nowMicros() + cfg.warmupS() * 1_000_000L;
            events.emit("ready", ",\"what\":\"window\",\"count\":" + cfg.durationS() + ",\"start_us\":" + startUs);
            system.tell(new Root.OpenWindow(startUs));
            long windowEnd = System.nanoTime() + (startUs - EventWriter.nowMicros()) * 1000L
                    + cfg.durationS() * 1_000_000_000L;
            long deadline = windowEnd + 60_000_000_000L;
            for (int left = started[0]; left > 0; left--) {
                Exit e = exits.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (e == null) {
                    throw new IllegalStateException(left + " node process(es) did not end by the deadline");
                }
                started[0]--;
                if (e.status() != 0) {
                    failed.add(e.name() + " (" + describe(e.status()) + ")");
                    throw new IllegalStateException("node process " + e.name() + " failed: " + describe(e.status()));
                }
                if (e.atNanos() < windowEnd) {
                    failed.add(e.name() + " (exited before the window ended (exit status 0))");
                    throw new IllegalStateException("node process " + e.name() + " exited before the window ended");
                }
            }
        } catch (Exception e) {
            outcome = e.getMessage();
        }
        if (outcome != null) {
            System.err.println("akka chat: " + outcome);
            shared.errors.incrementAndGet();
            if (failed.isEmpty()) {
                failed.add(outcome);
            }
        }
        // Whatever happened, no node JVM outlives the orchestrator: kill what is left, reap it.
        for (Process p : running.values()) {
            p.destroyForcibly();
        }
        long reapBy = System.nanoTime() + 10_000_000_000L;
        while (started[0] > 0) {
            Exit e = exits.poll(Math.max(0, reapBy - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (e == null) {
                System.err.println("akka chat: " + started[0] + " node process(es) not reaped within 10 s");
                break;
            }
            started[0]--;
        }
        Main.terminate(system, shared);
        StringBuilder extra = new StringBuilder(",\"failed_nodes\":[");
        for (int i = 0; i < failed.size(); i++) {
            extra.append(i > 0 ? "," : "").append(Json.quote(failed.get(i)));
        }
        extra.append(']');
        return Main.finish(events, shared, null, r.eventsTarget(), extra.toString()) ? 0 : 1;
    }

    private interface NodeStarter {
        void start(String role, int g) throws IOException;
    }

    /** Waits until n node processes said Ready; one ending first fails the run. */
    private static void waitReady(AtomicInteger ready, int n, LinkedBlockingQueue<Exit> exits, List<String> failed)
            throws Exception {
        long deadline = System.nanoTime() + Main.SETUP_TIMEOUT_S * 1_000_000_000L;
        while (ready.get() < n) {
            Exit e = exits.poll(2, TimeUnit.MILLISECONDS);
            if (e != null) {
                exits.add(e); // reaped below
                failed.add(e.name() + " (" + describe(e.status()) + ")");
                throw new IllegalStateException("node process " + e.name() + " ended during set-up: "
                        + describe(e.status()));
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("set-up took longer than " + Main.SETUP_TIMEOUT_S + " s");
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Node processes

    private static volatile boolean finishing;

    /** Halts this JVM when the orchestrator's end of stdin closes (the orchestrator is gone). */
    private static void dieWithOrchestrator(String node) {
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // the orchestrator never writes; EOF means it is gone
                }
            } catch (IOException e) {
                // same as EOF
            }
            if (!finishing) {
                System.err.println("akka chat " + node + ": the orchestrator went away; halting");
                Runtime.getRuntime().halt(3);
            }
        }, "orchestrator-watch");
        t.setDaemon(true);
        t.start();
    }

    private static ActorSystem<Root.Command> joinRun(Shared shared, Root.Layout layout) {
        String seed = System.getenv(ENV_SEED);
        if (seed == null || seed.isEmpty()) {
            throw new IllegalStateException(ENV_SEED + " is not set; node processes are started by the orchestrator");
        }
        String host = System.getenv().getOrDefault(ENV_HOST, "127.0.0.1");
        ActorSystem<Root.Command> system = ActorSystem.create(Root.create(shared, layout), "chat", nodeConfig(host));
        Cluster.get(system).manager().tell(Join.create(AddressFromURIString.parse(seed)));
        return system;
    }

    /** Tells the coordinator this node is ready; returns the window start (µs). */
    private static long sayReady(ActorSystem<?> system, String node) throws Exception {
        ActorRef<Coordinator.Command> coordinator = Main.findService(system, Coordinator.SERVICE_KEY);
        Duration limit = Duration.ofSeconds(2 * Main.SETUP_TIMEOUT_S);
        Coordinator.Window w = AskPattern.<Coordinator.Command, Coordinator.Window>ask(coordinator,
                        reply -> new Coordinator.Ready(node, reply), limit, system.scheduler())
                .toCompletableFuture().get(limit.toSeconds() + 5, TimeUnit.SECONDS);
        return w.startUs();
    }

    /** Ends a node process: terminates its system, writes run_finished; the exit code. */
    private static int end(ActorSystem<?> system, EventWriter events, Shared shared, Main.Window window,
                           String target) throws Exception {
        finishing = true;
        shared.stopping = true;
        if (system != null) {
            Main.terminate(system, shared);
        }
        boolean ok = Main.finish(events, shared, window, target, "");
        return ok && shared.errors.get() == 0 ? 0 : 1;
    }

    /** Server group g: supervisor g and its chats_per_sup chats. */
    static int serverGroup(Main.Run r, int g) throws Exception {
        ChatConfig cfg = r.cfg();
        String node = "server-" + g;
        dieWithOrchestrator(node);
        EventWriter events = r.start(node, "chat-server");
        Shared shared = new Shared(cfg, events, cfg.chatsPerSup(), 0);
        shared.errors.addAndGet(r.scheduleErrors().get());
        ActorSystem<Root.Command> system = null;
        try {
            if (g < 0 || g >= cfg.numSupervisor()) {
                throw new IllegalArgumentException("server group " + g + " does not exist for this config");
            }
            system = joinRun(shared, new Root.Layout(false, g, g + 1, 0, 0, null));
            if (!shared.registered.await(Main.SETUP_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new TimeoutException(shared.registered.getCount() + " of " + cfg.chatsPerSup()
                        + " chats never registered");
            }
            events.emit("ready", ",\"what\":\"chats\",\"count\":" + cfg.chatsPerSup() + ",\"rss_bytes\":"
                    + Main.rssBytes() + ",\"pid\":" + ProcessHandle.current().pid());
            long startUs = sayReady(system, node);
            long endNanos = System.nanoTime() + (startUs - EventWriter.nowMicros()) * 1000L
                    + (cfg.durationS() + 1) * 1_000_000_000L;
            Main.parkUntil(endNanos);
        } catch (Exception e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat " + node + ": " + e);
        }
        return end(system, events, shared, null, r.eventsTarget());
    }

    /** Client group g: its clients, the injectors of the chats whose first client it holds, its counter. */
    static int clientGroup(Main.Run r, int g) throws Exception {
        ChatConfig cfg = r.cfg();
        String node = "clients-" + g;
        dieWithOrchestrator(node);
        EventWriter events = r.start(node, "chat-clients");
        List<long[]> groups = cfg.clientGroups();
        long first = g >= 0 && g < groups.size() ? groups.get(g)[0] : 0;
        long count = g >= 0 && g < groups.size() ? groups.get(g)[1] : 0;
        Shared shared = new Shared(cfg, events, 0, count);
        shared.errors.addAndGet(r.scheduleErrors().get());
        ActorSystem<Root.Command> system = null;
        Main.Window window = null;
        try {
            if (count == 0) {
                throw new IllegalArgumentException("client group " + g + " does not exist for this config");
            }
            system = joinRun(shared, new Root.Layout(false, 0, 0, first, count, null));
            system.tell(Root.StartClients.INSTANCE);
            if (!shared.joined.await(Main.SETUP_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new TimeoutException(shared.joined.getCount() + " of " + count + " clients never joined");
            }
            events.emit("ready", ",\"what\":\"clients\",\"count\":" + count + ",\"rss_bytes\":"
                    + Main.rssBytes() + ",\"pid\":" + ProcessHandle.current().pid());
            long startUs = sayReady(system, node);
            List<Schedule.Action> mine = new ArrayList<>();
            for (Schedule.Action a : r.schedule()) {
                long k = (long) a.group() * cfg.clientsPerServer();
                if (k >= first && k < first + count) {
                    mine.add(a);
                }
            }
            window = new Main.Window(shared, system, Main.findDiscovery(system), mine, startUs);
            window.run();
            window.stopInjector();
        } catch (Exception e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat " + node + ": " + e);
        }
        return end(system, events, shared, window, r.eventsTarget());
    }
}
