// Owns the chat discovery service (seed 000 §4.2): maps a topic to the chat that registered it
// last, and watches that chat so a dead one is forgotten (Terminated). It registers itself with
// the Receptionist under SERVICE_KEY, which is how clients find it (the seed's Akka idiom in
// place of Elixir's :global name).
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.Terminated;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import akka.actor.typed.receptionist.Receptionist;
import akka.actor.typed.receptionist.ServiceKey;
import java.util.HashMap;
import java.util.Map;

final class Discovery extends AbstractBehavior<Discovery.Command> {
    static final ServiceKey<Command> SERVICE_KEY = ServiceKey.create(Command.class, "chat-discovery");

    sealed interface Command permits Register, Lookup, Find {}

    /** From a chat as it starts; acknowledged with {@link Chat.Registered}. */
    record Register(String topic, ActorRef<Chat.Command> chat) implements Command, Wire {}

    /** From a client: answered with {@link Client.Found} (chat null when none is registered). */
    record Lookup(String topic, long attempt, ActorRef<Client.Command> replyTo) implements Command, Wire {}

    /** From the injector (an ask): the chat registered under topic now, or null. */
    record Find(String topic, ActorRef<Found> replyTo) implements Command, Wire {}

    record Found(ActorRef<Chat.Command> chat) implements Wire {}

    private final Map<String, ActorRef<Chat.Command>> chats = new HashMap<>();
    private final Map<ActorRef<?>, String> topics = new HashMap<>();

    static Behavior<Command> create() {
        return Behaviors.setup(ctx -> {
            ctx.getSystem().receptionist().tell(Receptionist.register(SERVICE_KEY, ctx.getSelf()));
            return new Discovery(ctx);
        });
    }

    private Discovery(ActorContext<Command> ctx) {
        super(ctx);
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Register.class, this::onRegister)
                .onMessage(Lookup.class, m -> {
                    m.replyTo().tell(new Client.Found(m.attempt(), chats.get(m.topic())));
                    return this;
                })
                .onMessage(Find.class, m -> {
                    m.replyTo().tell(new Found(chats.get(m.topic())));
                    return this;
                })
                .onSignal(Terminated.class, t -> {
                    String topic = topics.remove(t.getRef());
                    if (topic != null && t.getRef().equals(chats.get(topic))) {
                        chats.remove(topic);
                    }
                    return this;
                })
                .build();
    }

    private Behavior<Command> onRegister(Register r) {
        getContext().watch(r.chat());
        ActorRef<Chat.Command> old = chats.put(r.topic(), r.chat());
        if (old != null && !old.equals(r.chat())) {
            getContext().unwatch(old);
            topics.remove(old);
        }
        topics.put(r.chat(), r.topic());
        r.chat().tell(Chat.Registered.INSTANCE);
        return this;
    }
}
