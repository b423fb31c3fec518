// Owns one chat client (seed 000 §4.2): finds discovery through the Receptionist, resolves its
// chat through discovery, watches it, joins it, and (throughput test only) posts a message every
// send_interval_ms on a fixed-rate timer. When its chat dies (Terminated) it emits
// fault_detected, re-resolves at once and retries a failed attempt after retry_delay_ms (a
// single timer, no backoff), at most retry_max attempts in a row, then gives up (an error). A
// rejoin after a detection emits reconnected {ms}. Answers to a stale attempt are ignored.
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
import java.time.Duration;
import troupe.peers.akka.common.Json;

final class Client extends AbstractBehavior<Client.Command> {
    interface Command {}

    /** Discovery's answer to Lookup {@code attempt}; chat null when none is registered. */
    record Found(long attempt, ActorRef<Chat.Command> chat) implements Command, Wire {}

    record Joined(long attempt) implements Command, Wire {}

    record Broadcast(int from, String text) implements Command, Wire {}

    private enum Tick implements Command { INSTANCE }

    private record Retry(long attempt) implements Command {}

    /** Attempt {@code attempt} got no Found or no Joined within ATTEMPT_TIMEOUT. */
    private record AttemptTimeout(long attempt) implements Command {}

    /** The Receptionist's listing of the discovery service key (through a message adapter). */
    private record DiscoveryListing(Receptionist.Listing listing) implements Command {}

    private static final String RETRY = "retry";
    private static final String TIMEOUT = "attempt-timeout";
    /**
     * Across nodes Akka delivers at most once: a Lookup, Found, Join or Joined can be dropped
     * (e.g. when Artery's outbound send queue to a busy node overflows). An attempt with no
     * answer after this long is a failed attempt, retried like one. In one JVM nothing is
     * dropped, so this never fires there unless a chat holds its handler for a second. With
     * lookup = park discovery may hold the Lookup for up to retry_delay_ms before it answers, so
     * the attempt gets that much longer ({@link #attemptTimeout}).
     */
    private static final Duration ATTEMPT_TIMEOUT = Duration.ofSeconds(1);

    private final int index;
    private final String topic;
    private final String fields; // "target":...,"by":... rendered once
    private final String text;
    private final Shared shared;
    private final TimerScheduler<Command> timers;
    private final Duration attemptTimeout;
    private ActorRef<Discovery.Command> discovery;
    private long attempt;
    private int tries;
    private ActorRef<Chat.Command> chat;
    private boolean connected;
    private boolean everJoined;
    private long lostAtNanos = -1;
    private boolean gaveUp;

