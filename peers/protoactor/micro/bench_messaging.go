// Messaging benches of the Proto.Actor peer: pingpong, count, fjthrput and threadring.
//
// These measure message passing between a fixed set of actors, so each runner spawns its
// actors first, starts the clock, kicks the work off with a request whose reply resolves a
// future, and stops the clock when that future resolves. The actors are stopped afterwards,
// outside the measured region.
package main

import (
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Messages shared by several benches. Payload-free messages are singletons, the usual Go way
// of sending a signal without allocating.
type (
	start    struct{ n int }
	finished struct {
		value int64
		total float64 // a sum reported alongside, where the bench has one
	}
	ping struct{}
	pong struct{}
)

var (
	pingMsg = &ping{}
	pongMsg = &pong{}
)

// ---- pingpong ---------------------------------------------------------------------------

type pingActor struct {
	pong    *actor.PID
	n, got  int
	replyTo *actor.PID
}

func (a *pingActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *start:
		a.replyTo, a.n, a.got = ctx.Sender(), m.n, 0
		ctx.Request(a.pong, pingMsg)
	case *pong:
		a.got++
		if a.got == a.n {
			ctx.Send(a.replyTo, &finished{value: int64(a.got)})
		} else {
			ctx.Request(a.pong, pingMsg)
		}
	}
}

func pongReceive(ctx actor.Context) {
	if _, ok := ctx.Message().(*ping); ok {
		ctx.Respond(pongMsg)
	}
}

func runPingPong(sys *actor.ActorSystem, p params) (outcome, error) {
	n := p["n"]
	pongPID := sys.Root.Spawn(actor.PropsFromFunc(pongReceive))
	pingPID := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &pingActor{pong: pongPID}
	}))
	t0 := time.Now()
	res, err := await[*finished](sys.Root.RequestFuture(pingPID, &start{n}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(n) {
		return outcome{}, fmt.Errorf("ping got %d pongs, want %d", res.value, n)
	}
	return outcome{elapsed}, stopAll(sys, pingPID, pongPID)
}

// ---- count ------------------------------------------------------------------------------

type (
	increment struct{}
	getTotal  struct{}
)

var (
	incrementMsg = &increment{}
	getTotalMsg  = &getTotal{}
)

type counterActor struct{ total int64 }

func (a *counterActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *increment:
		a.total++
	case *getTotal:
		ctx.Respond(&finished{value: a.total})
	}
}

type producerActor struct {
	counter *actor.PID
	replyTo *actor.PID
}

func (a *producerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *start:
		a.replyTo = ctx.Sender()
		for i := 0; i < m.n; i++ {
			ctx.Send(a.counter, incrementMsg)
		}
		ctx.Request(a.counter, getTotalMsg)
	case *finished:
		ctx.Send(a.replyTo, m)
	}
}

func runCount(sys *actor.ActorSystem, p params) (outcome, error) {
	n := p["n"]
	counter := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &counterActor{} }))
	producer := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &producerActor{counter: counter}
	}))
	t0 := time.Now()
	res, err := await[*finished](sys.Root.RequestFuture(producer, &start{n}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(n) {
		return outcome{}, fmt.Errorf("counter total %d, want %d", res.value, n)
	}
	return outcome{elapsed}, stopAll(sys, producer, counter)
}

// ---- fjthrput ---------------------------------------------------------------------------

// compute is the tiny per-message computation of fjthrput and fjcreate (as Savina's, a sine).
func compute(i int) float64 {
	s := math.Sin(float64(i) * 37.2)
	return s * s
}

type (
	work        struct{}
	workerDone  struct{ acc float64 }
	awaitWorker struct{ workers int }
)

var workMsg = &work{}

type throughputWorker struct {
	n, got    int
	acc       float64
	collector *actor.PID
}

func (a *throughputWorker) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*work); ok {
		a.acc += compute(a.got)
		a.got++
		if a.got == a.n {
			ctx.Send(a.collector, &workerDone{a.acc})
		}
	}
}

// collectorActor answers an awaitWorker request once that many workers have reported.
type collectorActor struct {
	want, got int
	sum       float64
	replyTo   *actor.PID
}

func (a *collectorActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *awaitWorker:
		a.want, a.replyTo = m.workers, ctx.Sender()
	case *workerDone:
		a.got++
		a.sum += m.acc
		if a.got == a.want {
			ctx.Send(a.replyTo, &finished{int64(a.got), a.sum})
		}
	}
}

func runFjThrput(sys *actor.ActorSystem, p params) (outcome, error) {
	n, workers := p["n"], p["actors"]
	collector := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &collectorActor{} }))
	pids := make([]*actor.PID, workers)
	props := actor.PropsFromProducer(func() actor.Actor {
		return &throughputWorker{n: n, collector: collector}
	})
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	t0 := time.Now()
	f := sys.Root.RequestFuture(collector, &awaitWorker{workers}, waitLimit)
	for i := 0; i < n; i++ {
		for _, w := range pids {
			sys.Root.Send(w, workMsg)
		}
	}
	res, err := await[*finished](f)
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(workers) {
		return outcome{}, fmt.Errorf("%d workers finished, want %d", res.value, workers)
	}
	return outcome{elapsed}, stopAll(sys, append(pids, collector)...)
}

// ---- threadring -------------------------------------------------------------------------

type (
	setNext struct{ next *actor.PID }
	token   struct {
		left, hops int
		replyTo    *actor.PID
	}
)

type ringMember struct{ next *actor.PID }

func (a *ringMember) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *setNext:
		a.next = m.next
	case *start:
		// The first hop: this member passes a fresh token to its neighbour.
		ctx.Send(a.next, &token{left: m.n - 1, hops: 1, replyTo: ctx.Sender()})
	case *token:
		if m.left == 0 {
			ctx.Send(m.replyTo, &finished{value: int64(m.hops)})
		} else {
			ctx.Send(a.next, &token{left: m.left - 1, hops: m.hops + 1, replyTo: m.replyTo})
		}
	}
}

func runThreadRing(sys *actor.ActorSystem, p params) (outcome, error) {
	members, n := p["actors"], p["n"]
	if members < 2 {
		return outcome{}, fmt.Errorf("threadring needs actors >= 2")
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &ringMember{} })
	pids := make([]*actor.PID, members)
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	for i, pid := range pids {
		sys.Root.Send(pid, &setNext{pids[(i+1)%members]})
	}
	t0 := time.Now()
	res, err := await[*finished](sys.Root.RequestFuture(pids[0], &start{n}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(n) {
		return outcome{}, fmt.Errorf("token made %d hops, want %d", res.value, n)
	}
	return outcome{elapsed}, stopAll(sys, pids...)
}
