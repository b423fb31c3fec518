// Owns the measured JVM's end of the link to the injector's own JVM (injector = "node", the
// default; docs/scp.md, "Where the injector runs"), laid out as Troupe's (crates/troupe-lab-
// workloads/src/scp/link.rs): the measured actor system is reachable over Akka remoting (provider
// remote, Artery TCP on 127.0.0.1, a free port), it runs an actor `scp-targets` that answers the
// injector, and it starts the injector JVM (`Main injector`, InjectorNode) before its own actor
// system, so the two JVMs start side by side, then writes that actor's address as one line to
// the injector's stdin.
//
// Rules:
//  1. `Ready` from the injector is answered at once with `Hello` (the injector repeats Ready until
//     answered: one sent before this JVM's remoting is up may be lost); the measured JVM emits
//     ready {what: "injector", count: 1, pid} once. Its warm-up starts only once the injector
//     said Ready (or its JVM ended), however slowly a loaded machine starts a JVM.
//  2. `AwaitWindow` is answered with the window start (microseconds since the Unix epoch) once
//     the window opens, so both JVMs time actions from the same instant.
//  3. The injector addresses the servers by their paths in this actor system
//     (`/user/sup-<group>/server-<slot>`: a supervised server restarts in place, so the path
//     keeps naming it) and keeps its own table of live slots, as the in-process injector does:
//     a slot is dead once a kill that no restart follows (recovery = false) was sent to it. So a
//     kill is one message across the wire and no round trip: on a loaded 2-core machine a
//     request/answer through Akka remoting took milliseconds (median 7.6 ms at a load average
//     of 16), too slow for a schedule of hundreds of kills a second.
//  4. `Done` carries the injector's counts; the measured JVM then reaps the process. An injector
//     that never says `Done` (it crashed or hung) is an error, is killed, and every action
//     counts as skipped. The injector JVM holds the read end of a pipe from this JVM on stdin
//     and halts when it closes, so it never outlives the run.
package troupe.peers.akka.scp;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorRefResolver;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.Behavior;
import akka.actor.typed.Props;
import akka.actor.typed.javadsl.Behaviors;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import troupe.peers.akka.common.EventWriter;

final class InjectorLink {
    sealed interface Command permits Ready, AwaitWindow, Done, OpenWindow {}

    /** Rule 1: the injector is connected (its OS pid). */
    record Ready(long pid, ActorRef<Hello> replyTo) implements Command, Wire {}

    /** Rule 1's answer. */
    enum Hello implements Wire { INSTANCE }

    /** Rule 2. */
    record AwaitWindow(ActorRef<Window> replyTo) implements Command, Wire {}

    /** Rule 2's answer: the window start, µs since the Unix epoch. */
    record Window(long startUs) implements Wire {}

    /** Rule 4: the injector's counts. */
    record Done(long injected, long skipped, long afterWindow, long errors, ActorRef<DoneAck> replyTo)
            implements Command, Wire {}

    /** Rule 4: the counts were recorded. */
    enum DoneAck implements Wire { INSTANCE }

    /** The window opened (from this JVM's main thread; never crosses JVMs). */
    record OpenWindow(long startUs) implements Command {}

    /**
     * This JVM's actor system settings in node mode: Akka's defaults plus remoting (provider
     * remote, Artery TCP on 127.0.0.1, a free port), the SCP messages marked {@link Wire}
     * serialized with Akka's jackson-cbor, and remoting's lifecycle lines and its warning about
     * using remoting without Akka Cluster off (nothing here watches or deploys across JVMs).
     */
    static Config remoteConfig() {
        return ConfigFactory.parseString(String.join("\n",
                        "akka.actor.provider = remote",
                        "akka.remote.artery.canonical.hostname = \"127.0.0.1\"",
                        "akka.remote.artery.canonical.port = 0",
                        "akka.remote.log-remote-lifecycle-events = off",
                        "akka.remote.warn-about-direct-use = off",
                        "akka.actor.serialization-bindings { \"troupe.peers.akka.scp.Wire\" = jackson-cbor }"))
                .withFallback(ConfigFactory.load());
    }

