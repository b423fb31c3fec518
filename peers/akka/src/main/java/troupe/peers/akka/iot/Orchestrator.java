// Owns the process the lab starts (node "orchestrator"): it picks the servers' loopback ports,
// starts the server JVMs then the device-process JVMs as its children, opens the window warmup_s
// after the last `ready`, carries out the schedule's server kills (SIGKILL, restart restart_s
// later on the same port), runs the collector (Collector.java) and ends every child.
//
// Rules:
//  1. Children are started in order (servers, then device processes), each ready when it prints
//     READY (Node.java's control pipe); set-up is bounded (Processes.SETUP_TIMEOUT_S per phase).
//  2. A child that exits without being killed by the schedule fails the run: it is named in
//     run_finished's failed_nodes, the others are ended, the exit status is 1.
//  3. End: STOP to the device processes, then to the servers, each phase bounded; whatever is
//     left is killed and reaped. On SIGTERM a shutdown hook kills every child, so none outlives
//     the orchestrator (children also halt when their stdin closes), and writes run_finished
//     with "interrupted": true.
package troupe.peers.akka.iot;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import troupe.peers.akka.common.Json;

final class Orchestrator {
    /** One child JVM (a server restarted by the schedule is a new Child of the same name). */
    static final class Child {
        final String name;
        final Process process;
        final Writer stdin;
        volatile boolean ready;
        volatile boolean killedOnPurpose;

        Child(String name, Process process) {
            this.name = name;
            this.process = process;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        }

        synchronized void send(String line) {
            try {
                stdin.write(line + "\n");
                stdin.flush();
            } catch (IOException e) {
                // the child is gone; its exit is reported through the exit queue
            }
        }
    }

    record Exit(Child child, int status) {}

    private final IotConfig cfg;
    final int[] ports;
    final ConcurrentHashMap<String, Child> live = new ConcurrentHashMap<>();
    final LinkedBlockingQueue<Exit> exits = new LinkedBlockingQueue<>();
    final List<String> failed = new ArrayList<>();
    private final String java = ProcessHandle.current().info().command().orElse("java");
    private final List<String> jvmArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
    private final String classPath = System.getProperty("java.class.path");

    private Orchestrator(Node node) throws IOException {
        this.cfg = node.cfg;
        this.ports = new int[cfg.servers()];
        for (int s = 0; s < ports.length; s++) {
            try (ServerSocket probe = new ServerSocket(0)) {
                ports[s] = probe.getLocalPort();
            }
        }
    }

    static String describe(int status) {
        return status > 128 ? "killed by signal " + (status - 128) : "exit status " + status;
    }

    String portList() {
        StringBuilder b = new StringBuilder();
        for (int p : ports) {
            b.append(b.length() > 0 ? "," : "").append(p);
        }
        return b.toString();
    }

    /** Starts child `role idx` (role = server | devices) for the first time. */
    Child start(String role, int idx) throws IOException {
        return start(role, idx, false);
    }

