// Owns the `chameneos` micro-benchmark (Savina chameneos): a mall actor (the root) pairs the
// meeting requests of `chameneos` creatures until n meetings have happened; the two creatures of
// a meeting both take the complement of their colours (the classic rule). After the last
// meeting the mall answers every request with Exit; each creature reports its own meeting count
// and stops, and the counts must sum to 2n. msgs_per_s = meetings / time.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.LinkedHashMap;
import java.util.Map;

final class Chameneos implements Bench {
    enum Colour {
        BLUE, RED, YELLOW;

        /** Two different colours give the third; equal colours stay. */
        Colour complement(Colour other) {
            if (this == other) {
                return this;
            }
            for (Colour c : values()) {
                if (c != this && c != other) {
                    return c;
                }
            }
            throw new AssertionError("unreachable");
        }
    }

    sealed interface MallMsg permits MeetMe, MeetingCount {}

    record MeetMe(Colour colour, ActorRef<CreatureMsg> who) implements MallMsg {}

    record MeetingCount(long meetings) implements MallMsg {}

    sealed interface CreatureMsg permits Meet, Change, Exit {}

    /** From the mall: you meet {@code partner}, whose colour is {@code colour}. */
    record Meet(Colour colour, ActorRef<CreatureMsg> partner) implements CreatureMsg {}

    /** From the partner of a meeting: its (and now your) new colour. */
    record Change(Colour colour) implements CreatureMsg {}

    record Exit(ActorRef<MallMsg> mall) implements CreatureMsg {}

    @Override
    public String name() {
        return "chameneos";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("chameneos", 100L);
        d.put("n", 200_000L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return p.get("n"); // meetings
    }

    private static final class Creature extends AbstractBehavior<CreatureMsg> {
        private final ActorRef<MallMsg> mall;
        private Colour colour;
        private long meetings;

        Creature(ActorContext<CreatureMsg> ctx, ActorRef<MallMsg> mall, Colour colour) {
            super(ctx);
            this.mall = mall;
            this.colour = colour;
            mall.tell(new MeetMe(colour, ctx.getSelf()));
        }

        @Override
        public Receive<CreatureMsg> createReceive() {
            return newReceiveBuilder()
                    .onMessage(Meet.class, m -> {
                        colour = colour.complement(m.colour());
                        meetings++;
                        m.partner().tell(new Change(colour));
                        mall.tell(new MeetMe(colour, getContext().getSelf()));
                        return this;
                    })
                    .onMessage(Change.class, c -> {
                        colour = c.colour();
                        meetings++;
                        mall.tell(new MeetMe(colour, getContext().getSelf()));
                        return this;
                    })
                    .onMessage(Exit.class, e -> {
                        e.mall().tell(new MeetingCount(meetings));
                        return Behaviors.stopped();
                    })
                    .build();
        }
    }

    private static final class Mall extends AbstractBehavior<MallMsg> {
        private final Completion done;
        private final int creatures;
        private final long n;
        private long meetingsLeft;
        private MeetMe waiting;
        private int exited;
        private long sum;

        Mall(ActorContext<MallMsg> ctx, int creatures, long n, Completion done) {
            super(ctx);
            this.done = done;
            this.creatures = creatures;
            this.n = n;
            this.meetingsLeft = n;
            Colour[] colours = Colour.values();
            for (int i = 0; i < creatures; i++) {
                Colour c = colours[i % colours.length];
                ctx.spawn(Behaviors.<CreatureMsg>setup(cc -> new Creature(cc, ctx.getSelf(), c)),
                        "chameneo-" + i);
            }
        }

        @Override
        public Receive<MallMsg> createReceive() {
            return newReceiveBuilder()
                    .onMessage(MeetMe.class, m -> {
                        if (meetingsLeft == 0) {
                            m.who().tell(new Exit(getContext().getSelf()));
                        } else if (waiting == null) {
                            waiting = m;
                        } else {
                            meetingsLeft--;
                            waiting.who().tell(new Meet(m.colour(), m.who()));
                            waiting = null;
                        }
                        return this;
                    })
                    .onMessage(MeetingCount.class, c -> {
                        sum += c.meetings();
                        if (++exited < creatures) {
                            return this;
                        }
                        if (sum != 2 * n) {
                            done.fail("chameneos: creatures met " + sum + " times, expected " + 2 * n);
                        } else {
                            done.finish(n);
                        }
                        return Behaviors.stopped();
                    })
                    .build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        int creatures = Math.toIntExact(p.get("chameneos"));
        long n = p.get("n");
        if (creatures < 2) {
            throw new IllegalArgumentException("chameneos: needs at least 2 creatures");
        }
        return Behaviors.<MallMsg>setup(ctx -> new Mall(ctx, creatures, n, done));
    }
}
