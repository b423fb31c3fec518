// Owns one device on its owning server: the per-device actor the gateway starts (protocol rules
// 3-6 in Protocol.java). It asks the device for reports, sums them into the server's totals,
// re-asks after report_timeout_ms, heartbeats the device and watches its acks with Akka's
// PhiAccrualFailureDetector, and writes the device's status to Distributed Data: to every live
// server (WriteTo n) on the first report of a restarted incarnation (then it emits `reconnected`,
// the MTTR), with WriteLocal (gossip spreads it) about once a second after that.
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import akka.actor.typed.javadsl.TimerScheduler;
import akka.cluster.ddata.Key;
import akka.cluster.ddata.LWWMap;
import akka.cluster.ddata.LWWMapKey;
import akka.cluster.ddata.SelfUniqueAddress;
import akka.cluster.ddata.typed.javadsl.DistributedData;
import akka.cluster.ddata.typed.javadsl.Replicator;
import akka.cluster.ddata.typed.javadsl.ReplicatorMessageAdapter;
import akka.remote.PhiAccrualFailureDetector;
import java.time.Duration;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.iot.Protocol.DeviceStatus;
import troupe.peers.akka.iot.Protocol.ToOwner;

final class Owner extends AbstractBehavior<ToOwner> {
    /** The replicated device statuses: "device-k" -> DeviceStatus. */
    static final Key<LWWMap<String, DeviceStatus>> STATUS_KEY = LWWMapKey.create("iot-device-status");
    /** Replication attempts for a restarted incarnation's first status before it is given up. */
    static final int MAX_WRITE_ALL = 10;

    /** The gateway's order to leave: tell the device to go back to the seeds (or not), stop. */
    record Retire(boolean tellDevice) implements ToOwner {}

    private enum Tick implements ToOwner { INSTANCE }

    private record Stored(Replicator.UpdateResponse<LWWMap<String, DeviceStatus>> rsp, boolean all)
            implements ToOwner {}

    /** What the gateway knows of the device when it starts the owner. */
    record Spec(int device, long incarnation, long startUs, boolean fresh, ActorRef<Protocol.ToDevice> ref) {}

    private final ServerState st;
    private final Spec spec;
    private final String key;
    private final ReplicatorMessageAdapter<ToOwner, LWWMap<String, DeviceStatus>> replicator;
    private final SelfUniqueAddress self;
    private final PhiAccrualFailureDetector fd;
    private final long tickNanos;
    private final long expectedSum;
    private long seq = 1;
    private long summed;
    private long lastAskNanos;
    private long lastBeatNanos;
    private long lastStatusNanos;
    private long lastReportUs;
    private int writeAllTries;
    private boolean reconnectedDone;

