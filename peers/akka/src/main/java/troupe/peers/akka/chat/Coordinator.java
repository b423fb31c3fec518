// Owns the set-up barrier of the distributed deployment, on the orchestrator's node: every node
// process asks it Ready (found through the cluster's Receptionist) once its chats registered or
// its clients joined; the orchestrator's main thread counts the Readys and, once all are in,
// opens the window; every Ready is answered with the window's start (µs since the epoch).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.receptionist.Receptionist;
import akka.actor.typed.receptionist.ServiceKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

final class Coordinator {
    static final ServiceKey<Command> SERVICE_KEY = ServiceKey.create(Command.class, "chat-coordinator");

    private Coordinator() {}

    interface Command {}

    record Ready(String node, ActorRef<Window> replyTo) implements Command, Wire {}

    record Window(long startUs) implements Wire {}

    /** From the orchestrator's main thread (local). */
    record Open(long startUs) implements Command {}

    static Behavior<Command> create(AtomicInteger ready) {
        return Behaviors.setup(ctx -> {
            ctx.getSystem().receptionist().tell(Receptionist.register(SERVICE_KEY, ctx.getSelf()));
            List<ActorRef<Window>> waiting = new ArrayList<>();
            long[] start = {0};
            return Behaviors.receive(Command.class)
                    .onMessage(Ready.class, r -> {
                        if (start[0] != 0) {
                            r.replyTo().tell(new Window(start[0]));
                        } else {
                            waiting.add(r.replyTo());
                        }
                        ready.incrementAndGet();
                        return Behaviors.same();
                    })
                    .onMessage(Open.class, o -> {
                        start[0] = o.startUs();
                        for (ActorRef<Window> w : waiting) {
                            w.tell(new Window(o.startUs()));
                        }
                        waiting.clear();
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
