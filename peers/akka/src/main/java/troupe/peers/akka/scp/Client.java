// Owns the client half of an SCP pair: it answers each Ping with a Pong after `delay_ms`,
// simulating server-side processing with an Akka timer so no thread is blocked while it waits.
// The client is a child of its server, so it is stopped whenever the server stops or restarts
// (the Akka analogue of the Erlang link), and its pending timer is cancelled with it.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.Behaviors;
import java.time.Duration;

final class Client {
    private Client() {}

    sealed interface Command permits Ping, Reply {}

    /** From the server: the payload to send back after the delay. */
    record Ping(byte[] payload) implements Command {}

    /** Timer message to self: the delay is over. */
    private record Reply(byte[] payload) implements Command {}

    private static final Object REPLY_TIMER = "reply";

    static Behavior<Command> create(ActorRef<Server.Command> server, Duration delay) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers ->
                Behaviors.receive(Command.class)
                        .onMessage(Ping.class, ping -> {
                            timers.startSingleTimer(REPLY_TIMER, new Reply(ping.payload()), delay);
                            return Behaviors.same();
                        })
                        .onMessage(Reply.class, reply -> {
                            server.tell(new Server.Pong(reply.payload(), ctx.getSelf()));
                            return Behaviors.same();
                        })
                        .build()));
    }
}
