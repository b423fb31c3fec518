// Owns the `count` micro-benchmark: the root actor (producer) sends n increments to a counter
// actor, then asks for the total, which must equal n. msgs_per_s = n / time.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.LinkedHashMap;
import java.util.Map;

final class Count implements Bench {
    sealed interface CounterMsg permits Increment, Get {}

    enum Increment implements CounterMsg { INSTANCE }

    record Get(ActorRef<Total> replyTo) implements CounterMsg {}

    record Total(long value) {}

    @Override
    public String name() {
        return "count";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 1_000_000L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return p.get("n");
    }

    private static final class Counter extends AbstractBehavior<CounterMsg> {
        private long count;

        Counter(ActorContext<CounterMsg> ctx) {
            super(ctx);
        }

        @Override
        public Receive<CounterMsg> createReceive() {
            return newReceiveBuilder()
                    .onMessageEquals(Increment.INSTANCE, () -> {
                        count++;
                        return this;
                    })
                    .onMessage(Get.class, get -> {
                        get.replyTo().tell(new Total(count));
                        return this;
                    })
                    .build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        return Behaviors.<Total>setup(ctx -> {
            ActorRef<CounterMsg> counter = ctx.spawn(Behaviors.setup(Counter::new), "counter");
            for (long i = 0; i < n; i++) {
                counter.tell(Increment.INSTANCE);
            }
            counter.tell(new Get(ctx.getSelf()));
            return Behaviors.receive(Total.class).onMessage(Total.class, total -> {
                if (total.value() != n) {
                    done.fail("count: total " + total.value() + " != n " + n);
                } else {
                    done.finish(total.value());
                }
                return Behaviors.stopped();
            }).build();
        });
    }
}
