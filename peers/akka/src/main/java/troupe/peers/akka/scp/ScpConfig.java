// Owns the SCP settings this peer reads from TROUPE_CONFIG (workloads.md §1) and their checks.
// Exists so a bad config is rejected, naming the key, the value and the allowed range, before
// any actor starts. Keys the Akka program does not need (pattern, failure_rate, ...) are only
// echoed back in run_started; the lab has already turned them into the fault schedule.
package troupe.peers.akka.scp;

import com.fasterxml.jackson.databind.JsonNode;

record ScpConfig(int pairs, int supervisors, long delayMs, int payloadBytes, boolean recovery,
                 int durationS, int warmupS, boolean injectorNode) {

    int perGroup() {
        return pairs / supervisors;
    }

    static ScpConfig parse(JsonNode root) {
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("TROUPE_CONFIG must hold a JSON object");
        }
        int pairs = (int) integer(root, "pairs", 1024, 1, 10_000_000);
        int supervisors = (int) integer(root, "supervisors", 32, 1, pairs);
        if (pairs % supervisors != 0) {
            throw new IllegalArgumentException("config key supervisors=" + supervisors
                    + ": must divide pairs=" + pairs);
        }
        long delayMs = integer(root, "delay_ms", 200, 1, 3_600_000);
        int payload = (int) integer(root, "payload_bytes", 500, 0, 64 << 20);
        boolean recovery = bool(root, "recovery", true);
        int duration = (int) integer(root, "duration_s", 60, 1, 86_400);
        int warmup = (int) integer(root, "warmup_s", 5, 0, 86_400);
        boolean injectorNode = injector(root);
        return new ScpConfig(pairs, supervisors, delayMs, payload, recovery, duration, warmup,
                injectorNode);
    }

    /** Where the injector runs: its own JVM ("node", the default) or this one ("in_process"). */
    private static boolean injector(JsonNode root) {
        JsonNode v = root.get("injector");
        if (v == null || v.isNull()) {
            return true;
        }
        if (v.isTextual() && v.asText().equals("node")) {
            return true;
        }
        if (v.isTextual() && v.asText().equals("in_process")) {
            return false;
        }
        throw new IllegalArgumentException("config key injector=" + v
                + ": expected \"node\" or \"in_process\"");
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

    private static boolean bool(JsonNode root, String key, boolean dflt) {
        JsonNode v = root.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isBoolean()) {
            throw new IllegalArgumentException("config key " + key + "=" + v
                    + ": expected true or false");
        }
        return v.asBoolean();
    }
}
