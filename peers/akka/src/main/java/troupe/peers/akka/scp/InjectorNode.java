// Owns the injector's own JVM (injector = "node"; `Main injector`, started by InjectorLink): an
// actor system of its own reaching the measured one over Akka remoting (Artery TCP on
// 127.0.0.1), the same Injector loop on a plain thread, and its own event stream, node
// `injector`, appended to the same TROUPE_EVENTS file.
//
// Rules:
//  1. It reads the same config and schedule as the measured JVM, writes run_started (role
//     injector) and starts its actor system while the measured JVM starts its own; it then reads
//     the measured JVM's `scp-targets` address, one line on stdin, says Ready (again every 2 s
//     until answered, InjectorLink rule 1), and times every action from the window start
//     (InjectorLink rule 2).
//  2. Per action, at its instant, it picks the victim from its own table of live slots (the next
//     live slot, wrapping; InjectorLink rule 3), emits `fault_injected` (stamped here, before the
//     kill is sent) and sends the server a Stop across the wire, which makes it throw as in the
//     in-process injector.
//  3. After the last action it says Done with its counts, writes run_finished
//     {dropped_events, errors, killed, not_killed} (skipped faults are counted once, in the
//     measured JVM's run_finished), terminates its actor system and exits 0. It halts when the
//     measured JVM's end of its stdin closes, and every wait is bounded by the run's length.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorRefResolver;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.AskPattern;
import akka.actor.typed.javadsl.Behaviors;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Schedule;

final class InjectorNode {
    /** The node name in the events. */
    static final String NODE = "injector";

    private static volatile boolean finishing;

    private InjectorNode() {}

