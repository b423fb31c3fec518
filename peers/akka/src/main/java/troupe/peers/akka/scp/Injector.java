// Owns the SCP fault injector: a plain thread in the same JVM, outside the actor system's
// dispatcher, that replays the lab's schedule.jsonl against the servers. Each action, at
// `at_ms` after the measurement window opens, sends a Stop to the server of (group, slot) (or
// the next live slot, wrapping), which makes that server throw, and emits `fault_injected`.
// Actions with no live target are skipped and counted; the schedule is the lab's, so every
// runtime in a comparison suffers the same faults at the same offsets.
package troupe.peers.akka.scp;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.common.Schedule.Action;

final class Injector implements Runnable {
    private final List<Action> actions;
    private final ScpConfig cfg;
    private final Targets targets;
    private final EventWriter events;
    private final CompletableFuture<Long> windowStart;
    private final CompletableFuture<Void> finished;
    final AtomicLong errors;
    final AtomicLong skipped = new AtomicLong();
    final AtomicLong injected = new AtomicLong();
    final AtomicLong afterWindow = new AtomicLong();

    Injector(List<Action> actions, ScpConfig cfg, Targets targets, EventWriter events,
             CompletableFuture<Long> windowStart, CompletableFuture<Void> finished,
             AtomicLong errors) {
        this.actions = actions;
        this.cfg = cfg;
        this.targets = targets;
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
        if (a.group() < 0 || a.group() >= targets.groups || a.slot() < 0
                || a.slot() >= targets.perGroup) {
            errors.incrementAndGet();
            System.err.println("injector: target g" + a.group() + "/s" + a.slot() + " (id "
                    + a.id() + ") is outside " + targets.groups + " groups x "
                    + targets.perGroup + " slots; skipped");
            skipped.incrementAndGet();
            return;
        }
        int slot = targets.nextLive(a.group(), a.slot());
        if (slot < 0) {
            skipped.incrementAndGet();
            return;
        }
        if (!cfg.recovery()) {
            // The kill is certain and no restart follows: the slot is gone from now on, so a
            // second action in the same burst picks another live slot, as with Erlang's kill.
            targets.dead(a.group(), slot);
        }
        // Event first, so its timestamp precedes the `restarted` the kill causes.
        events.emit("fault_injected", ",\"id\":" + Json.quote(a.id()) + ",\"target\":\"g"
                + a.group() + "/s" + slot + "\",\"kind\":\"kill\"");
        injected.incrementAndGet();
        targets.ref(a.group(), slot).tell(Server.Stop.INSTANCE);
    }
}
