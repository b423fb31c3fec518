// Owns the `fjcreate` micro-benchmark (Savina fork-join create): the root creates n actors and
// sends each one message; each does the tiny computation, tells the root and stops. Done when
// the root has heard from all n. Time only.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.Behaviors;
import java.util.LinkedHashMap;
import java.util.Map;

final class FjCreate implements Bench {
    record Work(ActorRef<Processed> replyTo) {}

    record Processed(double value) {}

    @Override
    public String name() {
        return "fjcreate";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 40_000L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return 0;
    }

    static Behavior<Work> worker() {
        return Behaviors.receive(Work.class).onMessage(Work.class, w -> {
            w.replyTo().tell(new Processed(Completion.tinyComputation(37.2)));
            return Behaviors.stopped();
        }).build();
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        return Behaviors.<Processed>setup(ctx -> {
            for (long i = 0; i < n; i++) {
                ctx.spawnAnonymous(worker()).tell(new Work(ctx.getSelf()));
            }
            long[] seen = {0};
            return Behaviors.receive(Processed.class).onMessage(Processed.class, m -> {
                if (m.value() <= 0) {
                    done.fail("fjcreate: computation result " + m.value() + " is not positive");
                    return Behaviors.stopped();
                }
                if (++seen[0] == n) {
                    done.finish(seen[0]);
                    return Behaviors.stopped();
                }
                return Behaviors.same();
            }).build();
        });
    }
}