    static int run() throws Exception {
        String configPath = System.getenv("TROUPE_CONFIG");
        String eventsTarget = System.getenv("TROUPE_EVENTS");
        String schedulePath = System.getenv("TROUPE_SCHEDULE");
        String runId = System.getenv().getOrDefault("TROUPE_RUN_ID", "run");
        if (configPath == null || eventsTarget == null) {
            System.err.println("scp injector: TROUPE_CONFIG and TROUPE_EVENTS must be set; this JVM "
                    + "is started by the Akka SCP peer");
            return 2;
        }
        CompletableFuture<String> address = dieWithParent();
        ObjectMapper json = new ObjectMapper();
        JsonNode rawConfig = json.readTree(Path.of(configPath).toFile());
        ScpConfig cfg = ScpConfig.parse(rawConfig);
        AtomicLong errors = new AtomicLong();
        List<Schedule.Action> schedule = schedulePath == null || schedulePath.isEmpty()
                ? List.of() : Schedule.read(Path.of(schedulePath), errors);
        EventWriter events = EventWriter.open(eventsTarget, runId, "akka", NODE);
        events.emit("run_started", ",\"workload\":\"scp\",\"role\":\"injector\",\"config\":"
                + json.writeValueAsString(rawConfig));
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "scp-injector",
                InjectorLink.remoteConfig());
        long killed = 0;
        long notKilled = schedule.size();
        try {
            // Rule 1, bounded by set-up, warm-up and a margin, as the measured JVM's own wait.
            long setupNanos = System.nanoTime() + (Main.SETUP_TIMEOUT_S + cfg.warmupS() + 30) * 1_000_000_000L;
            ActorRef<InjectorLink.Command> targets = ActorRefResolver.get(system)
                    .resolveActorRef(address.get(Main.SETUP_TIMEOUT_S, TimeUnit.SECONDS));
            for (boolean hello = false; !hello; ) {
                try {
                    InjectorNode.<InjectorLink.Hello>ask(system, targets,
                            r -> new InjectorLink.Ready(ProcessHandle.current().pid(), r), Duration.ofSeconds(2));
                    hello = true;
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    if (System.nanoTime() > setupNanos) {
                        throw new IllegalStateException("the measured JVM never answered Ready", e);
                    }
                }
            }
            Duration untilWindow = Duration.ofNanos(Math.max(0, setupNanos - System.nanoTime()));
            long startUs = InjectorNode.<InjectorLink.Window>ask(system, targets, InjectorLink.AwaitWindow::new,
                    untilWindow).startUs();
            long startNanos = System.nanoTime() - (EventWriter.nowMicros() - startUs) * 1000L;
            Injector injector = new Injector(schedule, cfg, remote(system, targets, cfg), events,
                    CompletableFuture.completedFuture(startNanos), new CompletableFuture<>(), errors);
            injector.run(); // rule 2
            long injected = injector.injected.get();
            killed = injected;
            notKilled = schedule.size() - injected;
            long skipped = injector.skipped.get();
            long afterWindow = injector.afterWindow.get();
            InjectorNode.<InjectorLink.DoneAck>ask(system, targets,
                    r -> new InjectorLink.Done(injected, skipped, afterWindow, errors.get(), r),
                    Duration.ofSeconds(10));
        } catch (Exception e) {
            errors.incrementAndGet();
            System.err.println("scp injector: " + e);
        }
        finishing = true;
        long k = killed;
        long n = notKilled;
        boolean ok = events.finish("run_finished", dropped -> ",\"dropped_events\":" + dropped
                + ",\"errors\":" + errors.get() + ",\"killed\":" + k + ",\"not_killed\":" + n, 10_000);
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        return ok && errors.get() == 0 ? 0 : 1;
    }

    /**
     * Rule 2: the servers by their paths in the measured actor system, and this JVM's own table
     * of live slots (InjectorLink rule 3).
     */
    private static Injector.Victims remote(ActorSystem<?> system, ActorRef<InjectorLink.Command> targets,
                                           ScpConfig cfg) {
        ActorRefResolver resolver = ActorRefResolver.get(system);
        String sub = targets.path().address().toString();
        int perGroup = cfg.perGroup();
        java.util.BitSet dead = new java.util.BitSet(cfg.pairs());
        @SuppressWarnings("unchecked")
        ActorRef<Server.Command>[] refs = new ActorRef[cfg.pairs()];
        return (group, slot) -> {
            for (int k = 0; k < perGroup; k++) {
                int s = (slot + k) % perGroup;
                int i = group * perGroup + s;
                if (dead.get(i)) {
                    continue;
                }
                if (!cfg.recovery()) {
                    dead.set(i); // no restart follows this kill
                }
                if (refs[i] == null) {
                    refs[i] = resolver.resolveActorRef(sub + "/user/sup-" + group + "/server-" + s);
                }
                return new Injector.Victim(s, refs[i]);
            }
            return null;
        };
    }

    private static <T> T ask(ActorSystem<?> system, ActorRef<InjectorLink.Command> to,
                             akka.japi.function.Function<ActorRef<T>, InjectorLink.Command> msg,
                             Duration limit) throws Exception {
        return AskPattern.ask(to, msg, limit, system.scheduler()).toCompletableFuture()
                .get(limit.toMillis() + 1000, TimeUnit.MILLISECONDS);
    }

    /**
     * Rules 1 and 3: the first line on stdin is the measured JVM's `scp-targets` address; the
     * JVM halts when the measured JVM's end of stdin closes (it is gone).
     */
    private static CompletableFuture<String> dieWithParent() {
        CompletableFuture<String> address = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line = in.readLine();
                if (line != null) {
                    address.complete(line.trim());
                }
                while (in.read() != -1) {
                    // nothing more is written; EOF means the measured JVM is gone
                }
            } catch (IOException e) {
                // same as EOF
            }
            if (!finishing) {
                System.err.println("scp injector: the measured JVM went away; halting");
                Runtime.getRuntime().halt(3);
            }
        }, "parent-watch");
        t.setDaemon(true);
        t.start();
        return address;
    }
}
