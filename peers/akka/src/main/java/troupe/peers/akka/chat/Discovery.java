// Owns the chat discovery service (seed 000 §4.2): maps a topic to the chat that registered it
// last, and watches that chat so a dead one is forgotten (Terminated). It registers itself with
// the Receptionist under SERVICE_KEY, which is how clients find it (the seed's Akka idiom in
// place of Elixir's :global name).
//
// config lookup says what a Lookup for a topic with no live chat (it is restarting) gets:
// "retry" (the default, seed 000): Found with no chat at once, and the client retries after
// retry_delay_ms. "park": the lookup is held, with one single timer of retry_delay_ms of its own
// (Behaviors.withTimers, key = the lookup's number); the chat's next Register answers every lookup
// parked on its topic with the new chat and cancels their timers, and a timer that fires first
// answers "not registered". Either way the parked lookup leaves the map as it is answered, so it
// is answered exactly once. The injector's Find is never parked.
package troupe.peers.akka.chat;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.Terminated;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import akka.actor.typed.javadsl.TimerScheduler;
import akka.actor.typed.receptionist.Receptionist;
import akka.actor.typed.receptionist.ServiceKey;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

final class Discovery extends AbstractBehavior<Discovery.Command> {
    static final ServiceKey<Command> SERVICE_KEY = ServiceKey.create(Command.class, "chat-discovery");

    sealed interface Command permits Register, Lookup, Find, ParkTimeout {}

    /** From a chat as it starts; acknowledged with {@link Chat.Registered}. */
    record Register(String topic, ActorRef<Chat.Command> chat) implements Command, Wire {}

    /** From a client: answered with {@link Client.Found} (chat null when none is registered). */
    record Lookup(String topic, long attempt, ActorRef<Client.Command> replyTo) implements Command, Wire {}

    /** From the injector (an ask): the chat registered under topic now, or null. */
    record Find(String topic, ActorRef<Found> replyTo) implements Command, Wire {}

    record Found(ActorRef<Chat.Command> chat) implements Wire {}

    /** Discovery's own timer (lookup = park): parked lookup {@code id} on topic waited retry_delay_ms. */
    private record ParkTimeout(String topic, long id) implements Command {}

    private final Map<String, ActorRef<Chat.Command>> chats = new HashMap<>();
    private final Map<ActorRef<?>, String> topics = new HashMap<>();
    private final Shared shared;
    private final boolean park;
    private final Duration parkFor;
    private final TimerScheduler<Command> timers;
    /** lookup = park: the lookups held per topic, by their number (also their timer's key). */
    private final Map<String, Map<Long, Lookup>> parked = new HashMap<>();
    private long nextParked;

    static Behavior<Command> create(Shared shared) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            ctx.getSystem().receptionist().tell(Receptionist.register(SERVICE_KEY, ctx.getSelf()));
            shared.hostsDiscovery = true;
            return new Discovery(ctx, timers, shared);
        }));
    }

    private Discovery(ActorContext<Command> ctx, TimerScheduler<Command> timers, Shared shared) {
        super(ctx);
        this.timers = timers;
        this.shared = shared;
        this.park = shared.cfg.lookup().equals("park");
        this.parkFor = Duration.ofMillis(shared.cfg.retryDelayMs());
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Register.class, this::onRegister)
                .onMessage(Lookup.class, this::onLookup)
                .onMessage(ParkTimeout.class, this::onParkTimeout)
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
        Map<Long, Lookup> waiting = parked.remove(r.topic());
        if (waiting != null) {
            for (Map.Entry<Long, Lookup> e : waiting.entrySet()) {
                timers.cancel(e.getKey());
                shared.parkedByRegistration.incrementAndGet();
                e.getValue().replyTo().tell(new Client.Found(e.getValue().attempt(), r.chat()));
            }
        }
        return this;
    }

    private Behavior<Command> onLookup(Lookup m) {
        ActorRef<Chat.Command> chat = chats.get(m.topic());
        if (chat != null || !park) {
            m.replyTo().tell(new Client.Found(m.attempt(), chat));
            return this;
        }
        long id = ++nextParked;
        parked.computeIfAbsent(m.topic(), t -> new LinkedHashMap<>()).put(id, m);
        timers.startSingleTimer(id, new ParkTimeout(m.topic(), id), parkFor);
        shared.parkedLookups.incrementAndGet();
        return this;
    }

    private Behavior<Command> onParkTimeout(ParkTimeout t) {
        // A timer that lost the race to a registration finds nothing here: answered once only.
        Map<Long, Lookup> waiting = parked.get(t.topic());
        Lookup m = waiting == null ? null : waiting.remove(t.id());
        if (m != null) {
            if (waiting.isEmpty()) {
                parked.remove(t.topic());
            }
            shared.parkedTimedOut.incrementAndGet();
            m.replyTo().tell(new Client.Found(m.attempt(), null));
        }
        return this;
    }
}
