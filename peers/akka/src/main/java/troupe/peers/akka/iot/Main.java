// Owns the IoT peer's entry point (peers/akka/iot/run): reads TROUPE_CONFIG / TROUPE_SCHEDULE /
// TROUPE_EVENTS / TROUPE_RUN_ID and runs the orchestrator, or, with arguments
// `server S PORTS` / `devices P PORTS`, one of its child processes (Processes.java).
package troupe.peers.akka.iot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import troupe.peers.akka.common.Schedule;

public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    private static int run(String[] args) throws Exception {
        String configPath = System.getenv("TROUPE_CONFIG");
        String schedulePath = System.getenv("TROUPE_SCHEDULE");
        String eventsTarget = System.getenv("TROUPE_EVENTS");
        String runId = System.getenv().getOrDefault("TROUPE_RUN_ID", "run");
        if (configPath == null || eventsTarget == null) {
            System.err.println("akka iot: TROUPE_CONFIG and TROUPE_EVENTS must be set "
                    + "(TROUPE_SCHEDULE and TROUPE_RUN_ID too, normally)");
            return 2;
        }
        JsonNode raw;
        IotConfig cfg;
        try {
            raw = new ObjectMapper().readTree(Path.of(configPath).toFile());
            cfg = IotConfig.parse(raw);
        } catch (Exception e) {
            System.err.println("akka iot: bad config " + configPath + ": " + e.getMessage());
            return 2;
        }
        AtomicLong scheduleErrors = new AtomicLong();
        List<Schedule.Action> schedule = List.of();
        if (schedulePath == null || schedulePath.isEmpty()) {
            System.err.println("akka iot: TROUPE_SCHEDULE not set: running without faults");
        } else {
            schedule = Schedule.read(Path.of(schedulePath), scheduleErrors);
        }
        if (args.length == 0) {
            return Orchestrator.run(new Node(cfg, raw, schedule, eventsTarget, runId, scheduleErrors.get()));
        }
        if (args.length != 3 || !(args[0].equals("server") || args[0].equals("devices"))) {
            System.err.println("akka iot: unexpected arguments " + List.of(args)
                    + " (child processes take: server|devices INDEX PORTS; the lab passes none)");
            return 2;
        }
        int idx;
        int[] ports;
        try {
            idx = Integer.parseInt(args[1]);
            ports = Node.parsePorts(args[2], cfg.servers());
            int max = args[0].equals("server") ? cfg.servers() : cfg.deviceProcesses();
            if (idx < 0 || idx >= max) {
                throw new IllegalArgumentException(args[0] + " " + idx + " does not exist for this config (0.."
                        + (max - 1) + ")");
            }
        } catch (IllegalArgumentException e) {
            System.err.println("akka iot: bad child arguments " + List.of(args) + ": " + e.getMessage());
            return 2;
        }
        // Child processes count the schedule's malformed lines too: the orchestrator reports them.
        Node node = new Node(cfg, raw, schedule, eventsTarget, runId, 0);
        return args[0].equals("server") ? Processes.server(node, idx, ports) : Processes.devices(node, idx, ports);
    }
}
