// Owns one SCP sub-supervisor: it spawns its `pairs/supervisors` servers, each wrapped in
// Behaviors.supervise(...) with restart (recovery=true: transient, restart intensity 1000000 per
// 1 s so it never gives up) or stop (recovery=false: temporary). In Akka Typed the supervision
// strategy lives in the wrapped child and this parent is the one_for_one scope: one child's
// failure never touches its siblings. It watches its servers so the injector's table learns
// when one is gone for good.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.SupervisorStrategy;
import akka.actor.typed.Terminated;
import akka.actor.typed.javadsl.Behaviors;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import troupe.peers.akka.common.EventWriter;

final class SubSupervisor {
    private SubSupervisor() {}

    /** This actor takes no messages; it only reacts to its children's termination. */
    interface Command {}

    static Behavior<Command> create(int group, ScpConfig cfg, ActorRef<Aggregator.Command> aggregator,
                                    EventWriter events, Targets targets,
                                    ActorRef<Head.Command> head) {
        return Behaviors.setup(ctx -> {
            SupervisorStrategy strategy = cfg.recovery()
                    ? SupervisorStrategy.restart().withLimit(1_000_000, Duration.ofSeconds(1))
                    : SupervisorStrategy.stop();
            Map<ActorRef<Void>, Integer> slotOf = new HashMap<>();
            for (int slot = 0; slot < cfg.perGroup(); slot++) {
                Behavior<Server.Command> server = Behaviors.supervise(
                                Server.create(group, slot, cfg, aggregator, events, new AtomicInteger()))
                        .onFailure(Server.Killed.class, strategy);
                ActorRef<Server.Command> ref = ctx.spawn(server, "server-" + slot);
                targets.started(group, slot, ref);
                ctx.watch(ref);
                slotOf.put(ref.unsafeUpcast(), slot);
            }
            head.tell(new Head.GroupReady(group, cfg.perGroup()));
            return Behaviors.receive(Command.class)
                    .onSignal(Terminated.class, t -> {
                        Integer slot = slotOf.remove(t.getRef().unsafeUpcast());
                        if (slot != null) {
                            targets.dead(group, slot);
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
