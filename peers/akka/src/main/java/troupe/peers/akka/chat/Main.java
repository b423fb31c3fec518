// Owns the chat peer process (docs/lab.md, "The chat peer contract"), single-process deployment:
// reads TROUPE_CONFIG / TROUPE_SCHEDULE / TROUPE_EVENTS / TROUPE_RUN_ID, starts the event writer
// and the actor system (discovery, supervisors, chats), waits until every chat registered
// (ready chats), starts the clients and waits until every one joined (ready clients), opens the
// window warmup_s later (ready window), runs the injector thread and the per-second throughput
// counter over the window, then stops everything and writes run_finished. deployment =
// "distributed" is refused (exit 2).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.AskPattern;
import akka.actor.typed.receptionist.Receptionist;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
        System.exit(run());
    }

    private static int run() throws Exception {
        String configPath = System.getenv("TROUPE_CONFIG");
        String schedulePath = System.getenv("TROUPE_SCHEDULE");
        String eventsTarget = System.getenv("TROUPE_EVENTS");
        String runId = System.getenv().getOrDefault("TROUPE_RUN_ID", "run");
        String node = System.getenv().getOrDefault("TROUPE_NODE", "akka");
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
        if (!cfg.deployment().equals("single")) {
            System.err.println("akka chat: deployment=" + cfg.deployment() + " is not implemented"
                    + " (only deployment=single)");
            return 2;
        }
        EventWriter events = EventWriter.open(eventsTarget, runId, "akka", node);
        Shared shared = new Shared(cfg, events);
        List<Schedule.Action> schedule = List.of();
        if (schedulePath == null || schedulePath.isEmpty()) {
            System.err.println("akka chat: TROUPE_SCHEDULE not set: running without faults");
        } else {
            schedule = Schedule.read(Path.of(schedulePath), shared.errors);
        }
        String version = "akka " + AKKA_VERSION + " (java " + System.getProperty("java.version") + ")";
        events.emit("run_started", ",\"workload\":\"chat\",\"config\":"
                + json.writeValueAsString(rawConfig) + ",\"version\":" + Json.quote(version));

        ActorSystem<Root.Command> system = ActorSystem.create(Root.create(shared), "chat");
        int exit = 0;
        Injector injector = null;
        Thread injectorThread = null;
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
            long startNanos = System.nanoTime() + (startUs - EventWriter.nowMicros()) * 1000L;
            events.emit("ready", ",\"what\":\"window\",\"count\":" + cfg.durationS()
                    + ",\"start_us\":" + startUs);

            Receptionist.Listing listing = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(
                    system.receptionist(), reply -> Receptionist.find(Discovery.SERVICE_KEY, reply),
                    Duration.ofSeconds(10), system.scheduler()).toCompletableFuture().get(15, TimeUnit.SECONDS);
            ActorRef<Discovery.Command> discovery =
                    listing.getServiceInstances(Discovery.SERVICE_KEY).iterator().next();
            injector = new Injector(schedule, shared, system, discovery, startNanos);
            injectorThread = new Thread(injector, "chat-injector");
            injectorThread.setDaemon(true);
            injectorThread.start();

            // The throughput counter: window second s ends at start + s + 1 (no drift).
            parkUntil(startNanos);
            long last = shared.received.sum();
            for (int s = 0; s < cfg.durationS(); s++) {
                parkUntil(startNanos + (s + 1) * 1_000_000_000L);
                long now = shared.received.sum();
                events.emit("throughput", ",\"second\":" + s + ",\"count\":" + (now - last));
                last = now;
            }
        } catch (TimeoutException e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat: set-up failed: " + e.getMessage());
            exit = 1;
        }
        if (injector != null) {
            injector.stop();
            injectorThread.join(5_000);
        }
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            shared.errors.incrementAndGet();
            System.err.println("akka chat: actor system did not terminate within 30 s");
        }
        long afterWindow = injector == null ? 0 : injector.afterWindow.get();
        System.err.printf("akka chat: faults injected %d, skipped %d, after the window %d, errors %d%n",
                shared.injected.get(), shared.skipped.get(), afterWindow, shared.errors.get());
        long errors = shared.errors.get();
        long skipped = shared.skipped.get();
        boolean ok = events.finish("run_finished", dropped -> ",\"dropped_events\":" + dropped
                + ",\"errors\":" + errors + ",\"skipped_faults\":" + skipped
                + ",\"faults_after_window\":" + afterWindow, 10_000);
        if (!ok) {
            System.err.println("akka chat: the event writer failed; " + Json.quote(eventsTarget)
                    + " may be incomplete");
            return 1;
        }
        return exit;
    }

    private static void parkUntil(long deadline) {
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
