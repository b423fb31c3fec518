// Owns the top of the chat system: the actor system's guardian. It spawns discovery (which
// registers itself with the Receptionist), finds it through the Receptionist, spawns the
// num_supervisor chat supervisors (each restarted on failure), and spawns the clients when the
// main thread says every chat registered.
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.SupervisorStrategy;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.receptionist.Receptionist;

final class Root {
    private Root() {}

    interface Command {}

    /** From the main thread: every chat registered; start the clients. */
    enum StartClients implements Command { INSTANCE }

    private record DiscoveryListing(Receptionist.Listing listing) implements Command {}

    static Behavior<Command> create(Shared shared) {
        return Behaviors.setup(ctx -> {
            ctx.spawn(Behaviors.supervise(Discovery.create()).onFailure(SupervisorStrategy.restart()),
                    "discovery");
            ActorRef<Receptionist.Listing> adapter =
                    ctx.messageAdapter(Receptionist.Listing.class, DiscoveryListing::new);
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(Discovery.SERVICE_KEY, adapter));
            boolean[] started = {false, false}; // supervisors, clients
            return Behaviors.receive(Command.class)
                    .onMessage(DiscoveryListing.class, l -> {
                        var found = l.listing().getServiceInstances(Discovery.SERVICE_KEY);
                        if (!started[0] && !found.isEmpty()) {
                            started[0] = true;
                            ActorRef<Discovery.Command> discovery = found.iterator().next();
                            for (int g = 0; g < shared.cfg.numSupervisor(); g++) {
                                ctx.spawn(Behaviors.supervise(ChatSupervisor.create(g, discovery, shared))
                                        .onFailure(SupervisorStrategy.restart()), "sup-" + g);
                            }
                        }
                        return Behaviors.same();
                    })
                    .onMessageEquals(StartClients.INSTANCE, () -> {
                        if (!started[1]) {
                            started[1] = true;
                            long n = shared.cfg.clients();
                            for (int k = 0; k < n; k++) {
                                ctx.spawn(Client.create(k, shared), "c" + k);
                            }
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
