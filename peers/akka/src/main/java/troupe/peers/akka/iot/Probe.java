// Owns the IoT peer's protocol check (run by iot/smoke.sh): one real server (an Akka Cluster of
// one: ActorSystem "iot" with the real Gateway) and a hand-driven device (an Artery-only
// ActorSystem whose guardian records what the server sends it) in this JVM, over loopback. It
// checks protocol rules 2 and 3 of Protocol.java from the device's side: a well-formed device is
// asked again at once after each report and its reports are summed; a Hello with another
// protocol version is Rejected with a reason; a malformed report is answered Disconnected with a
// reason; the server counts exactly those two in `errors` (its run_finished). Exit 0 = all held.
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
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import troupe.peers.akka.common.EventWriter;
import troupe.peers.akka.iot.Protocol.ToDevice;
import troupe.peers.akka.iot.Protocol.ToGateway;

public final class Probe {
    /** Each expected answer must come within this. */
    static final long ANSWER_TIMEOUT_MS = 20_000;

    private final LinkedBlockingQueue<ToDevice> inbox = new LinkedBlockingQueue<>();
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
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        int[] ports = {port};
        ServerState st = new ServerState(node, 0, ports);
        ActorSystem<Void> server = ActorSystem.create(Behaviors.setup(ctx -> {
            ctx.spawn(Gateway.create(st), "gateway");
            return Behaviors.<Void>empty();
        }), Node.SERVER_SYSTEM, Node.serverConfig(0, ports));
        ActorSystem<ToDevice> device = ActorSystem.create(Behaviors.receive(ToDevice.class)
                .onAnyMessage(m -> {
                    inbox.add(m);
                    return Behaviors.same();
                }).build(), "iot-devices", Node.remoteConfig());
        try {
            long upBy = System.nanoTime() + 60_000_000_000L;
            while (Cluster.get(server).selfMember().status() != MemberStatus.up()) {
                if (System.nanoTime() > upBy) {
                    throw new IllegalStateException("the server was not Up within 60 s");
                }
                Thread.sleep(20);
            }
            ActorRef<ToGateway> gw = ActorRefResolver.get(device).resolveActorRef(Protocol.gatewayPath(port));
            check(gw, device, cfg, st);
        } finally {
            Processes.terminate(device, node, "probe device");
            Processes.terminate(server, node, "probe server");
        }
        long errors = node.errors.get();
        expect(errors == 2, "the server counted " + errors + " errors, expected 2 (a bad version, a malformed report)");
        node.finish("");
        for (String f : failures) {
            System.err.println("akka iot probe: FAIL: " + f);
        }
        return failures.isEmpty() ? 0 : 1;
    }

    private void check(ActorRef<ToGateway> gw, ActorRef<ToDevice> me, IotConfig cfg, ServerState st)
            throws Exception {
        long[] good = new long[cfg.reportLen()];
        for (int i = 0; i < good.length; i++) {
            good[i] = i + 1;
        }
        // A well-formed device 0: two reports summed, each answered by the next request at once.
        Protocol.ReportRequest r1 = hello(gw, me, 0, Protocol.VERSION, Protocol.ReportRequest.class);
        if (r1 != null) {
            expect(r1.seq() == 1 && r1.summed() == 0, "first request: seq " + r1.seq() + ", summed " + r1.summed());
            r1.owner().tell(new Protocol.Report(r1.seq(), good));
            Protocol.ReportRequest r2 = next(Protocol.ReportRequest.class);
            if (r2 != null) {
                expect(r2.seq() == 2 && r2.summed() == 1, "second request: seq " + r2.seq() + ", summed " + r2.summed());
                r2.owner().tell(new Protocol.Report(r2.seq(), good));
                Protocol.ReportRequest r3 = next(Protocol.ReportRequest.class);
                expect(r3 != null && r3.summed() == 2, "no third request after two reports");
            }
            expect(st.reports() == 2, "the server summed " + st.reports() + " reports, expected 2");
            // A malformed report (one value short): Disconnected with the reason.
            Protocol.ReportRequest r = next(Protocol.ReportRequest.class);
            if (r == null) {
                r = r1;
            }
            r.owner().tell(new Protocol.Report(r.seq(), new long[cfg.reportLen() - 1]));
            Protocol.Disconnected d = next(Protocol.Disconnected.class);
            expect(d != null && d.reason().contains("malformed report") && d.reason().contains("report_len"),
                    "a malformed report was not answered Disconnected with its reason: " + d);
        }
        // Another protocol version: Rejected with the reason.
        Protocol.Rejected rej = hello(gw, me, 1, Protocol.VERSION + 98, Protocol.Rejected.class);
        expect(rej != null && rej.reason().contains("protocol version " + (Protocol.VERSION + 98)),
                "a Hello with version " + (Protocol.VERSION + 98) + " was not Rejected with a reason: " + rej);
    }

    /** Says Hello (again every second: the gateway ignores it until its ring is built). */
    private <T extends ToDevice> T hello(ActorRef<ToGateway> gw, ActorRef<ToDevice> me, int k, int version,
                                         Class<T> want) throws InterruptedException {
        long by = System.nanoTime() + ANSWER_TIMEOUT_MS * 1_000_000L;
        while (System.nanoTime() < by) {
            gw.tell(new Protocol.Hello(k, 0, EventWriter.nowMicros(), true, version, me));
            T got = next(want, 1000);
            if (got != null) {
                return got;
            }
        }
        expect(false, "no " + want.getSimpleName() + " answer to Hello(device " + k + ", version " + version + ")");
        return null;
    }

    private <T extends ToDevice> T next(Class<T> want) throws InterruptedException {
        T got = next(want, ANSWER_TIMEOUT_MS);
        expect(got != null, "no " + want.getSimpleName() + " within " + ANSWER_TIMEOUT_MS + " ms");
        return got;
    }

    /** The next message of class want (others, such as heartbeats, are skipped), or null. */
    private <T extends ToDevice> T next(Class<T> want, long timeoutMs) throws InterruptedException {
        long by = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            long left = by - System.nanoTime();
            ToDevice m = left > 0 ? inbox.poll(left, TimeUnit.NANOSECONDS) : null;
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
