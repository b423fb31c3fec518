// Owns a device process's shared state: the run, the report every device sends (the values
// 1..=report_len, built once), and the set of devices that have been homed at least once (an
// owner summed a first report), which gates the process's `ready {what: "devices"}`.
package troupe.peers.akka.iot;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

final class DeviceState {
    final Node node;
    final IotConfig cfg;
    final int process;
    final long[] values;
    private final Set<Integer> homed = ConcurrentHashMap.newKeySet();
    final CountDownLatch allHomed;

    DeviceState(Node node, int process) {
        this.node = node;
        this.cfg = node.cfg;
        this.process = process;
        this.values = new long[cfg.reportLen()];
        for (int i = 0; i < values.length; i++) {
            values[i] = i + 1;
        }
        this.allHomed = new CountDownLatch(cfg.devicesIn(process));
    }

    /** Device k's owner summed a report (counts each device once, whatever its incarnation). */
    void homed(int k) {
        if (homed.add(k)) {
            allHomed.countDown();
        }
    }
}
