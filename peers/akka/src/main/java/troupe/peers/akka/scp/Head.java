// Owns the top of the SCP supervision tree: the actor system's guardian, which supervises the
// aggregator and the `supervisors` sub-supervisors (each restarted on failure: one_for_one).
// When every sub-supervisor reports its pairs spawned and the injector is ready (at once for the
// in-process injector; once its JVM said Ready with injector = "node"), it tells the aggregator
// setup is done, so the warm-up and the window never start before the injector can act.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.SupervisorStrategy;
import akka.actor.typed.javadsl.Behaviors;
import java.util.concurrent.CompletableFuture;
import troupe.peers.akka.common.EventWriter;

final class Head {
    private Head() {}

    sealed interface Command permits GroupReady {}

    /** From sub-supervisor {@code group}: its {@code pairs} servers are spawned. */
    record GroupReady(int group, int pairs) implements Command {}

    static Behavior<Command> create(ScpConfig cfg, EventWriter events, Targets targets,
                                    CompletableFuture<Long> windowStart,
                                    CompletableFuture<Void> finished,
                                    CompletableFuture<Void> injectorReady) {
        return Behaviors.setup(ctx -> {
            ActorRef<Aggregator.Command> aggregator = ctx.spawn(
                    Behaviors.supervise(Aggregator.create(cfg, events, windowStart, finished))
                            .onFailure(SupervisorStrategy.restart()),
                    "aggregator");
            for (int g = 0; g < cfg.supervisors(); g++) {
                ctx.spawn(Behaviors.supervise(
                                SubSupervisor.create(g, cfg, aggregator, events, targets, ctx.getSelf()))
                                .onFailure(SupervisorStrategy.restart()),
                        "sup-" + g);
            }
            boolean[] seen = new boolean[cfg.supervisors()];
            int[] readyGroups = {0};
            return Behaviors.receive(Command.class)
                    .onMessage(GroupReady.class, r -> {
                        if (!seen[r.group()]) {
                            seen[r.group()] = true;
                            if (++readyGroups[0] == cfg.supervisors()) {
                                injectorReady.whenComplete((v, e) ->
                                        aggregator.tell(new Aggregator.SetupDone(cfg.pairs())));
                            }
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
