// Owns the fault model of one device's link to the servers (drop_probability, delay_min_ms,
// delay_max_ms), applied in the device process to both directions of device <-> server
// messages only, from an RNG seeded with seed + device index (a new incarnation continues the
// same sequence's seed, plus the incarnation number).
package troupe.peers.akka.iot;

import java.util.SplittableRandom;

final class Link {
    private final SplittableRandom rng;
    private final double drop;
    private final long minMs;
    private final long spanMs;

    Link(IotConfig cfg, int device, long incarnation) {
        this.rng = new SplittableRandom(cfg.seed() + device + incarnation * 1_000_003L);
        this.drop = cfg.dropProbability();
        this.minMs = cfg.delayMinMs();
        this.spanMs = cfg.delayMaxMs() - cfg.delayMinMs();
    }

    /** True when nothing is ever dropped or delayed (the fast path). */
    boolean clean() {
        return drop == 0.0 && minMs == 0 && spanMs == 0;
    }

    /** The fate of one message: -1 = dropped, else its delay in ms (0 = now). */
    long fate() {
        if (drop > 0.0 && rng.nextDouble() < drop) {
            return -1;
        }
        return spanMs > 0 ? minMs + rng.nextLong(spanMs + 1) : minMs;
    }
}
