// Owns the top of the chat system in one JVM: the actor system's guardian. What it starts
// depends on the process's part (a Layout): in one process (deployment = "single") everything;
// in the distributed deployment the orchestrator hosts discovery and the coordinator, a server
// group its one supervisor, a client group its clients. Discovery registers itself with the
// Receptionist (cluster-wide when the system is a cluster node); the guardian finds it through
// the Receptionist, spawns the supervisors (each restarted on failure) once it is listed, and
// spawns the clients when the main thread says every chat registered.
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.SupervisorStrategy;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.receptionist.Receptionist;
import java.util.concurrent.atomic.AtomicInteger;

final class Root {
    private Root() {}

    /**
     * What this JVM holds: discovery or not, supervisors [supFrom, supTo), clients
     * [clientFrom, clientFrom + clientCount), and the coordinator when {@code ready} is set.
     */
    record Layout(boolean discovery, int supFrom, int supTo, long clientFrom, long clientCount,
                  AtomicInteger ready) {
        static Layout single(ChatConfig cfg) {
            return new Layout(true, 0, cfg.numSupervisor(), 0, cfg.clients(), null);
        }
    }

    interface Command {}

    /** From the main thread: every chat registered; start the clients. */
    enum StartClients implements Command { INSTANCE }

    /** From the orchestrator's main thread: every node is ready; the window starts then. */
    record OpenWindow(long startUs) implements Command {}

    private record DiscoveryListing(Receptionist.Listing listing) implements Command {}

    static Behavior<Command> create(Shared shared, Layout layout) {
        return Behaviors.setup(ctx -> {
            if (layout.discovery()) {
                ctx.spawn(Behaviors.supervise(Discovery.create(shared)).onFailure(SupervisorStrategy.restart()),
                        "discovery");
            }
            ActorRef<Coordinator.Command> coordinator = layout.ready() == null ? null
                    : ctx.spawn(Coordinator.create(layout.ready()), "coordinator");
            if (layout.supTo() > layout.supFrom()) {
                ActorRef<Receptionist.Listing> adapter =
                        ctx.messageAdapter(Receptionist.Listing.class, DiscoveryListing::new);
                ctx.getSystem().receptionist().tell(Receptionist.subscribe(Discovery.SERVICE_KEY, adapter));
            }
            boolean[] started = {false, false}; // supervisors, clients
            return Behaviors.receive(Command.class)
                    .onMessage(DiscoveryListing.class, l -> {
                        var found = l.listing().getServiceInstances(Discovery.SERVICE_KEY);
                        if (!started[0] && !found.isEmpty()) {
                            started[0] = true;
                            ActorRef<Discovery.Command> discovery = found.iterator().next();
                            for (int g = layout.supFrom(); g < layout.supTo(); g++) {
                                ctx.spawn(Behaviors.supervise(ChatSupervisor.create(g, discovery, shared))
                                        .onFailure(SupervisorStrategy.restart()), "sup-" + g);
                            }
                        }
                        return Behaviors.same();
                    })
                    .onMessageEquals(StartClients.INSTANCE, () -> {
                        if (!started[1]) {
                            started[1] = true;
                            long end = layout.clientFrom() + layout.clientCount();
                            for (long k = layout.clientFrom(); k < end; k++) {
                                ctx.spawn(Client.create((int) k, shared), "c" + k);
                            }
                        }
                        return Behaviors.same();
                    })
                    .onMessage(OpenWindow.class, o -> {
                        if (coordinator != null) {
                            coordinator.tell(new Coordinator.Open(o.startUs()));
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