    /**
     * Starts child `role idx`; a restarted one is told so (environment {@link Node#ENV_RESTARTED}),
     * so that it does not say `ready` again (contract rule 11: once per server, at its first start).
     */
    Child start(String role, int idx, boolean restarted) throws IOException {
        String name = (role.equals("server") ? "server-" : "devices-") + idx;
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", classPath, Main.class.getName(), role, Integer.toString(idx), portList()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (restarted) {
            pb.environment().put(Node.ENV_RESTARTED, "1");
        }
        Process p = pb
                .redirectInput(ProcessBuilder.Redirect.PIPE)
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Child c = new Child(name, p);
        live.put(name, c);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.equals("READY")) {
                        c.ready = true;
                    }
                }
            } catch (IOException e) {
                // the child is gone
            }
        }, name + "-stdout");
        reader.setDaemon(true);
        reader.start();
        p.onExit().thenAccept(ph -> {
            live.remove(name, c);
            exits.add(new Exit(c, ph.exitValue()));
        });
        return c;
    }

    /** Rule 2: takes the exits seen so far; false if one was not on purpose. */
    boolean checkExits() {
        boolean ok = true;
        Exit e;
        while ((e = exits.poll()) != null) {
            if (!e.child().killedOnPurpose) {
                failed.add(e.child().name + " (" + describe(e.status()) + ")");
                ok = false;
            }
        }
        return ok;
    }

    /** Rule 1: waits until every child in cs printed READY. */
    void awaitReady(List<Child> cs, String what) throws Exception {
        long deadline = System.nanoTime() + Processes.SETUP_TIMEOUT_S * 1_000_000_000L;
        while (true) {
            if (!checkExits()) {
                throw new IllegalStateException("a child process ended during set-up: " + failed);
            }
            if (cs.stream().allMatch(c -> c.ready)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException(what + " not ready within " + Processes.SETUP_TIMEOUT_S + " s");
            }
            Thread.sleep(5);
        }
    }

    /** Rule 3: STOP to the children named prefix*, waits for them (bounded). */
    private void stopAll(String prefix, long timeoutMs) throws InterruptedException {
        List<Child> cs = live.values().stream().filter(c -> c.name.startsWith(prefix)).toList();
        for (Child c : cs) {
            c.killedOnPurpose = true; // an orderly end from here on
            c.send("STOP");
        }
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        for (Child c : cs) {
            long left = deadline - System.nanoTime();
            if (!c.process.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                failed.add(c.name + " (did not end within " + timeoutMs / 1000 + " s of STOP)");
                c.process.destroyForcibly();
            } else if (c.process.exitValue() != 0) {
                failed.add(c.name + " (" + describe(c.process.exitValue()) + " after STOP)");
            }
        }
    }

    static int run(Node node) throws Exception {
        node.start("orchestrator");
        for (String bad : Collector.badActions(node)) {
            node.errors.incrementAndGet();
            System.err.println("akka iot: schedule action ignored: " + bad);
        }
        Orchestrator o = new Orchestrator(node);
        node.onSignal(() -> {
            for (Child c : o.live.values()) {
                c.process.destroyForcibly();
            }
        }, ",\"failed_nodes\":[]");
        IotConfig cfg = node.cfg;
        String outcome = null;
        Collector collector = null;
        try {
            collector = new Collector(node, o);
            List<Child> servers = new ArrayList<>();
            for (int s = 0; s < cfg.servers(); s++) {
                servers.add(o.start("server", s));
            }
            o.awaitReady(servers, "servers");
            for (int i = 0; i < 10 && !collector.warm(); i++) {
                Thread.sleep(100); // bounded: the window's first poll only counts what answers
            }
            List<Child> devs = new ArrayList<>();
            for (int p = 0; p < cfg.deviceProcesses(); p++) {
                devs.add(o.start("devices", p));
            }
            o.awaitReady(devs, "device processes");
            long startUs = troupe.peers.akka.common.EventWriter.nowMicros() + cfg.warmupS() * 1_000_000L;
            node.events.emit("ready", ",\"what\":\"window\",\"count\":" + cfg.durationS() + ",\"start_us\":" + startUs);
            for (Child c : o.live.values()) {
                c.send("WINDOW " + startUs);
            }
            collector.open(startUs);
            collector.run();
        } catch (Exception e) {
            outcome = e.getMessage();
        }
        if (collector != null) {
            collector.stopKills();
        }
        o.stopAll("devices-", 30_000);
        o.stopAll("server-", 30_000);
        if (outcome == null && !o.failed.isEmpty()) {
            outcome = "child processes failed: " + o.failed;
        }
        for (Child c : o.live.values()) {
            c.process.destroyForcibly();
            c.process.waitFor(10, TimeUnit.SECONDS);
        }
        if (collector != null) {
            collector.close();
        }
        if (outcome != null) {
            System.err.println("akka iot: " + outcome);
            node.errors.incrementAndGet();
            if (o.failed.isEmpty()) {
                o.failed.add(outcome);
            }
        }
        StringBuilder extra = new StringBuilder(",\"failed_nodes\":[");
        for (int i = 0; i < o.failed.size(); i++) {
            extra.append(i > 0 ? "," : "").append(Json.quote(o.failed.get(i)));
        }
        extra.append(']');
        boolean ok = node.finish(extra.toString());
        return ok && outcome == null ? 0 : 1;
    }
}
