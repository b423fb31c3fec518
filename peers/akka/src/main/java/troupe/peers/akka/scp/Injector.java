// Owns the SCP fault injector's loop: a plain thread, outside any actor system's dispatcher,
// that replays the lab's schedule.jsonl against the servers. Each action, at `at_ms` after the
// measurement window opens, picks the server of (group, slot) (or the next live slot, wrapping),
// emits `fault_injected` and sends that server a Stop, which makes it throw. Actions with no live
// target are skipped and counted; the schedule is the lab's, so every runtime in a comparison
// suffers the same faults at the same offsets. Where the thread runs is the config key
// `injector` (docs/scp.md, "Where the injector runs"): in the measured JVM (in_process, picking
// from the Targets table directly) or in its own JVM (node, InjectorNode: picking from its own
// table of live slots, and killing across Akka remoting).
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule.Action;

final class Injector implements Runnable {
    /** How the injector finds its victim. */
    interface Victims {
        /**
         * The first live slot of {@code group} at or after {@code slot} (wrapping) and its server,
         * or null when none is live; a kill that no restart follows marks the slot dead.
         */
        Victim pick(int group, int slot) throws Exception;
    }

    /** A slot picked for a kill and its server. */
    record Victim(int slot, ActorRef<Server.Command> server) {}

    /** In the measured JVM: the Targets table itself. */
    static Victims local(Targets targets, boolean recovery) {
        return (group, slot) -> {
            int s = targets.nextLive(group, slot);
            if (s < 0) {
                return null;
            }
            if (!recovery) {
                // The kill is certain and no restart follows: the slot is gone from now on, so a
                // second action in the same burst picks another live slot, as with Erlang's kill.
                targets.dead(group, s);
            }
            return new Victim(s, targets.ref(group, s));
        };
    }

    private final List<Action> actions;
    private final ScpConfig cfg;
    private final Victims victims;
    private final EventWriter events;
    private final CompletableFuture<Long> windowStart;
    private final CompletableFuture<Void> finished;
    final AtomicLong errors;
    final AtomicLong skipped = new AtomicLong();
    final AtomicLong injected = new AtomicLong();
    final AtomicLong afterWindow = new AtomicLong();

    Injector(List<Action> actions, ScpConfig cfg, Victims victims, EventWriter events,
             CompletableFuture<Long> windowStart, CompletableFuture<Void> finished,
             AtomicLong errors) {
        this.actions = actions;
        this.cfg = cfg;
        this.victims = victims;
        this.events = events;
        this.windowStart = windowStart;
        this.finished = finished;
        this.errors = errors;
    }


    @Override
    public void run() {
        long start;
        try {
            // Bounded: setup plus warm-up; the main thread gives up on the run after that too.
            start = windowStart.get(cfg.warmupS() + Main.SETUP_TIMEOUT_S, TimeUnit.SECONDS);
        } catch (Exception e) {
            return;
        }
        long windowMs = cfg.durationS() * 1000L;
        for (Action a : actions) {
            if (a.atMs() >= windowMs || a.atMs() < 0) {
                afterWindow.incrementAndGet();
                continue;
            }
            long deadline = start + TimeUnit.MILLISECONDS.toNanos(a.atMs());
            long now;
            while ((now = System.nanoTime()) < deadline) {
                if (finished.isDone() || Thread.currentThread().isInterrupted()) {
                    return;
                }
                LockSupport.parkNanos(Math.min(deadline - now, 50_000_000L));
            }
            if (finished.isDone()) {
                return;
            }
            carryOut(a);
        }
    }

    private void carryOut(Action a) {
        if (!"kill".equals(a.kind())) {
            errors.incrementAndGet();
            System.err.println("injector: fault kind " + a.kind() + " (id " + a.id()
                    + ") is not supported by the Akka SCP peer; skipped");
            skipped.incrementAndGet();
            return;
        }
        if (a.group() < 0 || a.group() >= cfg.supervisors() || a.slot() < 0
                || a.slot() >= cfg.perGroup()) {
            errors.incrementAndGet();
            System.err.println("injector: target g" + a.group() + "/s" + a.slot() + " (id "
                    + a.id() + ") is outside " + cfg.supervisors() + " groups x "
                    + cfg.perGroup() + " slots; skipped");
            skipped.incrementAndGet();
            return;
        }
        Victim v;
        try {
            v = victims.pick(a.group(), a.slot());
        } catch (Exception e) {
            errors.incrementAndGet();
            System.err.println("injector: picking the target of " + a.id() + " failed: " + e);
            skipped.incrementAndGet();
            return;
        }
        if (v == null) {
            skipped.incrementAndGet();
            return;
        }
        // Event first (stamped by this process), so its timestamp is the kill-sent instant and
        // precedes the `restarted` the kill causes.
        events.emit("fault_injected", ",\"id\":" + Json.quote(a.id()) + ",\"target\":\"g"
                + a.group() + "/s" + v.slot() + "\",\"kind\":\"kill\"");
        injected.incrementAndGet();
        v.server().tell(Server.Stop.INSTANCE);
    }
}