    static Behavior<ToOwner> create(ServerState st, Spec spec) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new Owner(ctx, timers, st, spec)));
    }

    private Owner(ActorContext<ToOwner> ctx, TimerScheduler<ToOwner> timers, ServerState st, Spec spec) {
        super(ctx);
        this.st = st;
        this.spec = spec;
        this.key = Protocol.deviceName(spec.device());
        this.replicator = new ReplicatorMessageAdapter<>(ctx,
                DistributedData.get(ctx.getSystem()).replicator(), Duration.ofSeconds(10));
        this.self = DistributedData.get(ctx.getSystem()).selfUniqueAddress();
        long hb = st.cfg.heartbeatMs();
        this.fd = st.cfg.newDetector();
        fd.heartbeat(); // start monitoring: a device that never acks is declared failed
        long n = st.cfg.reportLen();
        this.expectedSum = n * (n + 1) / 2;
        // Contract rules 4-5: phi and the re-ask checked every quarter of the shorter period.
        long tickMs = Math.max(5, Math.min(hb, st.cfg.reportTimeoutMs()) / 4);
        this.tickNanos = tickMs * 1_000_000L;
        timers.startTimerAtFixedRate(Tick.INSTANCE, Duration.ofMillis(tickMs));
        long now = System.nanoTime();
        beat(now);
        ask(now);
    }

    @Override
    public Receive<ToOwner> createReceive() {
        return newReceiveBuilder()
                .onMessage(Protocol.Report.class, this::onReport)
                .onMessage(Protocol.HeartbeatAck.class, a -> {
                    fd.heartbeat();
                    return this;
                })
                .onMessage(Protocol.Refused.class, r -> Behaviors.stopped())
                .onMessage(Retire.class, this::onRetire)
                .onMessageEquals(Tick.INSTANCE, this::onTick)
                .onMessage(Stored.class, this::onStored)
                .build();
    }

    private void ask(long now) {
        lastAskNanos = now;
        spec.ref().tell(new Protocol.ReportRequest(seq, summed, st.server, getContext().getSelf()));
    }

    private void beat(long now) {
        lastBeatNanos = now;
        spec.ref().tell(new Protocol.Heartbeat(st.server, getContext().getSelf()));
    }

    private Behavior<ToOwner> onReport(Protocol.Report r) {
        if (r.seq() != seq) {
            return this; // an answer to a request already asked again: stale
        }
        long[] v = r.values();
        String bad = null;
        if (v == null || v.length != st.cfg.reportLen()) {
            bad = "report of " + (v == null ? 0 : v.length) + " values, expected report_len = " + st.cfg.reportLen();
        } else {
            long sum = 0;
            for (long x : v) {
                sum += x;
            }
            if (sum != expectedSum) {
                bad = "report sums to " + sum + ", expected " + expectedSum + " (values 1..=report_len)";
            } else {
                st.add(spec.device(), sum);
            }
        }
        if (bad != null) {
            st.node.errors.incrementAndGet();
            System.err.println("akka iot server-" + st.server + ": disconnecting " + key + ": malformed report: " + bad);
            spec.ref().tell(new Protocol.Disconnected("malformed report: " + bad, getContext().getSelf()));
            return Behaviors.stopped();
        }
        summed++;
        lastReportUs = EventWriter.nowMicros();
        long now = System.nanoTime();
        if (summed == 1) {
            // The first report of this incarnation: its status goes to every server.
            boolean all = spec.fresh() && spec.incarnation() > 0;
            store(all);
            lastStatusNanos = now;
        } else if (now - lastStatusNanos >= 1_000_000_000L) {
            store(false);
            lastStatusNanos = now;
        }
        seq++;
        ask(now);
        return this;
    }

    private void store(boolean all) {
        DeviceStatus status = new DeviceStatus(st.server, spec.incarnation(), lastReportUs);
        // "Every server" = every live one: WriteTo(n) with n = the servers on this server's ring
        // (Akka's WriteAll would also wait for a killed server that is unreachable but not yet
        // removed from the cluster, i.e. until its restarted incarnation replaced it).
        int n = st.liveServers;
        Replicator.WriteConsistency wc = all && n > 1
                ? new Replicator.WriteTo(n, Duration.ofSeconds(3))
                : Replicator.writeLocal(); // one live server: this one is every server
        if (all) {
            writeAllTries++;
        }
        replicator.askUpdate(
                replyTo -> new Replicator.Update<>(STATUS_KEY, LWWMap.create(), wc, replyTo,
                        m -> m.put(self, key, status)),
                rsp -> new Stored(rsp, all));
    }

    private Behavior<ToOwner> onStored(Stored s) {
        if (!s.all() || reconnectedDone) {
            return this;
        }
        if (s.rsp() instanceof Replicator.UpdateSuccess) {
            reconnectedDone = true;
            double ms = Math.max(0, EventWriter.nowMicros() - spec.startUs()) / 1000.0;
            st.node.events.emit("reconnected", ",\"target\":\"" + key + "\",\"by\":\"server-" + st.server
                    + "\",\"ms\":" + String.format(java.util.Locale.ROOT, "%.3f", ms));
        } else if (writeAllTries < MAX_WRITE_ALL) {
            store(true); // not every server acknowledged in time: ask again
        } else {
            st.node.errors.incrementAndGet();
            System.err.println("akka iot server-" + st.server + ": " + key + "'s status never reached every server");
        }
        return this;
    }

    private Behavior<ToOwner> onRetire(Retire r) {
        if (r.tellDevice()) {
            spec.ref().tell(new Protocol.StandDown(getContext().getSelf()));
        }
        return Behaviors.stopped();
    }

    private Behavior<ToOwner> onTick() {
        long now = System.nanoTime();
        if (!fd.isAvailable()) {
            return Behaviors.stopped(); // the device is gone (killed, or cut off): forget it
        }
        if (now - lastBeatNanos >= st.cfg.heartbeatMs() * 1_000_000L - tickNanos / 2) {
            beat(now);
        }
        if (now - lastAskNanos >= st.cfg.reportTimeoutMs() * 1_000_000L) {
            seq++; // lost (dropped, or the device restarted): ask again
            ask(now);
        }
        return this;
    }
}
