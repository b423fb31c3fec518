// Owns the SCP peer process (workloads.md §1, the peer-program contract in the lab's briefs):
// reads TROUPE_CONFIG / TROUPE_SCHEDULE / TROUPE_EVENTS / TROUPE_RUN_ID, starts the event writer,
// the actor system (guardian = head supervisor) and the injector (injector = "node", the
// default: its own JVM, InjectorLink / InjectorNode; "in_process": a thread of this JVM), waits
// for the aggregator to close the measurement window, then stops everything and emits
// run_finished. `Main injector` is the injector's JVM (InjectorNode).
package troupe.peers.akka.scp;

import akka.actor.typed.ActorSystem;
import akka.actor.typed.Behavior;
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
        if (args.length == 1 && args[0].equals("injector")) {
            System.exit(InjectorNode.run());
        }
        if (args.length > 0) {
            System.err.println("scp: unexpected arguments " + String.join(" ", args)
                    + " (the peer takes none; `injector` is the injector's own JVM)");
            System.exit(2);
        }
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
            // With injector = "node" the injector's JVM reads it too and counts its errors.
            schedule = Schedule.read(Path.of(schedulePath), cfg.injectorNode() ? new AtomicLong() : errors);
        }

        EventWriter events = EventWriter.open(eventsTarget, runId, "akka", node);
        events.emit("run_started", ",\"workload\":\"scp\",\"config\":"
                + json.writeValueAsString(rawConfig));

        Targets targets = new Targets(cfg.supervisors(), cfg.perGroup());
        CompletableFuture<Long> windowStart = new CompletableFuture<>();
        CompletableFuture<Void> finished = new CompletableFuture<>();
        CompletableFuture<Void> injectorReady = cfg.injectorNode()
                ? new CompletableFuture<>() : CompletableFuture.completedFuture(null);
        Behavior<Head.Command> head = Head.create(cfg, events, targets, windowStart, finished,
                injectorReady);
        InjectorLink link = null;
        if (cfg.injectorNode()) {
            // The injector's JVM starts beside this one's actor system (InjectorLink).
            try {
                link = InjectorLink.launch(injectorReady);
            } catch (Exception e) {
                errors.incrementAndGet();
                System.err.println("scp: cannot start the injector's JVM: " + e);
                injectorReady.complete(null);
            }
        }
        ActorSystem<Head.Command> system = cfg.injectorNode()
                ? ActorSystem.create(head, "scp", InjectorLink.remoteConfig())
                : ActorSystem.create(head, "scp");
        Injector injector = null;
        Thread injectorThread = null;
        if (link != null) {
            try {
                link.attach(system, events);
                InjectorLink l = link;
                windowStart.thenAccept(l::openWindow);
            } catch (Exception e) {
                // Counted once, when the link finds no report from the injector (below).
                System.err.println("scp: cannot reach the injector's JVM: " + e);
                injectorReady.complete(null);
            }
        } else if (!cfg.injectorNode()) {
            injector = new Injector(schedule, cfg, Injector.local(targets, cfg.recovery()), events,
                    windowStart, finished, errors);
            injectorThread = new Thread(injector, "scp-injector");
            injectorThread.setDaemon(true);
            injectorThread.start();
        }

        int exit = 0;
        try {
            finished.get(SETUP_TIMEOUT_S + cfg.warmupS() + cfg.durationS() + 30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            errors.incrementAndGet();
            System.err.println("scp: the measurement window never closed (setup or aggregator "
                    + "stuck); giving up");
            exit = 1;
        }
        long injected = 0;
        long skipped = schedule.size();
        long afterWindow = 0;
        if (injectorThread != null) {
            injectorThread.interrupt();
            injectorThread.join(5_000);
            injected = injector.injected.get();
            skipped = injector.skipped.get();
            afterWindow = injector.afterWindow.get();
        } else if (link != null) {
            // Every action is due before the window ends; the grace lets the last ones land.
            InjectorLink.Done d = link.finish(10_000, exit != 0);
            if (d != null) {
                injected = d.injected();
                skipped = d.skipped();
                afterWindow = d.afterWindow();
            } else {
                errors.incrementAndGet();
                skipped = schedule.size();
                System.err.println("scp: the injector's JVM did not finish its schedule (its messages are "
                        + "above); every action counts as skipped");
            }
        }
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            errors.incrementAndGet();
            System.err.println("scp: actor system did not terminate within 30 s");
        }
        System.err.printf("scp: faults injected %d, skipped %d, scheduled after the window %d, "
                        + "errors %d, injector %s%n", injected, skipped, afterWindow, errors.get(),
                cfg.injectorNode() ? "node" : "in_process");
        long skippedFaults = skipped;
        long afterWindowFaults = afterWindow;
        boolean ok = events.finish("run_finished", dropped -> ",\"dropped_events\":" + dropped
                + ",\"errors\":" + errors.get() + ",\"skipped_faults\":" + skippedFaults
                + ",\"faults_after_window\":" + afterWindowFaults, 10_000);
        if (!ok) {
            System.err.println("scp: the event writer failed; " + Json.quote(EventWriter.redact(eventsTarget))
                    + " may be incomplete");
            return 1;
        }
        return exit;
    }
}
