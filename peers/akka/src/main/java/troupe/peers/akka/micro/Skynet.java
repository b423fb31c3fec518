// Owns the `skynet` micro-benchmark: a width-ary tree of actors `depth` levels deep (10^6
// leaves for depth=6 width=10); leaf i replies i, every parent sums its children's replies and
// replies to its own parent, then stops. The total must equal L*(L-1)/2 for L leaves
// (499999500000 by default). Time only.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.LinkedHashMap;
import java.util.Map;

final class Skynet implements Bench {
    record Sum(long value) {}

    @Override
    public String name() {
        return "skynet";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("depth", 6L);
        d.put("width", 10L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return 0;
    }

    static Behavior<Sum> node(int level, long num, int depth, int width, ActorRef<Sum> parent) {
        return Behaviors.setup(ctx -> {
            if (level == depth) {
                parent.tell(new Sum(num));
                return Behaviors.stopped();
            }
            for (int i = 0; i < width; i++) {
                ctx.spawnAnonymous(node(level + 1, num * width + i, depth, width, ctx.getSelf()));
            }
            return new Summing(ctx, width, parent);
        });
    }

    private static final class Summing extends AbstractBehavior<Sum> {
        private final int width;
        private final ActorRef<Sum> parent;
        private int replies;
        private long sum;

        Summing(ActorContext<Sum> ctx, int width, ActorRef<Sum> parent) {
            super(ctx);
            this.width = width;
            this.parent = parent;
        }

        @Override
        public Receive<Sum> createReceive() {
            return newReceiveBuilder().onMessage(Sum.class, s -> {
                sum += s.value();
                if (++replies < width) {
                    return this;
                }
                parent.tell(new Sum(sum));
                return Behaviors.stopped();
            }).build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        int depth = Math.toIntExact(p.get("depth"));
        int width = Math.toIntExact(p.get("width"));
        double leavesD = Math.pow(width, depth);
        if (width < 1 || depth < 0 || leavesD > 50_000_000) {
            throw new IllegalArgumentException("skynet: width^depth must be 1..50000000");
        }
        long leaves = (long) leavesD;
        long expected = leaves * (leaves - 1) / 2;
        return Behaviors.<Sum>setup(ctx -> {
            ctx.spawn(node(0, 0, depth, width, ctx.getSelf()), "skynet");
            return Behaviors.receive(Sum.class).onMessage(Sum.class, s -> {
                if (s.value() != expected) {
                    done.fail("skynet: sum " + s.value() + " != " + expected);
                } else {
                    done.finish(s.value());
                }
                return Behaviors.stopped();
            }).build();
        });
    }
}
