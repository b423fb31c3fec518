// Command micro is the Proto.Actor (Go) peer of the Troupe lab's micro-benchmarks.
//
// It owns the command line and the measuring harness shared by every bench: parsing
// `<bench> [key=value ...]`, the unmeasured warm-up, the measured repetitions, the median, and
// the JSON lines the lab reads from stdout (logs and errors go to stderr only). The benches
// themselves live in bench_*.go; each one builds its actors with the ordinary Proto.Actor API
// (actor.NewActorSystem, Props, Send/Request/Respond, futures) and returns the wall time of its
// measured work.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// runtimeName is the "runtime" field of every result line.
const runtimeName = "protoactor"

// waitLimit bounds every future the harness waits on, so a lost message ends the run with an
// error instead of hanging it.
const waitLimit = 10 * time.Minute

// params holds the integer parameters of one bench run, by name.
type params map[string]int

// outcome is what one measured iteration of a bench returns.
type outcome struct {
	elapsed time.Duration
}

// benchDef describes one bench: its parameters with their defaults, how to run one iteration,
// and (when the bench has a natural rate) how many messages one iteration moves.
type benchDef struct {
	defaults params
	run      func(sys *actor.ActorSystem, p params) (outcome, error)
	messages func(p params) float64
}

var benches = map[string]benchDef{
	"pingpong": {params{"n": 40000}, runPingPong,
		func(p params) float64 { return 2 * float64(p["n"]) }},
	"count": {params{"n": 1000000}, runCount,
		func(p params) float64 { return float64(p["n"]) }},
	"fjthrput": {params{"n": 10000, "actors": 60}, runFjThrput,
		func(p params) float64 { return float64(p["n"]) * float64(p["actors"]) }},
	"fjcreate": {params{"n": 40000}, runFjCreate, nil},
	"threadring": {params{"actors": 100, "n": 100000}, runThreadRing,
		func(p params) float64 { return float64(p["n"]) }},
	"chameneos": {params{"chameneos": 100, "n": 200000}, runChameneos,
		func(p params) float64 { return float64(p["n"]) }},
	"big": {params{"n": 20000, "actors": 120, "seed": 42}, runBig,
		func(p params) float64 { return 2 * float64(p["n"]) * float64(p["actors"]) }},
	"fib":    {params{"n": 25}, runFib, nil},
	"skynet": {params{"depth": 6, "width": 10}, runSkynet, nil},
	// memory is handled by runMemory (one iteration, no warm-up); listed for its parameters.
	"memory": {params{"n": 1000000}, nil, nil},
}

// line is one JSON result line on stdout.
type line struct {
	Bench   string  `json:"bench"`
	Runtime string  `json:"runtime"`
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Params  params  `json:"params"`
}

func emit(bench, metric string, value float64, unit string, p params) {
	b, err := json.Marshal(line{bench, runtimeName, metric, round3(value), unit, p})
	if err != nil {
		fail("encoding result: %v", err)
	}
	fmt.Println(string(b))
}

func round3(v float64) float64 {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	r, _ := strconv.ParseFloat(s, 64)
	return r
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "protoactor micro: "+format+"\n", args...)
	os.Exit(1)
}

func usage() {
	names := make([]string, 0, len(benches))
	for n := range benches {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: micro <bench> [key=value ...]\nbenches: %s\n",
		strings.Join(names, " "))
	os.Exit(2)
}

// parseParams applies key=value arguments over the bench's defaults; unknown keys and
// non-positive or non-integer values are rejected.
func parseParams(def benchDef, args []string, allowReps bool) params {
	p := params{}
	for k, v := range def.defaults {
		p[k] = v
	}
	if allowReps {
		p["reps"] = 3
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "argument %q is not key=value\n", a)
			os.Exit(2)
		}
		if _, known := p[k]; !known {
			fmt.Fprintf(os.Stderr, "unknown parameter %q for this bench\n", k)
			os.Exit(2)
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 || (x == 0 && k != "seed") {
			fmt.Fprintf(os.Stderr, "parameter %s=%q must be a positive integer\n", k, v)
			os.Exit(2)
		}
		p[k] = x
	}
	return p
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	name := os.Args[1]
	def, ok := benches[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown bench %q\n", name)
		usage()
	}
	sys := actor.NewActorSystem()

	if name == "memory" {
		// Accepts reps= like every bench, but always measures once: a second spawn of n actors
		// in the same process would find the runtime's maps already grown.
		p := parseParams(def, os.Args[2:], true)
		if p["reps"] != 3 && p["reps"] != 1 {
			fmt.Fprintf(os.Stderr, "memory: reps=%d ignored, this bench measures once\n", p["reps"])
		}
		p["reps"] = 1
		if err := runMemory(sys, p); err != nil {
			fail("memory: %v", err)
		}
		return
	}

	p := parseParams(def, os.Args[2:], true)
	reps := p["reps"]
	times := make([]time.Duration, 0, reps)
	for i := 0; i <= reps; i++ {
		// Collect the previous iteration's garbage outside the measured region.
		runtime.GC()
		out, err := def.run(sys, p)
		if err != nil {
			fail("%s: %v", name, err)
		}
		if i == 0 {
			fmt.Fprintf(os.Stderr, "%s warm-up: %.3f ms\n", name, ms(out.elapsed))
			continue
		}
		fmt.Fprintf(os.Stderr, "%s rep %d: %.3f ms\n", name, i, ms(out.elapsed))
		times = append(times, out.elapsed)
	}
	med := median(times)
	emit(name, "time_ms", ms(med), "ms", p)
	if def.messages != nil {
		emit(name, "msgs_per_s", def.messages(p)/med.Seconds(), "msg/s", p)
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// await waits for a future's result and checks its type.
func await[T any](f *actor.Future) (T, error) {
	var zero T
	res, err := f.Result()
	if err != nil {
		return zero, fmt.Errorf("waiting for the bench to finish: %w", err)
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("unexpected reply %T", res)
	}
	return v, nil
}

// stopAll stops the given actors and waits until each has stopped.
func stopAll(sys *actor.ActorSystem, pids ...*actor.PID) error {
	futures := make([]*actor.Future, len(pids))
	for i, pid := range pids {
		futures[i] = sys.Root.StopFuture(pid)
	}
	for _, f := range futures {
		if err := f.Wait(); err != nil {
			return fmt.Errorf("stopping actors: %w", err)
		}
	}
	return nil
}
