// Owns the `memory` micro-benchmark: spawn n idle actors (each waits for a message) under one
// parent, and measure the process's resident memory (VmRSS, /proc/self/status) and the JVM's
// used heap before and after, each after a full GC. Reports bytes_per_actor (RSS delta / n,
// the contract's metric), heap_bytes_per_actor (used-heap delta / n) and spawn_ms (from the
// spawn request until every actor has run its setup). Then stops them all.
// No full-size warm-up (it would leave the heap grown and hide the cost being measured): a
// warm-up of n/100 actors only warms the spawn path. reps is always 1.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.Behavior;
import akka.actor.typed.PostStop;
import akka.actor.typed.Props;
import akka.actor.typed.SpawnProtocol;
import akka.actor.typed.javadsl.AskPattern;
import akka.actor.typed.javadsl.Behaviors;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

final class Memory {
    private Memory() {}

    /** What an idle actor waits for (never sent: they are stopped with their parent). */
    enum Poke { INSTANCE }

    enum StopAll { INSTANCE }

    record Measured(double rssBytesPerActor, double heapBytesPerActor, double spawnMs) {}

    private static Behavior<Poke> idle(AtomicInteger started, int n, CompletableFuture<Long> allUp) {
        return Behaviors.setup(ctx -> {
            if (started.incrementAndGet() == n) {
                allUp.complete(System.nanoTime());
            }
            return Behaviors.receive(Poke.class).onMessage(Poke.class, p -> Behaviors.stopped()).build();
        });
    }

    private static Behavior<StopAll> parent(int n, AtomicInteger started,
                                            CompletableFuture<Long> allUp,
                                            CompletableFuture<Void> stopped) {
        return Behaviors.setup(ctx -> {
            for (int i = 0; i < n; i++) {
                ctx.spawnAnonymous(idle(started, n, allUp));
            }
            return Behaviors.receive(StopAll.class)
                    .onMessage(StopAll.class, s -> Behaviors.stopped())
                    .onSignal(PostStop.class, s -> {
                        stopped.complete(null);
                        return Behaviors.same();
                    })
                    .build();
        });
    }

    /** One spawn-and-stop of n actors; returns the spawn time in ns. */
    private static long[] spawnAll(ActorSystem<SpawnProtocol.Command> system, int n, String name,
                                   Runnable whileUp, long timeoutS) throws Exception {
        AtomicInteger started = new AtomicInteger();
        CompletableFuture<Long> allUp = new CompletableFuture<>();
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        long t0 = System.nanoTime();
        ActorRef<StopAll> ref = AskPattern.<SpawnProtocol.Command, ActorRef<StopAll>>ask(system,
                        replyTo -> new SpawnProtocol.Spawn<>(parent(n, started, allUp, stopped), name,
                                Props.empty(), replyTo),
                        Duration.ofSeconds(timeoutS), system.scheduler())
                .toCompletableFuture().get(timeoutS, TimeUnit.SECONDS);
        long t1 = allUp.get(timeoutS, TimeUnit.SECONDS);
        whileUp.run();
        ref.tell(StopAll.INSTANCE);
        stopped.get(timeoutS, TimeUnit.SECONDS);
        return new long[] {t1 - t0};
    }

    static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                String[] parts = line.substring(6).trim().split("\\s+");
                return Long.parseLong(parts[0]) * 1024L; // kB
            }
        }
        throw new IOException("no VmRSS line in /proc/self/status");
    }

    static long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    static void fullGc() {
        System.gc();
        System.gc();
    }

    static Measured run(ActorSystem<SpawnProtocol.Command> system, int n, long timeoutS)
            throws Exception {
        spawnAll(system, Math.max(1, n / 100), "memory-warmup", () -> { }, timeoutS);
        fullGc();
        long rss0 = rssBytes();
        long heap0 = heapUsed();
        long[] after = new long[2];
        long[] spawnNs = spawnAll(system, n, "memory", () -> {
            fullGc();
            try {
                after[0] = rssBytes();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            after[1] = heapUsed();
        }, timeoutS);
        System.err.printf("memory: n=%d rss %d -> %d B, heap used %d -> %d B%n",
                n, rss0, after[0], heap0, after[1]);
        return new Measured((after[0] - rss0) / (double) n, (after[1] - heap0) / (double) n,
                spawnNs[0] / 1e6);
    }
}
