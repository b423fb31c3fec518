// Owns the SCP exchange count: every server tells it +1 per completed exchange. After setup it
// emits `ready`, waits `warmup_s`, then opens the measurement window and emits one `throughput`
// event per second for `duration_s` seconds, then reports the end of the run to the main thread.
package troupe.peers.akka.scp;

import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.Behaviors;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import troupe.peers.akka.common.EventWriter;

final class Aggregator {
    private Aggregator() {}

    sealed interface Command permits Exchange, SetupDone, Timer {}

    /** One completed exchange (a singleton: the hot message allocates nothing). */
    enum Exchange implements Command { INSTANCE }

    /** From the head: every pair has been spawned. */
    record SetupDone(int pairs) implements Command {}

    private enum Timer implements Command { WARMUP_OVER, TICK }

    /**
     * @param windowStart completed with System.nanoTime() when the measurement window opens
     * @param finished    completed after the last throughput second was emitted
     */
    static Behavior<Command> create(ScpConfig cfg, EventWriter events,
                                    CompletableFuture<Long> windowStart,
                                    CompletableFuture<Void> finished) {
        return Behaviors.withTimers(timers -> {
            long[] count = {0};
            int[] second = {-1}; // -1: not in the window yet
            boolean[] ready = {false};
            return Behaviors.receive(Command.class)
                    .onMessageEquals(Exchange.INSTANCE, () -> {
                        count[0]++;
                        return Behaviors.same();
                    })
                    .onMessage(SetupDone.class, done -> {
                        if (!ready[0]) {
                            ready[0] = true;
                            events.emit("ready", ",\"what\":\"pairs\",\"count\":" + done.pairs());
                            timers.startSingleTimer(Timer.WARMUP_OVER,
                                    Duration.ofSeconds(cfg.warmupS()));
                        }
                        return Behaviors.same();
                    })
                    .onMessageEquals(Timer.WARMUP_OVER, () -> {
                        count[0] = 0;
                        second[0] = 0;
                        windowStart.complete(System.nanoTime());
                        timers.startTimerAtFixedRate(Timer.TICK, Duration.ofSeconds(1));
                        return Behaviors.same();
                    })
                    .onMessageEquals(Timer.TICK, () -> {
                        if (second[0] < 0 || second[0] >= cfg.durationS()) {
                            return Behaviors.same();
                        }
                        events.emit("throughput", ",\"second\":" + second[0] + ",\"count\":" + count[0]);
                        count[0] = 0;
                        second[0]++;
                        if (second[0] == cfg.durationS()) {
                            timers.cancel(Timer.TICK);
                            finished.complete(null);
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
