// Owns one server group (seed 000 §4.2): a one_for_one supervisor of chats_per_sup chats. Each
// chat runs under Akka supervision: the injected Crash stops it (stop strategy), any other
// exception restarts it in place (restart strategy, setup re-runs and re-registers). The
// supervisor watches every chat and, on Terminated (a brutal kill) or ChildFailed (a crash),
// spawns a fresh chat with a new ActorRef: that is what makes the clients' watches fire, as seed
// 000's Akka implementation "enforces termination and clean restart". Only the dead chat is
// replaced (one_for_one).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.SupervisorStrategy;
import akka.actor.typed.Terminated;
import akka.actor.typed.javadsl.Behaviors;
import java.util.HashMap;
import java.util.Map;

final class ChatSupervisor {
    private ChatSupervisor() {}

    interface Command {}

    static Behavior<Chat.Command> supervised(int chat, ActorRef<Discovery.Command> discovery,
                                             Shared shared) {
        Behavior<Chat.Command> stopOnCrash = Behaviors.supervise(Chat.create(chat, discovery, shared))
                .onFailure(Chat.Crash.class, SupervisorStrategy.stop().withLoggingEnabled(false));
        return Behaviors.supervise(stopOnCrash).onFailure(SupervisorStrategy.restart());
    }

    static Behavior<Command> create(int group, ActorRef<Discovery.Command> discovery, Shared shared) {
        return Behaviors.setup(ctx -> {
            int per = shared.cfg.chatsPerSup();
            Map<ActorRef<?>, Integer> byRef = new HashMap<>();
            int[] spawned = {0};
            java.util.function.IntConsumer start = c -> {
                ActorRef<Chat.Command> ref = ctx.spawn(supervised(c, discovery, shared),
                        "chat-" + c + "-" + (spawned[0]++));
                ctx.watch(ref);
                byRef.put(ref, c);
            };
            for (int i = 0; i < per; i++) {
                start.accept(group * per + i);
            }
            return Behaviors.receive(Command.class)
                    .onSignal(Terminated.class, t -> {
                        Integer c = byRef.remove(t.getRef());
                        if (c != null) {
                            start.accept(c);
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
