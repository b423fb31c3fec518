// Owns one device incarnation (an actor in a device process, never a cluster member): protocol
// rules 1, 3, 4, 5 in Protocol.java, device side. It says Hello to the seed servers (following
// redirects), serves its one owner's report requests with the values 1..=report_len, answers
// heartbeats and watches them with Akka's PhiAccrualFailureDetector; when the owner is declared
// failed (`fault_detected`) or stands it down, it goes back to the seeds. Every device <-> server
// message passes through its Link (drop / delay).
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import akka.actor.typed.javadsl.TimerScheduler;
import akka.remote.PhiAccrualFailureDetector;
import java.time.Duration;
import java.util.List;
import troupe.peers.akka.iot.Protocol.ToDevice;
import troupe.peers.akka.iot.Protocol.ToGateway;
import troupe.peers.akka.iot.Protocol.ToOwner;

final class Device extends AbstractBehavior<ToDevice> {
    /**
     * Redirects followed at once in a row; the next one is followed when the last Hello's
     * heartbeat_ms timer runs out (contract rule 3: two servers with different views cannot
     * make a device spin). A Hello with no answer within heartbeat_ms goes to the next seed.
     */
    static final int MAX_HOPS = 3;

    private record HelloTimeout(long attempt) implements ToDevice {}

    private enum Tick implements ToDevice { INSTANCE }

    private record Delayed(ToDevice msg) implements ToDevice {}

    /** What a device is given: its index, incarnation, start time, the seeds, the process's state. */
    record Spec(int device, long incarnation, long startUs, List<ActorRef<ToGateway>> seeds, DeviceState ds) {}

    private final Spec spec;
    private final DeviceState ds;
    private final TimerScheduler<ToDevice> timers;
    private final Link link;
    private final String name;
    private boolean fresh = true;
    private ActorRef<ToOwner> owner;
    private int ownerServer = -1;
    private PhiAccrualFailureDetector fd;
    private int seed;
    private int hops;
    /** The server a redirect named while the device waits out its Hello timer (-1: none). */
    private int pending = -1;
    private long helloAttempt;
    private boolean marked;

    static Behavior<ToDevice> create(Spec spec) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(t -> new Device(ctx, t, spec)));
    }

    private Device(ActorContext<ToDevice> ctx, TimerScheduler<ToDevice> timers, Spec spec) {
        super(ctx);
        this.spec = spec;
        this.ds = spec.ds();
        this.timers = timers;
        this.link = new Link(ds.cfg, spec.device(), spec.incarnation());
        this.name = Protocol.deviceName(spec.device());
        long tick = Math.max(5, ds.cfg.heartbeatMs() / 4); // contract rule 4: phi checked every heartbeat_ms / 4
        timers.startTimerAtFixedRate(Tick.INSTANCE, Duration.ofMillis(tick));
        this.seed = spec.device() % spec.seeds().size();
        hello(seed);
    }

    @Override
    public Receive<ToDevice> createReceive() {
        return newReceiveBuilder()
                .onMessage(Delayed.class, d -> handle(d.msg()))
                .onMessage(HelloTimeout.class, this::onHelloTimeout)
                .onMessageEquals(Tick.INSTANCE, this::onTick)
                .onAnyMessage(this::arrive)
                .build();
    }

    /** A message from a server: the link may drop or delay it. */
    private Behavior<ToDevice> arrive(ToDevice m) {
        if (link.clean()) {
            return handle(m);
        }
        long fate = link.fate();
        if (fate < 0) {
            return this;
        }
        if (fate > 0) {
            getContext().scheduleOnce(Duration.ofMillis(fate), getContext().getSelf(), new Delayed(m));
            return this;
        }
        return handle(m);
    }

    /** Sends m to a server through the link. */
    private <T> void send(ActorRef<T> to, T m) {
        if (link.clean()) {
            to.tell(m);
            return;
        }
        long fate = link.fate();
        if (fate == 0) {
            to.tell(m);
        } else if (fate > 0) {
            getContext().scheduleOnce(Duration.ofMillis(fate), to, m);
        }
    }

    private Behavior<ToDevice> handle(ToDevice m) {
        if (m instanceof Protocol.ReportRequest r) {
            return onRequest(r);
        } else if (m instanceof Protocol.Heartbeat h) {
            if (h.owner().equals(owner)) {
                fd.heartbeat();
                send(owner, new Protocol.HeartbeatAck(spec.incarnation()));
            } else if (owner != null) {
                send(h.owner(), new Protocol.Refused(spec.device()));
            }
        } else if (m instanceof Protocol.Redirect r) {
            if (owner == null) {
                if (++hops > MAX_HOPS) {
                    hops = 0;
                    pending = r.server(); // said when the running Hello timer fires
                } else {
                    hello(r.server());
                }
            }
        } else if (m instanceof Protocol.StandDown s) {
            if (s.owner().equals(owner)) {
                seek(ownerServer);
            }
        } else if (m instanceof Protocol.Disconnected d) {
            if (d.owner().equals(owner)) {
                System.err.println("akka iot " + name + ": disconnected by server-" + ownerServer + ": " + d.reason());
                seek(ownerServer + 1);
            }
        } else if (m instanceof Protocol.Rejected r) {
            ds.node.errors.incrementAndGet();
            System.err.println("akka iot " + name + ": rejected: " + r.reason());
            timers.cancel("hello");
            return Behaviors.stopped();
        }
        return this;
    }

    private Behavior<ToDevice> onRequest(Protocol.ReportRequest r) {
        if (owner == null) {
            // Rule 5: the first owner to ask is this device's owner.
            owner = r.owner();
            ownerServer = r.server();
            fresh = false;
            hops = 0;
            timers.cancel("hello");
            fd = ds.cfg.newDetector();
            fd.heartbeat();
        } else if (!r.owner().equals(owner)) {
            send(r.owner(), new Protocol.Refused(spec.device()));
            return this;
        }
        if (r.summed() > 0 && !marked) {
            marked = true;
            ds.homed(spec.device());
        }
        send(owner, new Protocol.Report(r.seq(), ds.values));
        return this;
    }

    private Behavior<ToDevice> onTick() {
        if (owner != null && !fd.isAvailable()) {
            ds.node.events.emit("fault_detected", ",\"id\":null,\"target\":\"server-" + ownerServer
                    + "\",\"by\":\"" + name + "\"");
            seek(ownerServer + 1);
        }
        return this;
    }

    private Behavior<ToDevice> onHelloTimeout(HelloTimeout t) {
        if (owner == null && t.attempt() == helloAttempt) {
            if (pending >= 0) {
                hello(pending);
            } else {
                seek(seed + 1);
            }
        }
        return this;
    }

    /** Back to the seeds, starting with seed index from. */
    private void seek(int from) {
        owner = null;
        ownerServer = -1;
        fd = null;
        hops = 0;
        pending = -1;
        seed = Math.floorMod(from, spec.seeds().size());
        hello(seed);
    }

    private void hello(int server) {
        helloAttempt++;
        pending = -1;
        send(spec.seeds().get(server), new Protocol.Hello(spec.device(), spec.incarnation(), spec.startUs(), fresh,
                Protocol.VERSION, getContext().getSelf()));
        timers.startSingleTimer("hello", new HelloTimeout(helloAttempt), Duration.ofMillis(ds.cfg.heartbeatMs()));
    }
}
