// Owns the `pingpong` micro-benchmark: the root actor (ping) sends n pings one at a time to a
// pong actor, sending the next when the answer arrives. msgs_per_s = 2n / time.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.LinkedHashMap;
import java.util.Map;

final class PingPong implements Bench {
    record Ping(ActorRef<Pong> replyTo) {}

    enum Pong { INSTANCE }

    @Override
    public String name() {
        return "pingpong";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 40_000L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return 2.0 * p.get("n");
    }

    static Behavior<Ping> pong() {
        return Behaviors.receive(Ping.class)
                .onMessage(Ping.class, ping -> {
                    ping.replyTo().tell(Pong.INSTANCE);
                    return Behaviors.same();
                })
                .build();
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        return Behaviors.<Pong>setup(ctx -> new Pinger(ctx, n, done));
    }

    private static final class Pinger extends AbstractBehavior<Pong> {
        private final ActorRef<Ping> pong;
        private final long n;
        private final Completion done;
        private long answered;

        Pinger(ActorContext<Pong> ctx, long n, Completion done) {
            super(ctx);
            this.n = n;
            this.done = done;
            this.pong = ctx.spawn(pong(), "pong");
            pong.tell(new Ping(ctx.getSelf()));
        }

        @Override
        public Receive<Pong> createReceive() {
            return newReceiveBuilder().onMessage(Pong.class, m -> {
                if (++answered == n) {
                    done.finish(answered);
                    return Behaviors.stopped();
                }
                pong.tell(new Ping(getContext().getSelf()));
                return this;
            }).build();
        }
    }
}
