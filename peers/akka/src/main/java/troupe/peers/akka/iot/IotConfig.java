// Owns the IoT settings this peer reads from TROUPE_CONFIG (workloads.md §3, the iot peer
// contract in peers/akka/README.md) and their checks: a bad value is rejected naming the key and
// the allowed range before any process starts. Keys the program does not need are echoed back in
// run_started only.
package troupe.peers.akka.iot;

import akka.remote.FailureDetector$;
import akka.remote.PhiAccrualFailureDetector;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.TimeUnit;
import scala.concurrent.duration.FiniteDuration;

record IotConfig(int servers, int deviceProcesses, int devices, int durationS, int warmupS,
                 int reportLen, long reportTimeoutMs, long heartbeatMs, double phiThreshold,
                 double dropProbability, long delayMinMs, long delayMaxMs, double clientMttfS,
                 double serverMttfS, double restartS, long seed) {

    /** Largest report this peer sends: 25,000 i64 stay inside Artery's default 256 KiB frame. */
    static final int MAX_REPORT_LEN = 25_000;

    /** How many devices device process p holds (device k lives in process k % deviceProcesses). */
    int devicesIn(int p) {
        return devices / deviceProcesses + (p < devices % deviceProcesses ? 1 : 0);
    }

    /**
     * A fresh heartbeat watcher (iot contract rule 4, the same parameters as Troupe's): Akka's
     * PhiAccrualFailureDetector with threshold phi_threshold, a window of 100 intervals, a
     * minimum deviation of heartbeat_ms / 2, an acceptable pause of 2 x heartbeat_ms and a first
     * estimate of heartbeat_ms.
     */
    PhiAccrualFailureDetector newDetector() {
        return new PhiAccrualFailureDetector(phiThreshold, 100,
                FiniteDuration.create(Math.max(1, heartbeatMs / 2), TimeUnit.MILLISECONDS),
                FiniteDuration.create(2 * heartbeatMs, TimeUnit.MILLISECONDS),
                FiniteDuration.create(heartbeatMs, TimeUnit.MILLISECONDS),
                FailureDetector$.MODULE$.defaultClock());
    }

    long restartMs() {
        return Math.round(restartS * 1000.0);
    }

    static IotConfig parse(JsonNode root) {
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("TROUPE_CONFIG must hold a JSON object");
        }
        int servers = (int) integer(root, "servers", 1, 1, 16);
        int procs = (int) integer(root, "device_processes", 3, 1, 32);
        int devices = (int) integer(root, "devices", 300, 1, 100_000);
        int duration = (int) integer(root, "duration_s", 20, 1, 86_400);
        int warmup = (int) integer(root, "warmup_s", 5, 0, 3600);
        int reportLen = (int) integer(root, "report_len", 1000, 1, MAX_REPORT_LEN);
        long timeout = integer(root, "report_timeout_ms", 1000, 1, 600_000);
        long heartbeat = integer(root, "heartbeat_ms", 500, 10, 60_000);
        double phi = number(root, "phi_threshold", 8.0, 0.1, 1000.0);
        double drop = number(root, "drop_probability", 0.0, 0.0, 0.9);
        long dmin = integer(root, "delay_min_ms", 0, 0, 60_000);
        long dmax = integer(root, "delay_max_ms", 0, 0, 60_000);
        if (dmax < dmin) {
            throw new IllegalArgumentException("config key delay_max_ms=" + dmax
                    + " is below delay_min_ms=" + dmin + ": set delay_max_ms >= delay_min_ms");
        }
        double clientMttf = number(root, "client_mttf_s", 0, 0, 1e9);
        double serverMttf = number(root, "server_mttf_s", 0, 0, 1e9);
        double restart = number(root, "restart_s", 5, 0, 86_400);
        long seed = integer(root, "seed", 1, Long.MIN_VALUE, Long.MAX_VALUE);
        return new IotConfig(servers, procs, devices, duration, warmup, reportLen, timeout, heartbeat,
                phi, drop, dmin, dmax, clientMttf, serverMttf, restart, seed);
    }

    private static long integer(JsonNode root, String key, long dflt, long min, long max) {
        JsonNode v = root.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isIntegralNumber() && !(v.isNumber() && v.asDouble() == Math.rint(v.asDouble()))) {
            throw new IllegalArgumentException("config key " + key + "=" + v
                    + ": expected an integer in " + min + ".." + max);
        }
        long x = v.asLong();
        if (x < min || x > max) {
            throw new IllegalArgumentException("config key " + key + "=" + x
                    + ": out of range " + min + ".." + max);
        }
        return x;
    }

    private static double number(JsonNode root, String key, double dflt, double min, double max) {
        JsonNode v = root.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isNumber() || !Double.isFinite(v.asDouble())) {
            throw new IllegalArgumentException("config key " + key + "=" + v
                    + ": expected a number in " + min + ".." + max);
        }
        double x = v.asDouble();
        if (x < min || x > max) {
            throw new IllegalArgumentException("config key " + key + "=" + x
                    + ": out of range " + min + ".." + max);
        }
        return x;
    }
}