    static Behavior<Command> create(int index, Shared shared) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new Client(ctx, timers, index, shared)));
    }

    private Client(ActorContext<Command> ctx, TimerScheduler<Command> timers, int index, Shared shared) {
        super(ctx);
        this.index = index;
        this.shared = shared;
        this.timers = timers;
        int chatIndex = index / shared.cfg.clientsPerServer();
        this.topic = Shared.topic(chatIndex);
        this.fields = "\"target\":\"" + topic + "\",\"by\":\"c" + index + "\"";
        this.text = "hello from c" + index;
        this.attemptTimeout = shared.cfg.lookup().equals("park")
                ? ATTEMPT_TIMEOUT.plusMillis(shared.cfg.retryDelayMs()) : ATTEMPT_TIMEOUT;
        if (shared.cfg.clientsSend()) {
            timers.startTimerAtFixedRate("tick", Tick.INSTANCE,
                    Duration.ofMillis(shared.cfg.sendIntervalMs()));
        }
        findDiscovery();
    }

    private void findDiscovery() {
        ActorRef<Receptionist.Listing> adapter =
                getContext().messageAdapter(Receptionist.Listing.class, DiscoveryListing::new);
        getContext().getSystem().receptionist().tell(Receptionist.find(Discovery.SERVICE_KEY, adapter));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Broadcast.class, b -> {
                    shared.received.increment();
                    return this;
                })
                .onMessageEquals(Tick.INSTANCE, () -> {
                    if (connected) {
                        chat.tell(new Chat.Post(index, text));
                    }
                    return this;
                })
                .onMessage(DiscoveryListing.class, this::onListing)
                .onMessage(Found.class, this::onFound)
                .onMessage(Joined.class, this::onJoined)
                .onMessage(Retry.class, r -> {
                    if (discovery == null) {
                        findDiscovery();
                    } else if (r.attempt() == attempt && !connected && !gaveUp) {
                        resolve();
                    }
                    return this;
                })
                .onMessage(AttemptTimeout.class, t -> {
                    if (t.attempt() == attempt && !connected && !gaveUp) {
                        retryLater();
                    }
                    return this;
                })
                .onSignal(Terminated.class, this::onTerminated)
                .build();
    }

    private Behavior<Command> onListing(DiscoveryListing l) {
        if (discovery != null) {
            return this;
        }
        var found = l.listing().getServiceInstances(Discovery.SERVICE_KEY);
        if (found.isEmpty()) {
            // Discovery not registered yet: ask the Receptionist again after the retry delay.
            timers.startSingleTimer(RETRY, new Retry(-1), Duration.ofMillis(shared.cfg.retryDelayMs()));
            return this;
        }
        discovery = found.iterator().next();
        resolve();
        return this;
    }

    private void resolve() {
        if (discovery == null) {
            findDiscovery();
            return;
        }
        attempt++;
        tries++;
        timers.startSingleTimer(TIMEOUT, new AttemptTimeout(attempt), attemptTimeout);
        discovery.tell(new Discovery.Lookup(topic, attempt, getContext().getSelf()));
    }

    private void retryLater() {
        if (chat != null) {
            getContext().unwatch(chat);
            chat = null;
        }
        if (tries >= shared.cfg.retryMax()) {
            if (!gaveUp) {
                gaveUp = true;
                shared.errors.incrementAndGet();
                shared.events.emit("gave_up", "," + fields + ",\"tries\":" + tries);
            }
            return;
        }
        timers.startSingleTimer(RETRY, new Retry(attempt), Duration.ofMillis(shared.cfg.retryDelayMs()));
    }

    private Behavior<Command> onFound(Found f) {
        if (f.attempt() != attempt || connected) {
            return this;
        }
        if (f.chat() == null) {
            retryLater();
            return this;
        }
        if (chat != null && !chat.equals(f.chat())) {
            getContext().unwatch(chat);
        }
        chat = f.chat();
        getContext().watch(chat);
        chat.tell(new Chat.Join(getContext().getSelf(), attempt));
        return this;
    }

    private Behavior<Command> onJoined(Joined j) {
        if (j.attempt() != attempt || connected || chat == null) {
            return this;
        }
        connected = true;
        tries = 0;
        timers.cancel(TIMEOUT);
        if (lostAtNanos >= 0) {
            double ms = (System.nanoTime() - lostAtNanos) / 1e6;
            lostAtNanos = -1;
            shared.events.emit("reconnected", "," + fields + ",\"ms\":" + Json.number(ms));
        }
        if (!everJoined) {
            everJoined = true;
            shared.joined.countDown();
        }
        return this;
    }

    private Behavior<Command> onTerminated(Terminated t) {
        if (chat == null || !t.getRef().equals(chat)) {
            return this;
        }
        chat = null;
        if (shared.stopping) {
            connected = false; // the window is over: no rejoin, no event
            return this;
        }
        if (connected) {
            connected = false;
            lostAtNanos = System.nanoTime();
            shared.events.emit("fault_detected", ",\"id\":null," + fields);
            tries = 0;
            resolve();
        } else {
            // The chat found was already dead (discovery had not seen its Terminated yet).
            retryLater();
        }
        return this;
    }
}
