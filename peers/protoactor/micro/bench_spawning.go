// Spawn-heavy benches of the Proto.Actor peer: fjcreate, fib, skynet and memory.
//
// Creating actors is the measured work here, so the clock starts before the first spawn. In
// fjcreate, fib and skynet actors are spawned as children of the actor that needs them
// (ctx.Spawn), the Proto.Actor way of building a tree, and each one stops itself once it has
// replied. memory spawns its idle actors from the main goroutine, as the CAF peer does.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ---- fjcreate ---------------------------------------------------------------------------

// ack carries the child's computed value back, so the computation cannot be optimised away.
type ack struct{ value float64 }

func fjChildReceive(ctx actor.Context) {
	if _, ok := ctx.Message().(*work); ok {
		ctx.Respond(&ack{compute(1)})
		ctx.Stop(ctx.Self())
	}
}

// fjCreator spawns n children, sends each one work message and answers its start request when
// all n have acknowledged.
type fjCreator struct {
	n, acks int
	replyTo *actor.PID
}

func (a *fjCreator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *start:
		a.n, a.replyTo = m.n, ctx.Sender()
		props := actor.PropsFromFunc(fjChildReceive)
		for i := 0; i < m.n; i++ {
			ctx.Request(ctx.Spawn(props), workMsg)
		}
	case *ack:
		a.acks++
		if a.acks == a.n {
			ctx.Send(a.replyTo, &finished{value: int64(a.acks)})
		}
	}
}

func runFjCreate(sys *actor.ActorSystem, p params) (outcome, error) {
	n := p["n"]
	t0 := time.Now()
	creator := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &fjCreator{} }))
	res, err := await[*finished](sys.Root.RequestFuture(creator, &start{n}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(n) {
		return outcome{}, fmt.Errorf("%d children acknowledged, want %d", res.value, n)
	}
	return outcome{elapsed}, stopAll(sys, creator)
}

// ---- fib and skynet: trees of actors that sum their children's replies --------------------

type (
	fibRequest    struct{ k int }
	skynetRequest struct{ num, size, width int64 }
	sum           struct{ value int64 }
)

// summer is the node of both trees: it remembers who asked, how many replies it still waits
// for, and the running sum; after the last reply it answers and stops.
type summer struct {
	replyTo *actor.PID
	pending int
	total   int64
}

func (a *summer) reply(ctx actor.Context) {
	ctx.Send(a.replyTo, &sum{a.total})
	ctx.Stop(ctx.Self())
}

var fibProps = actor.PropsFromProducer(func() actor.Actor { return &fibActor{} })

type fibActor struct{ summer }

func (a *fibActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *fibRequest:
		a.replyTo = ctx.Sender()
		if m.k <= 1 {
			a.total = int64(m.k)
		}
		for _, k := range [2]int{m.k - 1, m.k - 2} {
			switch {
			case m.k <= 1:
			case k <= 1:
				a.total += int64(k) // fib(0)=0, fib(1)=1: no actor for a base case
			default:
				a.pending++
				ctx.Request(ctx.Spawn(fibProps), &fibRequest{k})
			}
		}
		if a.pending == 0 {
			a.reply(ctx)
		}
	case *sum:
		a.total += m.value
		a.pending--
		if a.pending == 0 {
			a.reply(ctx)
		}
	}
}

