// Owns one server process's shared state: its index, the run (config, events, counters) and the
// per-device totals (reports summed, and the sum of their values) that owner actors add to and
// the gateway reports to the orchestrator's collector.
package troupe.peers.akka.iot;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

final class ServerState {
    final Node node;
    final IotConfig cfg;
    final int server;
    final int[] ports;
    /** Whether this process is a restart of the server (it does not say `ready` again). */
    final boolean restarted = "1".equals(System.getenv(Node.ENV_RESTARTED));
    /** Servers on this server's hash ring (Up and reachable), kept by the gateway. */
    volatile int liveServers = 1;
    private final LongAdder reports = new LongAdder();
    private final ConcurrentHashMap<Integer, LongAdder[]> perDevice = new ConcurrentHashMap<>();

    ServerState(Node node, int server, int[] ports) {
        this.node = node;
        this.cfg = node.cfg;
        this.server = server;
        this.ports = ports;
    }

    /** One report of device k, summing to sum, was received. */
    void add(int k, long sum) {
        LongAdder[] t = perDevice.computeIfAbsent(k, x -> new LongAdder[] {new LongAdder(), new LongAdder()});
        t[0].increment();
        t[1].add(sum);
        reports.increment();
    }

    /** Reports summed by this server since it started, all devices. */
    long reports() {
        return reports.sum();
    }
}
