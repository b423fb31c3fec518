// Owns the shape every timed micro-benchmark has (workloads.md §6, the peer contract): a name,
// its parameters with Savina defaults, the root behaviour of one iteration, and the message
// count its msgs_per_s is computed from. Exists so Main can run any benchmark the same way:
// one warm-up, `reps` measured iterations, the median reported.
package troupe.peers.akka.micro;

import akka.actor.typed.Behavior;
import java.util.Map;

interface Bench {
    String name();

    /** Parameter names with their defaults, in the order they are printed. */
    Map<String, Long> defaults();

    /**
     * The root actor of one iteration. It sets the benchmark up, runs it, checks the result,
     * calls {@code done.finish} (or {@code done.fail}) and stops; its children stop with it.
     */
    Behavior<?> root(Map<String, Long> p, Completion done);

    /** Messages one iteration processes, for msgs_per_s; 0 when the bench reports time only. */
    double messages(Map<String, Long> p);
}
