// Owns the SCP peer process (workloads.md §1, the peer-program contract in the lab's briefs):
// reads TROUPE_CONFIG / TROUPE_SCHEDULE / TROUPE_EVENTS / TROUPE_RUN_ID, starts the event writer,
// the actor system (guardian = head supervisor) and the injector thread, waits for the
// aggregator to close the measurement window, then stops everything and emits run_finished.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorSystem;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import troupe.peers.akka.common.Schedule;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;

public final class Main {
    /** Seconds allowed for spawning every pair before the run is declared failed. */
    static final long SETUP_TIMEOUT_S = 120;

    private Main() {}

    public static void main(String[] args) throws Exception {
        System.exit(run());
    }

    private static int run() throws Exception {
        String configPath = System.getenv("TROUPE_CONFIG");
        String schedulePath = System.getenv("TROUPE_SCHEDULE");
        String eventsTarget = System.getenv("TROUPE_EVENTS");
        String runId = System.getenv().getOrDefault("TROUPE_RUN_ID", "run");
        String node = System.getenv().getOrDefault("TROUPE_NODE", "akka-scp");
        if (configPath == null || eventsTarget == null) {
            System.err.println("scp: TROUPE_CONFIG and TROUPE_EVENTS must be set "
                    + "(TROUPE_SCHEDULE and TROUPE_RUN_ID too, normally)");
            return 2;
        }
        ObjectMapper json = new ObjectMapper();
        JsonNode rawConfig;
        ScpConfig cfg;
        try {
            rawConfig = json.readTree(Path.of(configPath).toFile());
            cfg = ScpConfig.parse(rawConfig);
        } catch (Exception e) {
            System.err.println("scp: bad config " + configPath + ": " + e.getMessage());
            return 2;
        }
        AtomicLong errors = new AtomicLong();
        List<Schedule.Action> schedule = List.of();
        if (schedulePath == null || schedulePath.isEmpty()) {
            System.err.println("scp: TROUPE_SCHEDULE not set: running without faults");
        } else {
            schedule = Schedule.read(Path.of(schedulePath), errors);
        }

        EventWriter events = EventWriter.open(eventsTarget, runId, "akka", node);
        events.emit("run_started", ",\"workload\":\"scp\",\"config\":"
                + json.writeValueAsString(rawConfig));

        Targets targets = new Targets(cfg.supervisors(), cfg.perGroup());
        CompletableFuture<Long> windowStart = new CompletableFuture<>();
        CompletableFuture<Void> finished = new CompletableFuture<>();
        ActorSystem<Head.Command> system = ActorSystem.create(
                Head.create(cfg, events, targets, windowStart, finished), "scp");
        Injector injector = new Injector(schedule, cfg, targets, events, windowStart, finished,
                errors);
        Thread injectorThread = new Thread(injector, "scp-injector");
        injectorThread.setDaemon(true);
        injectorThread.start();

        int exit = 0;
        try {
            finished.get(SETUP_TIMEOUT_S + cfg.warmupS() + cfg.durationS() + 30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            errors.incrementAndGet();
            System.err.println("scp: the measurement window never closed (setup or aggregator "
                    + "stuck); giving up");
            exit = 1;
        }
        injectorThread.interrupt();
        injectorThread.join(5_000);
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            errors.incrementAndGet();
            System.err.println("scp: actor system did not terminate within 30 s");
        }
        System.err.printf("scp: faults injected %d, skipped %d, scheduled after the window %d, "
                        + "errors %d%n", injector.injected.get(), injector.skipped.get(),
                injector.afterWindow.get(), errors.get());
        long skipped = injector.skipped.get();
        long afterWindow = injector.afterWindow.get();
        boolean ok = events.finish("run_finished", dropped -> ",\"dropped_events\":" + dropped
                + ",\"errors\":" + errors.get() + ",\"skipped_faults\":" + skipped
                + ",\"faults_after_window\":" + afterWindow, 10_000);
        if (!ok) {
            System.err.println("scp: the event writer failed; " + Json.quote(EventWriter.redact(eventsTarget))
                    + " may be incomplete");
            return 1;
        }
        return exit;
    }
}
