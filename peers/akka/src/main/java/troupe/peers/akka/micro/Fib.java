// Owns the `fib` micro-benchmark (Savina recursive fibonacci): the actor for fib(k), k > 1,
// spawns one child actor for k-1 and one for k-2, sums their replies, replies to its parent and
// stops; the actors for k <= 1 reply k at once. fib(25) spawns 242,785 actors in all; the result
// must equal fib(n) (75025 for n=25). Time only.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.LinkedHashMap;
import java.util.Map;

final class Fib implements Bench {
    record Result(long value) {}

    @Override
    public String name() {
        return "fib";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 25L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return 0;
    }

    static long expected(long n) {
        long a = 0;
        long b = 1;
        for (long i = 0; i < n; i++) {
            long t = a + b;
            a = b;
            b = t;
        }
        return a;
    }

    static Behavior<Result> fib(long k, ActorRef<Result> parent) {
        return Behaviors.setup(ctx -> {
            if (k <= 1) {
                parent.tell(new Result(k));
                return Behaviors.stopped();
            }
            ctx.spawnAnonymous(fib(k - 1, ctx.getSelf()));
            ctx.spawnAnonymous(fib(k - 2, ctx.getSelf()));
            return new Summing(ctx, parent);
        });
    }

    private static final class Summing extends AbstractBehavior<Result> {
        private final ActorRef<Result> parent;
        private int replies;
        private long sum;

        Summing(ActorContext<Result> ctx, ActorRef<Result> parent) {
            super(ctx);
            this.parent = parent;
        }

        @Override
        public Receive<Result> createReceive() {
            return newReceiveBuilder().onMessage(Result.class, r -> {
                sum += r.value();
                if (++replies < 2) {
                    return this;
                }
                parent.tell(new Result(sum));
                return Behaviors.stopped();
            }).build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        if (n > 40) {
            throw new IllegalArgumentException("fib: n=" + n + " would spawn too many actors; at most 40");
        }
        return Behaviors.<Result>setup(ctx -> {
            ctx.spawn(fib(n, ctx.getSelf()), "fib");
            return Behaviors.receive(Result.class).onMessage(Result.class, r -> {
                if (r.value() != expected(n)) {
                    done.fail("fib: got " + r.value() + ", fib(" + n + ") = " + expected(n));
                } else {
                    done.finish(r.value());
                }
                return Behaviors.stopped();
            }).build();
        });
    }
}
