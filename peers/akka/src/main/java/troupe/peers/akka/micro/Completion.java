// Owns the hand-off from a benchmark's actors to the measuring main thread: the time the work
// finished (taken on the actor that saw it finish), the checked result, and when the iteration's
// actors have all stopped. Exists so the measured interval ends where the work ends, not when
// the main thread happens to wake up.
package troupe.peers.akka.micro;

import java.util.concurrent.CompletableFuture;

final class Completion {
    final CompletableFuture<Long> result = new CompletableFuture<>();
    final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private volatile long endNanos;

    /** The measured work is done and its result checked. */
    void finish(long value) {
        endNanos = System.nanoTime();
        result.complete(value);
    }

    /** A correctness check failed; the run exits non-zero with {@code why}. */
    void fail(String why) {
        result.completeExceptionally(new IllegalStateException(why));
    }

    /** The iteration's root actor has terminated (normally after finish). */
    void rootStopped() {
        result.completeExceptionally(
                new IllegalStateException("the root actor stopped before the benchmark finished"));
        stopped.complete(null);
    }

    long endNanos() {
        return endNanos;
    }

    /** Savina's per-message "tiny computation" (fork-join benchmarks): sin(theta) squared. */
    static double tinyComputation(double theta) {
        double s = Math.sin(theta);
        return s * s;
    }
}
