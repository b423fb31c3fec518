// Owns the `fjthrput` micro-benchmark (Savina fork-join throughput): the root sends n messages
// to each of `actors` workers, round-robin; each worker does Savina's tiny computation per
// message and reports when it has processed n. msgs_per_s = n * actors / time.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class FjThrput implements Bench {
    enum Work { INSTANCE }

    /** A worker processed all its messages; {@code acc} keeps the computation observable. */
    record Done(long processed, double acc) {}

    @Override
    public String name() {
        return "fjthrput";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 10_000L);
        d.put("actors", 60L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return (double) p.get("n") * p.get("actors");
    }

    private static final class Worker extends AbstractBehavior<Work> {
        private final long n;
        private final ActorRef<Done> root;
        private long processed;
        private double acc;

        Worker(ActorContext<Work> ctx, long n, ActorRef<Done> root) {
            super(ctx);
            this.n = n;
            this.root = root;
        }

        @Override
        public Receive<Work> createReceive() {
            return newReceiveBuilder().onMessageEquals(Work.INSTANCE, () -> {
                acc += Completion.tinyComputation(37.2);
                if (++processed == n) {
                    root.tell(new Done(processed, acc));
                }
                return this;
            }).build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        int actors = Math.toIntExact(p.get("actors"));
        return Behaviors.<Done>setup(ctx -> {
            List<ActorRef<Work>> workers = new ArrayList<>(actors);
            for (int a = 0; a < actors; a++) {
                workers.add(ctx.spawn(Behaviors.<Work>setup(c -> new Worker(c, n, ctx.getSelf())),
                        "worker-" + a));
            }
            for (long i = 0; i < n; i++) {
                for (ActorRef<Work> w : workers) {
                    w.tell(Work.INSTANCE);
                }
            }
            long[] finished = {0, 0};
            return Behaviors.receive(Done.class).onMessage(Done.class, d -> {
                finished[1] += d.processed();
                if (d.acc() <= 0) {
                    done.fail("fjthrput: computation result " + d.acc() + " is not positive");
                    return Behaviors.stopped();
                }
                if (++finished[0] < actors) {
                    return Behaviors.same();
                }
                if (finished[1] != n * actors) {
                    done.fail("fjthrput: processed " + finished[1] + " != " + n * actors);
                } else {
                    done.finish(finished[1]);
                }
                return Behaviors.stopped();
            }).build();
        });
    }
}