    private final Process process;
    private final CompletableFuture<Void> ready;
    private final CompletableFuture<Done> done = new CompletableFuture<>();
    private volatile ActorRef<Command> actor;

    private InjectorLink(Process process, CompletableFuture<Void> ready) {
        this.process = process;
        this.ready = ready;
    }

    /**
     * Starts the injector JVM; {@code ready} completes when it says Ready or when it ends (an
     * injector that died never will).
     */
    static InjectorLink launch(CompletableFuture<Void> ready) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "injector"));
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectInput(ProcessBuilder.Redirect.PIPE)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        p.onExit().thenRun(() -> ready.complete(null));
        return new InjectorLink(p, ready);
    }

    /** Starts the targets actor in {@code system} and hands its address to the injector JVM. */
    void attach(ActorSystem<?> system, EventWriter events) throws IOException {
        ActorRef<Command> a = system.systemActorOf(behavior(events, done, ready), "scp-targets", Props.empty());
        actor = a;
        var in = process.getOutputStream();
        in.write((ActorRefResolver.get(system).toSerializationFormat(a) + "\n")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        in.flush();
    }

    private static Behavior<Command> behavior(EventWriter events, CompletableFuture<Done> done,
                                              CompletableFuture<Void> ready) {
        return Behaviors.setup(ctx -> {
            long[] startUs = {-1};
            boolean[] said = {false};
            List<ActorRef<Window>> waiting = new ArrayList<>();
            return Behaviors.receive(Command.class)
                    .onMessage(Ready.class, r -> {
                        if (!said[0]) {
                            said[0] = true;
                            events.emit("ready", ",\"what\":\"injector\",\"count\":1,\"pid\":" + r.pid());
                        }
                        ready.complete(null);
                        r.replyTo().tell(Hello.INSTANCE);
                        return Behaviors.same();
                    })
                    .onMessage(AwaitWindow.class, w -> {
                        if (startUs[0] >= 0) {
                            w.replyTo().tell(new Window(startUs[0]));
                        } else {
                            waiting.add(w.replyTo());
                        }
                        return Behaviors.same();
                    })
                    .onMessage(OpenWindow.class, o -> {
                        startUs[0] = o.startUs();
                        waiting.forEach(w -> w.tell(new Window(o.startUs())));
                        waiting.clear();
                        return Behaviors.same();
                    })
                    .onMessage(Done.class, d -> {
                        done.complete(d);
                        d.replyTo().tell(DoneAck.INSTANCE);
                        return Behaviors.same();
                    })
                    .build();
        });
    }

    /** Rule 2: the window opened at {@code startNanos} on this JVM's System.nanoTime clock. */
    void openWindow(long startNanos) {
        long startUs = EventWriter.nowMicros() - (System.nanoTime() - startNanos) / 1000;
        ActorRef<Command> a = actor;
        if (a != null) {
            a.tell(new OpenWindow(startUs));
        }
    }

    /**
     * Rule 4: waits up to {@code graceMs} for `Done` (or the process's end), then reaps the
     * process, killing it when it is still running 5 s later or never reported; returns the
     * report, or null when the injector did not finish cleanly.
     */
    Done finish(long graceMs, boolean interrupted) throws InterruptedException {
        Done d = null;
        if (!interrupted) {
            try {
                d = CompletableFuture.anyOf(done, process.onExit())
                        .thenApply(x -> done.getNow(null))
                        .get(graceMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
                d = null;
            }
        }
        boolean exited = d != null && process.waitFor(5, TimeUnit.SECONDS);
        if (!exited) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        return d != null && exited && process.exitValue() == 0 ? d : null;
    }
}
