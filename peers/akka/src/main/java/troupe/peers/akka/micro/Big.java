// Owns the `big` micro-benchmark (Savina big): `actors` actors each send n pings, one at a
// time, to random other actors (seeded per actor); every ping is answered with a pong. Done
// when every actor got all its pongs. msgs_per_s = 2 * n * actors / time.
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
import java.util.SplittableRandom;

final class Big implements Bench {
    sealed interface BigMsg permits Neighbours, Ping, Pong {}

    record Neighbours(List<ActorRef<BigMsg>> all) implements BigMsg {}

    record Ping(ActorRef<BigMsg> replyTo) implements BigMsg {}

    enum Pong implements BigMsg { INSTANCE }

    /** An actor got all its pongs. */
    record Done(long pongs) {}

    @Override
    public String name() {
        return "big";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("n", 20_000L);
        d.put("actors", 120L);
        d.put("seed", 42L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return 2.0 * p.get("n") * p.get("actors");
    }

    private static final class Member extends AbstractBehavior<BigMsg> {
        private final int index;
        private final long n;
        private final ActorRef<Done> root;
        private final SplittableRandom random;
        private List<ActorRef<BigMsg>> all;
        private long pongs;

        Member(ActorContext<BigMsg> ctx, int index, long n, long seed, ActorRef<Done> root) {
            super(ctx);
            this.index = index;
            this.n = n;
            this.root = root;
            this.random = new SplittableRandom(seed * 1_000_003L + index);
        }

        private void pingSomeone() {
            int target = random.nextInt(all.size() - 1);
            if (target >= index) {
                target++; // never itself
            }
            all.get(target).tell(new Ping(getContext().getSelf()));
        }

        @Override
        public Receive<BigMsg> createReceive() {
            return newReceiveBuilder()
                    .onMessage(Ping.class, ping -> {
                        ping.replyTo().tell(Pong.INSTANCE);
                        return this;
                    })
                    .onMessageEquals(Pong.INSTANCE, () -> {
                        if (++pongs == n) {
                            root.tell(new Done(pongs));
                        } else {
                            pingSomeone();
                        }
                        return this;
                    })
                    .onMessage(Neighbours.class, nb -> {
                        all = nb.all();
                        pingSomeone();
                        return this;
                    })
                    .build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        long n = p.get("n");
        int actors = Math.toIntExact(p.get("actors"));
        long seed = p.get("seed");
        if (actors < 2) {
            throw new IllegalArgumentException("big: needs at least 2 actors");
        }
        return Behaviors.<Done>setup(ctx -> {
            List<ActorRef<BigMsg>> all = new ArrayList<>(actors);
            for (int i = 0; i < actors; i++) {
                int index = i;
                all.add(ctx.spawn(Behaviors.<BigMsg>setup(
                        c -> new Member(c, index, n, seed, ctx.getSelf())), "member-" + i));
            }
            List<ActorRef<BigMsg>> shared = List.copyOf(all);
            for (ActorRef<BigMsg> a : shared) {
                a.tell(new Neighbours(shared));
            }
            long[] finished = {0, 0};
            return Behaviors.receive(Done.class).onMessage(Done.class, d -> {
                finished[1] += d.pongs();
                if (++finished[0] < actors) {
                    return Behaviors.same();
                }
                if (finished[1] != n * actors) {
                    done.fail("big: " + finished[1] + " pongs, expected " + n * actors);
                } else {
                    done.finish(finished[1]);
                }
                return Behaviors.stopped();
            }).build();
        });
    }
}
