// Owns the server half of an SCP pair: on (re)start it spawns its client as a child, then runs
// the exchange loop (Ping with payload -> Pong -> +1 to the aggregator -> next Ping). A Stop
// message from the fault injector makes it throw, as the seed's Akka SCP did (seed 001 §3.4.2),
// so the supervision wrapped around it by its sub-supervisor restarts or stops it.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.Behaviors;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;

final class Server {
    private Server() {}

    sealed interface Command permits Pong, Stop {}

    /** The client's answer; {@code from} lets a restarted server ignore its dead client's Pong. */
    record Pong(byte[] payload, ActorRef<Client.Command> from) implements Command {}

    /** The injector's kill: the server fails on it. */
    enum Stop implements Command, Wire { INSTANCE }

    /**
     * The failure a killed server throws. Stackless: it is an injected fault, not a bug, and,
     * like Erlang's `killed` exit reason, carries no trace to print.
     */
    static final class Killed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Killed(String target) {
            super("killed by the fault injector: " + target, null, false, false);
        }
    }

    /**
     * @param starts how many times this slot's server has started; owned by the sub-supervisor
     *               so it survives restarts (a restart rebuilds this behaviour from scratch)
     */
    static Behavior<Command> create(int group, int slot, ScpConfig cfg,
                                    ActorRef<Aggregator.Command> aggregator, EventWriter events,
                                    AtomicInteger starts) {
        String target = "g" + group + "/s" + slot;
        Duration delay = Duration.ofMillis(cfg.delayMs());
        return Behaviors.setup(ctx -> {
            int attempt = starts.getAndIncrement();
            if (attempt > 0) {
                events.emit("restarted", ",\"target\":" + Json.quote(target)
                        + ",\"attempt\":" + attempt);
            }
            byte[] payload = new byte[cfg.payloadBytes()];
            ActorRef<Client.Command> client = ctx.spawnAnonymous(Client.create(ctx.getSelf(), delay));
            client.tell(new Client.Ping(payload));
            return Behaviors.receive(Command.class)
                    .onMessage(Pong.class, pong -> {
                        if (!pong.from().equals(client)) {
                            return Behaviors.same(); // from the client of a former incarnation
                        }
                        aggregator.tell(Aggregator.Exchange.INSTANCE);
                        client.tell(new Client.Ping(pong.payload()));
                        return Behaviors.same();
                    })
                    .onMessage(Stop.class, stop -> {
                        throw new Killed(target);
                    })
                    .build();
        });
    }
}
