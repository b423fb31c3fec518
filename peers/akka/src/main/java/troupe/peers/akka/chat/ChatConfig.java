// Owns the chat settings this peer reads from TROUPE_CONFIG (docs/chat.md)
// and their checks. Exists so a bad config is rejected, naming the key and the allowed range,
// before any actor starts. Keys the program does not need (fault_phase, seed, events,
// clients_per_process) are only echoed back in run_started: the lab already turned them into
// the schedule.
package troupe.peers.akka.chat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;

record ChatConfig(String testType, int numSupervisor, int chatsPerSup, int clientsPerServer,
                  long faultPauseMs, String msgType, int durationS, int warmupS,
                  long sendIntervalMs, long retryDelayMs, int retryMax, long stressMs,
                  long stressMb, String deployment, int clientsPerProcess, String lookup) {

    int chats() {
        return numSupervisor * chatsPerSup;
    }

    long clients() {
        return (long) chats() * clientsPerServer;
    }

    /** Distributed: the client groups, at most clients_per_process clients each: {first, count}. */
    java.util.List<long[]> clientGroups() {
        java.util.List<long[]> groups = new java.util.ArrayList<>();
        for (long first = 0; first < clients(); first += clientsPerProcess) {
            groups.add(new long[] {first, Math.min(clientsPerProcess, clients() - first)});
        }
        return groups;
    }

    /** Only in the throughput test do clients send chat messages. */
    boolean clientsSend() {
        return testType.equals("throughput");
    }

    static ChatConfig parse(JsonNode root) {
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("TROUPE_CONFIG must hold a JSON object");
        }
        String testType = str(root, "test_type", "throughput",
                Set.of("throughput", "reconnection_time", "detection_time"));
        int sups = (int) integer(root, "num_supervisor", 1, 1, 10_000);
        int per = (int) integer(root, "chats_per_sup", 256, 1, 100_000);
        int clients = (int) integer(root, "clients_per_server", 5, 1, 1_000_000);
        long pause = integer(root, "fault_pause_ms", 5000, 1, 3_600_000);
        String msgType = str(root, "msg_type", "error",
                Set.of("error", "kill", "cpu_intensive", "ram_intensive", "random", "none"));
        int duration = (int) integer(root, "test_duration_secs", 60, 1, 86_400);
        int warmup = (int) integer(root, "warmup_s", 5, 0, 3600);
        long send = integer(root, "send_interval_ms", 200, 1, 3_600_000);
        long retryDelay = integer(root, "retry_delay_ms", 10, 1, 60_000);
        int retryMax = (int) integer(root, "retry_max", 500, 1, 100_000);
        long stressMs = integer(root, "stress_ms", 100, 1, 60_000);
        long stressMb = integer(root, "stress_mb", 64, 1, 4096);
        String deployment = str(root, "deployment", "distributed", Set.of("distributed", "single"));
        int perProcess = (int) integer(root, "clients_per_process", 10_000, 1, 1_000_000);
        String lookup = str(root, "lookup", "retry", Set.of("retry", "park"));
        if ((long) sups * per * clients > 1_000_000L) {
            throw new IllegalArgumentException("at most 1,000,000 clients in all (num_supervisor"
                    + " x chats_per_sup x clients_per_server = " + ((long) sups * per * clients) + ")");
        }
        return new ChatConfig(testType, sups, per, clients, pause, msgType, duration, warmup, send,
                retryDelay, retryMax, stressMs, stressMb, deployment, perProcess, lookup);
    }

    private static String str(JsonNode root, String key, String dflt, Set<String> allowed) {
        JsonNode v = root.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isTextual() || !allowed.contains(v.asText())) {
            throw new IllegalArgumentException("config key " + key + "=" + v + ": expected one of "
                    + allowed);
        }
        return v.asText();
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
}
