// Owns the devices of one device process: the guardian of its actor system. It starts every
// device (device k lives in process k % device_processes), carries out the schedule's device
// kills (stop the device's actor at once: its owner loses it; `fault_injected`) and restarts a
// killed device restart_s later as a new incarnation with a new start time (`restarted`), unless
// that falls after the window's end.
// A kill whose device is already down is skipped and counted.
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.Behavior;
import akka.actor.typed.javadsl.AbstractBehavior;
import akka.actor.typed.javadsl.ActorContext;
import akka.actor.typed.javadsl.Behaviors;
import akka.actor.typed.javadsl.Receive;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Json;
import troupe.peers.akka.iot.Protocol.ToDevice;
import troupe.peers.akka.iot.Protocol.ToGateway;

final class DeviceHost extends AbstractBehavior<DeviceHost.Command> {
    interface Command {}

    /** Kill device k (action id), restarting it restart_s later when restart is set. */
    record Kill(String id, int device, boolean restart) implements Command {}

    private record Restart(int device) implements Command {}

    private final DeviceState ds;
    private final List<ActorRef<ToGateway>> seeds;
    private final Map<Integer, ActorRef<ToDevice>> alive = new HashMap<>();
    private final Map<Integer, Long> incarnation = new HashMap<>();

    static Behavior<Command> create(DeviceState ds, List<ActorRef<ToGateway>> seeds) {
        return Behaviors.setup(ctx -> new DeviceHost(ctx, ds, seeds));
    }

    private DeviceHost(ActorContext<Command> ctx, DeviceState ds, List<ActorRef<ToGateway>> seeds) {
        super(ctx);
        this.ds = ds;
        this.seeds = seeds;
        for (int k = ds.process; k < ds.cfg.devices(); k += ds.cfg.deviceProcesses()) {
            start(k, 0);
        }
    }

    private void start(int k, long inc) {
        incarnation.put(k, inc);
        Device.Spec spec = new Device.Spec(k, inc, EventWriter.nowMicros(), seeds, ds);
        alive.put(k, getContext().spawn(Device.create(spec), Protocol.deviceName(k) + "-" + inc));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Kill.class, this::onKill)
                .onMessage(Restart.class, this::onRestart)
                .build();
    }

    private Behavior<Command> onKill(Kill k) {
        ActorRef<ToDevice> ref = alive.remove(k.device());
        if (ref == null) {
            ds.node.skipped.incrementAndGet(); // already down (or not in this process)
            return this;
        }
        getContext().stop(ref);
        ds.node.events.emit("fault_injected", ",\"id\":" + Json.quote(k.id()) + ",\"target\":\""
                + Protocol.deviceName(k.device()) + "\",\"kind\":\"kill\"");
        if (k.restart()) {
            getContext().scheduleOnce(Duration.ofMillis(ds.cfg.restartMs()), getContext().getSelf(),
                    new Restart(k.device()));
        }
        return this;
    }

    private Behavior<Command> onRestart(Restart r) {
        long startUs = ds.node.windowStartUs;
        if (startUs >= 0 && EventWriter.nowMicros() >= startUs + ds.cfg.durationS() * 1_000_000L) {
            return this; // contract rule 9: a restart after the window's end is not carried out
        }
        long inc = incarnation.getOrDefault(r.device(), 0L) + 1;
        start(r.device(), inc);
        ds.node.events.emit("restarted", ",\"target\":\"" + Protocol.deviceName(r.device())
                + "\",\"attempt\":" + inc);
        return this;
    }
}
