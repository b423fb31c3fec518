// Owns the `threadring` micro-benchmark: `actors` actors in a ring pass a token n hops. The
// root links every node to its successor and waits for all acknowledgements before it sends
// the token, so no token can overtake a link. msgs_per_s = n / time.
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

final class ThreadRing implements Bench {
    sealed interface NodeMsg permits Link, Token {}

    record Link(ActorRef<NodeMsg> next, ActorRef<RootMsg> replyTo) implements NodeMsg {}

    /** The token with the number of hops still to go. */
    record Token(long hops) implements NodeMsg {}

    sealed interface RootMsg permits Linked, Finished {}

    enum Linked implements RootMsg { INSTANCE }

    enum Finished implements RootMsg { INSTANCE }

    @Override
    public String name() {
        return "threadring";
    }

    @Override
    public Map<String, Long> defaults() {
        Map<String, Long> d = new LinkedHashMap<>();
        d.put("actors", 100L);
        d.put("n", 100_000L);
        return d;
    }

    @Override
    public double messages(Map<String, Long> p) {
        return p.get("n");
    }

    private static final class Node extends AbstractBehavior<NodeMsg> {
        private final ActorRef<RootMsg> root;
        private ActorRef<NodeMsg> next;

        Node(ActorContext<NodeMsg> ctx, ActorRef<RootMsg> root) {
            super(ctx);
            this.root = root;
        }

        @Override
        public Receive<NodeMsg> createReceive() {
            return newReceiveBuilder()
                    .onMessage(Token.class, t -> {
                        if (t.hops() == 0) {
                            root.tell(Finished.INSTANCE);
                        } else {
                            next.tell(new Token(t.hops() - 1));
                        }
                        return this;
                    })
                    .onMessage(Link.class, l -> {
                        next = l.next();
                        l.replyTo().tell(Linked.INSTANCE);
                        return this;
                    })
                    .build();
        }
    }

    @Override
    public Behavior<?> root(Map<String, Long> p, Completion done) {
        int actors = Math.toIntExact(p.get("actors"));
        long n = p.get("n");
        return Behaviors.<RootMsg>setup(ctx -> {
            List<ActorRef<NodeMsg>> ring = new ArrayList<>(actors);
            for (int i = 0; i < actors; i++) {
                ring.add(ctx.spawn(Behaviors.<NodeMsg>setup(c -> new Node(c, ctx.getSelf())),
                        "node-" + i));
            }
            for (int i = 0; i < actors; i++) {
                ring.get(i).tell(new Link(ring.get((i + 1) % actors), ctx.getSelf()));
            }
            int[] linked = {0};
            return Behaviors.receive(RootMsg.class)
                    .onMessageEquals(Linked.INSTANCE, () -> {
                        if (++linked[0] == actors) {
                            ring.get(0).tell(new Token(n));
                        }
                        return Behaviors.same();
                    })
                    .onMessageEquals(Finished.INSTANCE, () -> {
                        done.finish(n);
                        return Behaviors.stopped();
                    })
                    .build();
        });
    }
}