func fibIterative(n int) int64 {
	a, b := int64(0), int64(1)
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func runFib(sys *actor.ActorSystem, p params) (outcome, error) {
	n := p["n"]
	t0 := time.Now()
	root := sys.Root.Spawn(fibProps)
	res, err := await[*sum](sys.Root.RequestFuture(root, &fibRequest{n}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if want := fibIterative(n); res.value != want {
		return outcome{}, fmt.Errorf("fib(%d) = %d, want %d", n, res.value, want)
	}
	return outcome{elapsed}, nil
}

var skynetProps = actor.PropsFromProducer(func() actor.Actor { return &skynetActor{} })

type skynetActor struct{ summer }

func (a *skynetActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *skynetRequest:
		a.replyTo = ctx.Sender()
		if m.size == 1 {
			a.total = m.num // a leaf returns its own number
			a.reply(ctx)
			return
		}
		child := m.size / m.width
		for i := int64(0); i < m.width; i++ {
			a.pending++
			ctx.Request(ctx.Spawn(skynetProps), &skynetRequest{m.num + i*child, child, m.width})
		}
	case *sum:
		a.total += m.value
		a.pending--
		if a.pending == 0 {
			a.reply(ctx)
		}
	}
}

func runSkynet(sys *actor.ActorSystem, p params) (outcome, error) {
	width := int64(p["width"])
	if width < 2 {
		return outcome{}, fmt.Errorf("skynet needs width >= 2")
	}
	leaves := int64(1)
	for i := 0; i < p["depth"]; i++ {
		leaves *= width
	}
	t0 := time.Now()
	root := sys.Root.Spawn(skynetProps)
	res, err := await[*sum](sys.Root.RequestFuture(root, &skynetRequest{0, leaves, width}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if want := leaves * (leaves - 1) / 2; res.value != want {
		return outcome{}, fmt.Errorf("skynet sum %d, want %d", res.value, want)
	}
	return outcome{elapsed}, nil
}

// ---- memory -------------------------------------------------------------------------------

// idleProps makes an idle actor: it reports to started once it has started, then only waits,
// and reports to stopped when it stops.
func idleProps(started, stopped *actor.PID) *actor.Props {
	return actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case *actor.Started:
			ctx.Send(started, &workerDone{1})
		case *actor.Stopped:
			ctx.Send(stopped, &workerDone{1})
		}
	})
}

// rssBytes reads the resident set size of this process from /proc/self/status after a full
// collection that also returns freed memory to the OS.
func rssBytes() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil || len(fields) < 2 || fields[1] != "kB" {
				return 0, fmt.Errorf("unreadable VmRSS line %q", sc.Text())
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

// runMemory spawns n idle actors from the main goroutine with RootContext.Spawn, keeping their
// PIDs, once (no warm-up: a warm-up would leave the registry's maps grown and hide part of the
// cost); reports spawn time (until every actor has started) and resident bytes per actor; then
// stops them all and waits until each has stopped.
func runMemory(sys *actor.ActorSystem, p params) error {
	n := p["n"]
	newCollector := func() *actor.PID {
		return sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &collectorActor{} }))
	}
	started, stopped := newCollector(), newCollector()
	props := idleProps(started, stopped)
	before, err := rssBytes()
	if err != nil {
		return err
	}
	t0 := time.Now()
	allStarted := sys.Root.RequestFuture(started, &awaitWorker{n}, waitLimit)
	pids := make([]*actor.PID, n)
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	res, err := await[*finished](allStarted)
	spawn := time.Since(t0)
	if err != nil {
		return err
	}
	if res.value != int64(n) {
		return fmt.Errorf("%d actors started, want %d", res.value, n)
	}
	after, err := rssBytes()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "memory: rss before %d B, after %d B, spawn %.3f ms\n", before, after, ms(spawn))
	p["warmup"] = 0
	emit("memory", "bytes_per_actor", float64(after-before)/float64(n), "B", p)
	emit("memory", "spawn_ms", ms(spawn), "ms", p)
	emit("memory", "time_ms", ms(spawn), "ms", p)

	allStopped := sys.Root.RequestFuture(stopped, &awaitWorker{n}, waitLimit)
	for _, pid := range pids {
		sys.Root.Stop(pid)
	}
	if res, err = await[*finished](allStopped); err != nil {
		return fmt.Errorf("stopping the idle actors: %w", err)
	}
	if res.value != int64(n) {
		return fmt.Errorf("%d actors stopped, want %d", res.value, n)
	}
	return nil
}
