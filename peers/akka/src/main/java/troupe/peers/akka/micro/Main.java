// Owns the Akka micro-benchmark program (peer contract: `peers/akka/micro/run <bench>
// [key=value ...]`): parses the parameters, runs one unmeasured warm-up and `reps` measured
// iterations of the bench in one actor system (default settings), and prints the median as
// one JSON object per metric on stdout. Logs and per-iteration times go to stderr. A failed
// correctness check exits 1; bad arguments exit 2.
package troupe.peers.akka.micro;

import akka.actor.typed.ActorRef;
import akka.actor.typed.ActorSystem;
import akka.actor.typed.Behavior;
import akka.actor.typed.Props;
import akka.actor.typed.SpawnProtocol;
import akka.actor.typed.Terminated;
import akka.actor.typed.javadsl.Behaviors;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import troupe.peers.akka.common.Json;

public final class Main {
    /** Upper bound on one iteration; a bench that has not finished by then is a failure. */
    static final long ITERATION_TIMEOUT_S = 600;

    static final List<Bench> TIMED = List.of(new PingPong(), new Count(), new FjThrput(),
            new FjCreate(), new ThreadRing(), new Chameneos(), new Big(), new Fib(), new Skynet());

    private Main() {}

    public static void main(String[] args) {
        int code;
        try {
            code = run(args);
        } catch (IllegalArgumentException e) {
            System.err.println("micro: " + e.getMessage());
            code = 2;
        } catch (Exception e) {
            System.err.println("micro: " + e);
            code = 1;
        }
        System.exit(code);
    }

    private static String usage() {
        StringBuilder b = new StringBuilder("usage: run <bench> [key=value ...]; benches:");
        for (Bench bench : TIMED) {
            b.append(' ').append(bench.name()).append(bench.defaults());
        }
        return b.append(" memory{n=1000000}; every bench takes reps=N (default 3)").toString();
    }

    private static int run(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException(usage());
        }
        String name = args[0];
        Bench bench = TIMED.stream().filter(b -> b.name().equals(name)).findFirst().orElse(null);
        Map<String, Long> params = new LinkedHashMap<>();
        if (bench != null) {
            params.putAll(bench.defaults());
        } else if (name.equals("memory")) {
            params.put("n", 1_000_000L);
        } else {
            throw new IllegalArgumentException("unknown bench " + name + "; " + usage());
        }
        long reps = 3;
        boolean repsGiven = false;
        for (String arg : Arrays.asList(args).subList(1, args.length)) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + arg);
            }
            String key = arg.substring(0, eq);
            long value;
            try {
                value = Long.parseLong(arg.substring(eq + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(key + "=" + arg.substring(eq + 1)
                        + ": expected an integer");
            }
            if (key.equals("reps")) {
                reps = value;
                repsGiven = true;
            } else if (params.containsKey(key)) {
                params.put(key, value);
            } else {
                throw new IllegalArgumentException(name + " has no parameter " + key
                        + "; it takes " + params.keySet() + " and reps");
            }
        }
        for (Map.Entry<String, Long> e : params.entrySet()) {
            if (e.getValue() < (e.getKey().equals("seed") || e.getKey().equals("depth") ? 0 : 1)) {
                throw new IllegalArgumentException(e.getKey() + "=" + e.getValue() + " out of range");
            }
        }
        if (reps < 1 || reps > 1000) {
            throw new IllegalArgumentException("reps=" + reps + ": expected 1..1000");
        }

        ActorSystem<SpawnProtocol.Command> system = ActorSystem.create(SpawnProtocol.create(), "micro");
        try {
            if (bench == null) {
                if (repsGiven && reps != 1) {
                    System.err.println("micro: memory always runs once (reps=1)");
                }
                params.put("reps", 1L);
                Memory.Measured m = Memory.run(system, Math.toIntExact(params.get("n")),
                        ITERATION_TIMEOUT_S);
                print(name, "bytes_per_actor", m.rssBytesPerActor(), "B", params);
                print(name, "heap_bytes_per_actor", m.heapBytesPerActor(), "B", params);
                print(name, "spawn_ms", m.spawnMs(), "ms", params);
            } else {
                runTimed(system, bench, params, (int) reps);
            }
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        return 0;
    }

    private static void runTimed(ActorSystem<SpawnProtocol.Command> system, Bench bench,
                                 Map<String, Long> params, int reps) throws Exception {
        double[] times = new double[reps];
        for (int i = -1; i < reps; i++) {
            Completion done = new Completion();
            Behavior<?> root = bench.root(params, done);
            long t0 = System.nanoTime();
            spawn(system, iteration(root, done), bench.name() + "-" + (i + 1));
            try {
                done.result.get(ITERATION_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw new IllegalStateException("check failed: " + e.getCause().getMessage());
            } catch (TimeoutException e) {
                throw new IllegalStateException(bench.name() + ": iteration did not finish in "
                        + ITERATION_TIMEOUT_S + " s");
            }
            double ms = (done.endNanos() - t0) / 1e6;
            done.stopped.get(ITERATION_TIMEOUT_S, TimeUnit.SECONDS);
            System.err.printf("%s %s: %.3f ms%n", bench.name(),
                    i < 0 ? "warm-up" : "rep " + (i + 1) + "/" + reps, ms);
            if (i >= 0) {
                times[i] = ms;
            }
        }
        Arrays.sort(times);
        double median = reps % 2 == 1 ? times[reps / 2]
                : (times[reps / 2 - 1] + times[reps / 2]) / 2;
        Map<String, Long> shown = new LinkedHashMap<>(params);
        shown.put("reps", (long) reps);
        print(bench.name(), "time_ms", median, "ms", shown);
        double msgs = bench.messages(params);
        if (msgs > 0) {
            print(bench.name(), "msgs_per_s", msgs / (median / 1000.0), "msgs/s", shown);
        }
    }

    /** Spawns {@code root} under a watcher that tells {@code done} when it has terminated. */
    private static <T> Behavior<Void> iteration(Behavior<T> root, Completion done) {
        return Behaviors.setup(ctx -> {
            ActorRef<T> ref = ctx.spawn(root, "root");
            ctx.watch(ref);
            return Behaviors.receive(Void.class)
                    .onSignal(Terminated.class, t -> {
                        done.rootStopped();
                        return Behaviors.stopped();
                    })
                    .build();
        });
    }

    private static <T> void spawn(ActorSystem<SpawnProtocol.Command> system, Behavior<T> b,
                                  String name) {
        system.tell(new SpawnProtocol.Spawn<>(b, name, Props.empty(), system.ignoreRef()));
    }

    private static void print(String bench, String metric, double value, String unit,
                              Map<String, Long> params) {
        StringBuilder b = new StringBuilder("{\"bench\":");
        Json.quote(b, bench).append(",\"runtime\":\"akka\",\"metric\":");
        Json.quote(b, metric).append(",\"value\":").append(Json.number(value)).append(",\"unit\":");
        Json.quote(b, unit).append(",\"params\":{");
        boolean first = true;
        for (Map.Entry<String, Long> e : params.entrySet()) {
            if (!first) {
                b.append(',');
            }
            first = false;
            Json.quote(b, e.getKey()).append(':').append(e.getValue());
        }
        System.out.println(b.append("}}"));
    }
}
