// Owns one chat room (seed 000 §4.2): registers with discovery as it starts (before it takes
// clients), keeps its members, and broadcasts every Post to all of them. Every incarnation is a
// fresh actor with an empty member set; the second and later ones emit `restarted`. The injected
// faults act here: Poison makes it throw (supervision stops it and the supervisor starts a fresh
// one), Stress holds the handler (cpu spin or a RAM allocation).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

final class Chat extends AbstractBehavior<Chat.Command> {
    sealed interface Command permits Registered, Join, Post, Poison, Stress {}

    /** Discovery's acknowledgement of the registration. */
    enum Registered implements Command, Wire { INSTANCE }

    record Join(ActorRef<Client.Command> client, long attempt) implements Command, Wire {}

    record Post(int from, String text) implements Command, Wire {}

    /** The `error` fault: the chat throws {@link Crash} on it. */
    enum Poison implements Command, Wire { INSTANCE }

    /** The `cpu` / `ram` faults. */
    record Stress(long cpuMs, long ramMb) implements Command, Wire {}

    /** The injected crash; stackless (nothing to learn from a trace of an injected fault). */
    static final class Crash extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Crash(String topic) {
            super(topic + ": poison message (injected fault)", null, false, false);
        }
    }

    private final int index;
    private final String topic;
    private final Shared shared;
    private final boolean first;
    private final List<ActorRef<Client.Command>> members = new ArrayList<>();
    private final Set<ActorRef<Client.Command>> memberSet = new HashSet<>();

    static Behavior<Command> create(int index, ActorRef<Discovery.Command> discovery, Shared shared) {
        return Behaviors.setup(ctx -> {
            int incarnation = shared.starts.getAndIncrement(index);
            String topic = Shared.topic(index);
            if (incarnation > 0) {
                shared.events.emit("restarted", ",\"target\":\"" + topic + "\",\"attempt\":"
                        + incarnation);
            }
            discovery.tell(new Discovery.Register(topic, ctx.getSelf()));
            return new Chat(ctx, index, shared, incarnation == 0);
        });
    }

    private Chat(ActorContext<Command> ctx, int index, Shared shared, boolean first) {
        super(ctx);
        this.index = index;
        this.topic = Shared.topic(index);
        this.shared = shared;
        this.first = first;
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessageEquals(Registered.INSTANCE, () -> {
                    if (first) {
                        shared.registered.countDown();
                    }
                    return this;
                })
                .onMessage(Join.class, j -> {
                    if (memberSet.add(j.client())) {
                        members.add(j.client());
                    }
                    j.client().tell(new Client.Joined(j.attempt()));
                    return this;
                })
                .onMessage(Post.class, p -> {
                    Client.Broadcast b = new Client.Broadcast(p.from(), p.text());
                    for (ActorRef<Client.Command> m : members) {
                        m.tell(b);
                    }
                    return this;
                })
                .onMessageEquals(Poison.INSTANCE, () -> {
                    throw new Crash(topic);
                })
                .onMessage(Stress.class, s -> {
                    stress(s.cpuMs(), s.ramMb());
                    return this;
                })
                .build();
    }

    static volatile long sink;

    /** Spins for cpuMs, then allocates ramMb MiB, touches every 4 KiB page, and drops it. */
    static void stress(long cpuMs, long ramMb) {
        if (cpuMs > 0) {
            long until = System.nanoTime() + cpuMs * 1_000_000L;
            long x = 0;
            while (System.nanoTime() < until) {
                for (int i = 0; i < 1000; i++) {
                    x = x * 6364136223846793005L + i;
                }
            }
            sink = x;
        }
        if (ramMb > 0) {
            long total = ramMb << 20;
            int chunk = 1 << 26; // 64 MiB per array (Java arrays are int-indexed)
            List<byte[]> held = new ArrayList<>();
            for (long done = 0; done < total; done += chunk) {
                byte[] a = new byte[(int) Math.min(chunk, total - done)];
                for (int i = 0; i < a.length; i += 4096) {
                    a[i] = 1;
                }
                held.add(a);
            }
            sink = held.size();
        }
    }

    @Override
    public String toString() {
        return "Chat(" + index + ")";
    }
}
