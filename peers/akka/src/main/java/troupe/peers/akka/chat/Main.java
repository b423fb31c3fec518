// Owns the chat peer process (docs/chat.md, "The chat peer contract"), single-process deployment:
// reads TROUPE_CONFIG / TROUPE_SCHEDULE / TROUPE_EVENTS / TROUPE_RUN_ID, starts the event writer
// and the actor system (discovery, supervisors, chats), waits until every chat registered
// (ready chats), starts the clients and waits until every one joined (ready clients), opens the
// window warmup_s later (ready window), runs the injector thread and the per-second throughput
// counter over the window, then stops everything and writes run_finished. deployment =
// "distributed" is Distributed's (this class with a role argument is one of its node processes).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.AskPattern;
import akka.actor.typed.receptionist.Receptionist;
import akka.actor.typed.receptionist.ServiceKey;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.Schedule;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;

public final class Main {
    /** Seconds allowed for each set-up phase (chats registering, clients joining). */
    static final long SETUP_TIMEOUT_S = 180;
    static final String AKKA_VERSION = "2.6.21";

    private Main() {}

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    /** What every role reads: the config (parsed and raw), the schedule, the event target. */
    record Run(ChatConfig cfg, JsonNode rawConfig, List<Schedule.Action> schedule, String eventsTarget,
               String runId, AtomicLong scheduleErrors) {
        /** Opens this process's event writer and writes run_started. */
        EventWriter start(String node, String role) throws Exception {
            EventWriter events = EventWriter.open(eventsTarget, runId, "akka", node);
            String version = "akka " + AKKA_VERSION + " (java " + System.getProperty("java.version") + ")";
            events.emit("run_started", ",\"workload\":\"chat\",\"config\":"
                    + new ObjectMapper().writeValueAsString(rawConfig) + ",\"version\":" + Json.quote(version)
                    + ",\"role\":" + Json.quote(role));
            return events;
        }
    }

    private static int run(String[] args) throws Exception {
        String configPath = System.getenv("TROUPE_CONFIG");
        String schedulePath = System.getenv("TROUPE_SCHEDULE");
        String eventsTarget = System.getenv("TROUPE_EVENTS");
        String runId = System.getenv().getOrDefault("TROUPE_RUN_ID", "run");
        if (configPath == null || eventsTarget == null) {
            System.err.println("akka chat: TROUPE_CONFIG and TROUPE_EVENTS must be set "
                    + "(TROUPE_SCHEDULE and TROUPE_RUN_ID too, normally)");
            return 2;
        }
        ObjectMapper json = new ObjectMapper();
        JsonNode rawConfig;
        ChatConfig cfg;
        try {
            rawConfig = json.readTree(Path.of(configPath).toFile());
            cfg = ChatConfig.parse(rawConfig);
        } catch (Exception e) {
            System.err.println("akka chat: bad config " + configPath + ": " + e.getMessage());
            return 2;
        }
        AtomicLong scheduleErrors = new AtomicLong();
        List<Schedule.Action> schedule = List.of();
        if (schedulePath == null || schedulePath.isEmpty()) {
            System.err.println("akka chat: TROUPE_SCHEDULE not set: running without faults");
        } else {
            schedule = Schedule.read(Path.of(schedulePath), scheduleErrors);
        }
        Run r = new Run(cfg, rawConfig, schedule, eventsTarget, runId, scheduleErrors);
        // Node processes of the distributed deployment: this class started by the orchestrator.
        if (args.length == 2 && (args[0].equals("server") || args[0].equals("clients"))) {
            int g;
            try {
                g = Integer.parseInt(args[1]);
            } catch (NumberFormatException e) {
                System.err.println("akka chat: bad group " + args[1]);
                return 2;
            }
            return args[0].equals("server") ? Distributed.serverGroup(r, g) : Distributed.clientGroup(r, g);
        }
        if (args.length > 0) {
            System.err.println("akka chat: unexpected arguments " + List.of(args)
                    + " (node processes take: server|clients GROUP)");
            return 2;
        }
        if (cfg.deployment().equals("distributed")) {
            return Distributed.orchestrator(r);
        }
        return single(r);
    }

