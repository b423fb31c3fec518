// Owns the IoT peer's protocol check (run by iot/smoke.sh): two real servers (an Akka Cluster of
// two ActorSystems "iot" with the real Gateway) and three hand-driven devices (an Artery-only
// ActorSystem whose actors record what the servers send them) in this JVM, over loopback. From
// the devices' side it checks protocol rules 2, 3 and 5 of Protocol.java: a server redirects a
// device the ring gives to the other; an unanswered request is asked again (seq + 1) after
// report_timeout_ms; an owner answered Refused stops asking; a well-formed device is asked again
// at once after each report and its reports are summed; a Hello with another protocol version is
// Rejected with a reason; a malformed report is answered Disconnected with a reason; the servers
// count exactly those two in `errors` (run_finished). Exit 0 = all held.
//
//     java -cp 'peers/akka/target/troupe-akka-peers.jar:peers/akka/target/lib/*' \
//         troupe.peers.akka.iot.Probe /tmp/probe.events.jsonl
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorRefResolver;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.javadsl.Behaviors;
import akka.cluster.MemberStatus;
import akka.cluster.typed.Cluster;
import akka.routing.ConsistentHash;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.iot.Protocol.ToDevice;
import troupe.peers.akka.iot.Protocol.ToGateway;

public final class Probe {
    /** Each expected answer must come within this. */
    static final long ANSWER_TIMEOUT_MS = 20_000;

    private final List<LinkedBlockingQueue<ToDevice>> inboxes =
            List.of(new LinkedBlockingQueue<>(), new LinkedBlockingQueue<>(), new LinkedBlockingQueue<>());
    private final List<String> failures = new ArrayList<>();

