// Owns the two kinds of child process the orchestrator starts: a server (`Main server S PORTS`,
// node server-S: an Akka Cluster member whose guardian spawns /user/gateway) and a device
// process (`Main devices P PORTS`, node devices-P: an Artery-only actor system holding devices
// k with k % device_processes = P, and the injector of their kills). Both follow the control
// pipe rules in Node.java.
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorRefResolver;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.Behaviors;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.common.Schedule;
import troupe.peers.akka.iot.Protocol.ToGateway;

final class Processes {
    /** Seconds a device process waits for all its devices to be homed. */
    static final long SETUP_TIMEOUT_S = 180;

    private Processes() {}

    /** Server s. */
    static int server(Node node, int s, int[] ports) throws Exception {
        String name = Protocol.serverName(s);
        node.start(name);
        node.listen(name);
        node.onSignal(() -> { }, "");
        ServerState st = new ServerState(node, s, ports);
        ActorSystem<Void> system = ActorSystem.create(Behaviors.setup(ctx -> {
            ctx.spawn(Gateway.create(st), "gateway");
            return Behaviors.<Void>empty();
        }), Node.SERVER_SYSTEM, Node.serverConfig(s, ports));
        node.stop.await();
        terminate(system, node, name);
        System.err.printf("akka iot %s: %d reports summed%n", name, st.reports());
        return node.finish("") ? 0 : 1;
    }

    /** Device process p. */
    static int devices(Node node, int p, int[] ports) throws Exception {
        String name = "devices-" + p;
        node.start(name);
        node.listen(name);
        node.onSignal(() -> { }, "");
        DeviceState ds = new DeviceState(node, p);
        ActorSystem<DeviceHost.Command> system = ActorSystem.create(Behaviors.setup(ctx -> {
            ActorRefResolver resolver = ActorRefResolver.get(ctx.getSystem());
            List<ActorRef<ToGateway>> seeds = new ArrayList<>();
            for (int port : ports) {
                seeds.add(resolver.resolveActorRef(Protocol.gatewayPath(port)));
            }
            return DeviceHost.create(ds, seeds);
        }), "iot-devices", Node.remoteConfig());
        int n = node.cfg.devicesIn(p);
        Thread injector = null;
        int exit = 0;
        try {
            long deadline = System.nanoTime() + SETUP_TIMEOUT_S * 1_000_000_000L;
            while (!ds.allHomed.await(100, TimeUnit.MILLISECONDS)) {
                if (node.stop.getCount() == 0 || System.nanoTime() > deadline) {
                    throw new TimeoutException(ds.allHomed.getCount() + " of " + n
                            + " devices never got an owner" + (node.stop.getCount() == 0 ? " (stopped)" : ""));
                }
            }
            node.events.emit("ready", ",\"what\":\"devices\",\"count\":" + n);
            Node.sayReady();
            while (!node.windowSet.await(100, TimeUnit.MILLISECONDS)) {
                if (node.stop.getCount() == 0) {
                    break;
                }
            }
            if (node.windowStartUs >= 0) {
                injector = injector(node, p, system);
            }
            node.stop.await();
        } catch (TimeoutException e) {
            node.errors.incrementAndGet();
            System.err.println("akka iot " + name + ": set-up failed: " + e.getMessage());
            exit = 1;
        }
        if (injector != null) {
            injector.interrupt();
            injector.join(5_000);
        }
        terminate(system, node, name);
        return node.finish("") && exit == 0 ? 0 : 1;
    }

    /** Replays this process's device kills (window start + at_ms) on a thread of its own. */
    private static Thread injector(Node node, int p, ActorSystem<DeviceHost.Command> system) {
        IotConfig cfg = node.cfg;
        List<Schedule.Action> mine = new ArrayList<>();
        for (Schedule.Action a : node.schedule) {
            if (a.kind().equals("kill") && a.group() >= 0 && a.group() < cfg.devices()
                    && a.group() % cfg.deviceProcesses() == p && a.atMs() < cfg.durationS() * 1000L) {
                mine.add(a);
            }
        }
        long startNanos = System.nanoTime() + (node.windowStartUs - EventWriter.nowMicros()) * 1000L;
        Thread t = new Thread(() -> {
            for (Schedule.Action a : mine) {
                long at = startNanos + a.atMs() * 1_000_000L;
                long now;
                while ((now = System.nanoTime()) < at) {
                    LockSupport.parkNanos(at - now);
                    if (Thread.currentThread().isInterrupted()) {
                        return;
                    }
                }
                system.tell(new DeviceHost.Kill(a.id(), a.group(), a.restart()));
            }
        }, "iot-injector");
        t.setDaemon(true);
        t.start();
        return t;
    }

    static void terminate(ActorSystem<?> system, Node node, String name) throws Exception {
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            node.errors.incrementAndGet();
            System.err.println("akka iot " + name + ": actor system did not terminate within 30 s");
        }
    }
}