    /** The whole system in this JVM (deployment = "single"). */
    private static int single(Run r) throws Exception {
        ChatConfig cfg = r.cfg();
        EventWriter events = r.start(System.getenv().getOrDefault("TROUPE_NODE", "akka"), "chat");
        Shared shared = new Shared(cfg, events);
        shared.errors.addAndGet(r.scheduleErrors().get());
        ActorSystem<Root.Command> system = ActorSystem.create(Root.create(shared, Root.Layout.single(cfg)), "chat");
        int exit = 0;
        Window window = null;
        try {
            if (!shared.registered.await(SETUP_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new TimeoutException((cfg.chats() - shared.registered.getCount()) + " of "
                        + cfg.chats() + " chats never registered");
            }
            events.emit("ready", ",\"what\":\"chats\",\"count\":" + cfg.chats());
            system.tell(Root.StartClients.INSTANCE);
            if (!shared.joined.await(SETUP_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new TimeoutException(shared.joined.getCount() + " of " + cfg.clients()
                        + " clients never joined");
            }
            events.emit("ready", ",\"what\":\"clients\",\"count\":" + cfg.clients()
                    + ",\"rss_bytes\":" + rssBytes());
            long startUs = EventWriter.nowMicros() + cfg.warmupS() * 1_000_000L;
            events.emit("ready", ",\"what\":\"window\",\"count\":" + cfg.durationS()
                    + ",\"start_us\":" + startUs);
            window = new Window(shared, system, findDiscovery(system), r.schedule(), startUs);
            window.run();
        } catch (TimeoutException e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat: set-up failed: " + e.getMessage());
            exit = 1;
        }
        if (window != null) {
            window.stopInjector();
        }
        shared.stopping = true;
        terminate(system, shared);
        return finish(events, shared, window, r.eventsTarget(), "") ? exit : 1;
    }

    /** Finds discovery through the Receptionist (local, or cluster-wide on a cluster node). */
    static ActorRef<Discovery.Command> findDiscovery(ActorSystem<?> system) throws Exception {
        return findService(system, Discovery.SERVICE_KEY);
    }

    /** Asks the Receptionist for {@code key} until it lists an instance, for at most SETUP_TIMEOUT_S. */
    static <T> ActorRef<T> findService(ActorSystem<?> system, ServiceKey<T> key) throws Exception {
        long deadline = System.nanoTime() + SETUP_TIMEOUT_S * 1_000_000_000L;
        while (true) {
            Receptionist.Listing listing = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(
                    system.receptionist(), reply -> Receptionist.find(key, reply),
                    Duration.ofSeconds(10), system.scheduler()).toCompletableFuture().get(15, TimeUnit.SECONDS);
            var found = listing.getServiceInstances(key);
            if (!found.isEmpty()) {
                return found.iterator().next();
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("the Receptionist never listed " + key.id());
            }
            Thread.sleep(20);
        }
    }

    /** The window of one process: its throughput counter (this thread) and its injector thread. */
    static final class Window {
        private final Shared shared;
        private final long startNanos;
        private final Injector injector;
        private final Thread injectorThread;

        Window(Shared shared, ActorSystem<?> system, ActorRef<Discovery.Command> discovery,
               List<Schedule.Action> actions, long startUs) {
            this.shared = shared;
            this.startNanos = System.nanoTime() + (startUs - EventWriter.nowMicros()) * 1000L;
            this.injector = new Injector(actions, shared, system, discovery, startNanos);
            this.injectorThread = new Thread(injector, "chat-injector");
            injectorThread.setDaemon(true);
            injectorThread.start();
        }

        /** The throughput counter: window second s ends at start + s + 1 (no drift). */
        void run() {
            parkUntil(startNanos);
            long last = shared.received.sum();
            for (int s = 0; s < shared.cfg.durationS(); s++) {
                parkUntil(startNanos + (s + 1) * 1_000_000_000L);
                long now = shared.received.sum();
                shared.events.emit("throughput", ",\"second\":" + s + ",\"count\":" + (now - last));
                last = now;
            }
        }

        void stopInjector() throws InterruptedException {
            injector.stop();
            injectorThread.join(5_000);
        }

        long afterWindow() {
            return injector.afterWindow.get();
        }
    }

    /** Terminates the actor system (bounded); a system that does not stop is an error. */
    static void terminate(ActorSystem<?> system, Shared shared) throws Exception {
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat: actor system did not terminate within 30 s");
        }
    }

    /** Writes run_finished (extra: more fields, ",..." or empty); false if the writer failed. */
    static boolean finish(EventWriter events, Shared shared, Window window, String target, String extra)
            throws InterruptedException {
        long afterWindow = window == null ? 0 : window.afterWindow();
        System.err.printf("akka chat: faults injected %d, skipped %d, after the window %d, errors %d%n",
                shared.injected.get(), shared.skipped.get(), afterWindow, shared.errors.get());
        if (shared.hostsDiscovery && shared.cfg.lookup().equals("park")) {
            System.err.printf("akka chat: discovery (lookup=park): %d lookups parked, %d answered by a"
                    + " registration, %d timed out%n", shared.parkedLookups.get(),
                    shared.parkedByRegistration.get(), shared.parkedTimedOut.get());
        }
        long errors = shared.errors.get();
        long skipped = shared.skipped.get();
        boolean ok = events.finish("run_finished", dropped -> ",\"dropped_events\":" + dropped
                + ",\"errors\":" + errors + ",\"skipped_faults\":" + skipped
                + ",\"faults_after_window\":" + afterWindow + extra, 10_000);
        if (!ok) {
            System.err.println("akka chat: the event writer failed; " + Json.quote(EventWriter.redact(target))
                    + " may be incomplete");
        }
        return ok;
    }

    static void parkUntil(long deadline) {
        long now;
        while ((now = System.nanoTime()) < deadline) {
            LockSupport.parkNanos(deadline - now);
        }
    }

    /** VmRSS of this process in bytes (0 where /proc is unavailable). */
    static long rssBytes() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.UTF_8)) {
                if (l.startsWith("VmRSS:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024L;
                }
            }
        } catch (Exception e) {
            // fall through
        }
        return 0;
    }
}