    private Probe() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Probe EVENTS_FILE (the server's events are appended to it)");
            System.exit(2);
        }
        System.exit(new Probe().run(args[0]));
    }

    private int run(String events) throws Exception {
        ObjectNode raw = new ObjectMapper().createObjectNode();
        raw.put("report_len", 10);
        IotConfig cfg = IotConfig.parse(raw);
        Node node = new Node(cfg, raw, List.of(), events, "probe", 0);
        node.start("server-0");
        int[] ports = new int[2];
        for (int i = 0; i < 2; i++) {
            try (ServerSocket s = new ServerSocket(0)) {
                ports[i] = s.getLocalPort();
            }
        }
        List<ServerState> states = new ArrayList<>();
        List<ActorSystem<Void>> servers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ServerState st = new ServerState(node, i, ports);
            states.add(st);
            servers.add(ActorSystem.create(Behaviors.setup(ctx -> {
                ctx.spawn(Gateway.create(st), "gateway");
                return Behaviors.<Void>empty();
            }), Node.SERVER_SYSTEM, Node.serverConfig(i, ports)));
        }
        // Three hand-driven devices, each with its own inbox (the scenarios below stay apart).
        List<ActorRef<ToDevice>> devs = new ArrayList<>();
        CountDownLatch spawned = new CountDownLatch(1);
        ActorSystem<Void> device = ActorSystem.create(Behaviors.setup(ctx -> {
            for (int i = 0; i < inboxes.size(); i++) {
                LinkedBlockingQueue<ToDevice> q = inboxes.get(i);
                devs.add(ctx.spawn(Behaviors.receive(ToDevice.class).onAnyMessage(m -> {
                    q.add(m);
                    return Behaviors.same();
                }).build(), "probe-device-" + i));
            }
            spawned.countDown();
            return Behaviors.<Void>empty();
        }), "iot-devices", Node.remoteConfig());
        try {
            long upBy = System.nanoTime() + 90_000_000_000L;
            while (!servers.stream().allMatch(sys -> Cluster.get(sys).selfMember().status() == MemberStatus.up())) {
                if (System.nanoTime() > upBy) {
                    throw new IllegalStateException("the two servers were not Up within 90 s");
                }
                Thread.sleep(20);
            }
            ActorRefResolver resolver = ActorRefResolver.get(device);
            List<ActorRef<ToGateway>> gws = new ArrayList<>();
            for (int port : ports) {
                gws.add(resolver.resolveActorRef(Protocol.gatewayPath(port)));
            }
            if (!spawned.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the probe devices did not start within 30 s");
            }
            check(gws, devs, cfg, states);
        } finally {
            Processes.terminate(device, node, "probe device");
            for (ActorSystem<Void> sys : servers) {
                Processes.terminate(sys, node, "probe server");
            }
        }
        long errors = node.errors.get();
        expect(errors == 2, "the server counted " + errors + " errors, expected 2 (a bad version, a malformed report)");
        node.finish("");
        for (String f : failures) {
            System.err.println("akka iot probe: FAIL: " + f);
        }
        return failures.isEmpty() ? 0 : 1;
    }

    private void check(List<ActorRef<ToGateway>> gws, List<ActorRef<ToDevice>> devs, IotConfig cfg,
                       List<ServerState> states) throws Exception {
        // The ring over both servers (the gateway's: Akka's ConsistentHash, same virtual nodes).
        ConsistentHash<String> ring = ConsistentHash.create(List.of("server-0", "server-1"), Gateway.VIRTUAL_NODES);
        int k0 = -1;
        int k1 = -1;
        for (int k = 0; k < 1000 && (k0 < 0 || k1 < 0); k++) {
            if (ring.nodeFor(Protocol.deviceName(k)).equals("server-0")) {
                k0 = k0 < 0 ? k : k0;
            } else {
                k1 = k1 < 0 ? k : k1;
            }
        }
        // Rule 2: server-0 redirects a device the ring gives to server-1 (again until its ring
        // holds both servers: their membership events reach the gateway after they are Up).
        Protocol.Redirect red = null;
        long by = System.nanoTime() + ANSWER_TIMEOUT_MS * 1_000_000L;
        while (red == null && System.nanoTime() < by) {
            gws.get(0).tell(new Protocol.Hello(k1, 0, EventWriter.nowMicros(), true, Protocol.VERSION, devs.get(0)));
            red = next(0, Protocol.Redirect.class, 500);
        }
        expect(red != null && red.server() == 1, "server-0 did not redirect device " + k1 + " to server-1: " + red);
        // Rule 3, re-ask: server-1 owns it; a request left unanswered is asked again (seq + 1)
        // after report_timeout_ms.
        // Timed from before the first Hello: the owner asks q1 after that Hello arrived, and the
        // re-ask comes report_timeout_ms after q1, so this bound holds whatever the delivery
        // times on a loaded machine (timing from q1's arrival would count q1's delivery against it).
        long asked = System.nanoTime();
        Protocol.ReportRequest q1 = hello(gws.get(1), devs.get(1), 1, k1, Protocol.VERSION, Protocol.ReportRequest.class);
        if (q1 != null) {
            expect(q1.server() == 1, "device " + k1 + "'s owner is server-" + q1.server() + ", not server-1");
            Protocol.ReportRequest q2 = next(1, Protocol.ReportRequest.class);
            long waitedMs = (System.nanoTime() - asked) / 1_000_000L;
            expect(q2 != null && q2.seq() == q1.seq() + 1 && q2.summed() == 0
                            && waitedMs >= cfg.reportTimeoutMs(),
                    "an unanswered request was not asked again after report_timeout_ms: " + q2 + " after " + waitedMs + " ms");
            // Rule 5: Refused (the device serves another owner) stops that owner: no request for
            // twice report_timeout_ms after it.
            if (q2 != null) {
                q2.owner().tell(new Protocol.Refused(k1));
                inboxes.get(1).clear();
                Protocol.ReportRequest q3 = next(1, Protocol.ReportRequest.class, 2 * cfg.reportTimeoutMs() + 500);
                expect(q3 == null || q3.seq() == q2.seq() + 1 && q3.owner().equals(q2.owner())
                        && inboxes.get(1).isEmpty() && next(1, Protocol.ReportRequest.class, cfg.reportTimeoutMs()) == null,
                        "an owner kept asking after Refused: " + q3);
            }
        }
        ActorRef<ToGateway> gw = gws.get(0);
        ServerState st = states.get(0);
        int kGood = k0;
        long[] good = new long[cfg.reportLen()];
        for (int i = 0; i < good.length; i++) {
            good[i] = i + 1;
        }
        // A well-formed device 0: two reports summed, each answered by the next request at once.
        Protocol.ReportRequest r1 = hello(gw, devs.get(2), 2, kGood, Protocol.VERSION, Protocol.ReportRequest.class);
        if (r1 != null) {
            expect(r1.seq() == 1 && r1.summed() == 0, "first request: seq " + r1.seq() + ", summed " + r1.summed());
            r1.owner().tell(new Protocol.Report(r1.seq(), good));
            Protocol.ReportRequest r2 = next(2, Protocol.ReportRequest.class);
            if (r2 != null) {
                expect(r2.seq() == 2 && r2.summed() == 1, "second request: seq " + r2.seq() + ", summed " + r2.summed());
                r2.owner().tell(new Protocol.Report(r2.seq(), good));
                Protocol.ReportRequest r3 = next(2, Protocol.ReportRequest.class);
                expect(r3 != null && r3.summed() == 2, "no third request after two reports");
            }
            expect(st.reports() == 2, "the server summed " + st.reports() + " reports, expected 2");
            // A malformed report (one value short): Disconnected with the reason.
            Protocol.ReportRequest r = next(2, Protocol.ReportRequest.class);
            if (r == null) {
                r = r1;
            }
            r.owner().tell(new Protocol.Report(r.seq(), new long[cfg.reportLen() - 1]));
            Protocol.Disconnected d = next(2, Protocol.Disconnected.class);
            expect(d != null && d.reason().contains("malformed report") && d.reason().contains("report_len"),
                    "a malformed report was not answered Disconnected with its reason: " + d);
        }
        // Another protocol version: Rejected with the reason.
        Protocol.Rejected rej = hello(gw, devs.get(0), 0, k0, Protocol.VERSION + 98, Protocol.Rejected.class);
        expect(rej != null && rej.reason().contains("protocol version " + (Protocol.VERSION + 98)),
                "a Hello with version " + (Protocol.VERSION + 98) + " was not Rejected with a reason: " + rej);
    }

    /** Says Hello (again every second: the gateway ignores it until its ring is built). */
    private <T extends ToDevice> T hello(ActorRef<ToGateway> gw, ActorRef<ToDevice> me, int inbox, int k,
                                         int version, Class<T> want) throws InterruptedException {
        long by = System.nanoTime() + ANSWER_TIMEOUT_MS * 1_000_000L;
        while (System.nanoTime() < by) {
            gw.tell(new Protocol.Hello(k, 0, EventWriter.nowMicros(), true, version, me));
            T got = next(inbox, want, 1000);
            if (got != null) {
                return got;
            }
        }
        expect(false, "no " + want.getSimpleName() + " answer to Hello(device " + k + ", version " + version + ")");
        return null;
    }

    private <T extends ToDevice> T next(int inbox, Class<T> want) throws InterruptedException {
        T got = next(inbox, want, ANSWER_TIMEOUT_MS);
        expect(got != null, "no " + want.getSimpleName() + " within " + ANSWER_TIMEOUT_MS + " ms");
        return got;
    }

    /** The next message of class want in an inbox (others, e.g. heartbeats, are skipped), or null. */
    private <T extends ToDevice> T next(int inbox, Class<T> want, long timeoutMs) throws InterruptedException {
        long by = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            long left = by - System.nanoTime();
            ToDevice m = left > 0 ? inboxes.get(inbox).poll(left, TimeUnit.NANOSECONDS) : null;
            if (m == null) {
                return null;
            }
            if (want.isInstance(m)) {
                return want.cast(m);
            }
        }
    }

    private void expect(boolean ok, String what) {
        if (!ok) {
            failures.add(what);
        }
    }
}
