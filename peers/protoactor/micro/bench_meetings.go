// Many-to-many benches of the Proto.Actor peer: chameneos (Savina's mall and creatures) and big
// (every actor pings random peers, seeded).
//
// Both end when every participant has reported to one collecting actor, whose reply resolves
// the future the runner waits on; the runner checks the reported totals.
package main

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ---- chameneos --------------------------------------------------------------------------

// colour is a chameneos colour; complement gives the colour both take after a meeting.
type colour int

const (
	blue colour = iota
	red
	yellow
)

func complement(a, b colour) colour {
	if a == b {
		return a
	}
	return 3 - a - b // the third colour
}

type (
	meet struct {
		from   *actor.PID
		colour colour
	}
	change   struct{ colour colour }
	leave    struct{}
	departed struct{ meetings int64 }
)

var leaveMsg = &leave{}

// mallActor pairs meeting requests until n meetings happened, then sends every creature that
// asks again away, and answers the start request with the sum of the creatures' meetings.
type mallActor struct {
	creatures, n, meetings, departed int
	waiting                          *meet
	sum                              int64
	replyTo                          *actor.PID
}

func (a *mallActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *start:
		a.replyTo = ctx.Sender()
		for i := 0; i < a.creatures; i++ {
			c := colour(i % 3)
			mall := ctx.Self()
			ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &creatureActor{mall: mall, colour: c}
			}))
		}
	case *meet:
		switch {
		case a.meetings >= a.n:
			ctx.Send(m.from, leaveMsg)
		case a.waiting == nil:
			a.waiting = m
		default:
			a.meetings++
			ctx.Send(a.waiting.from, m)
			a.waiting = nil
		}
	case *departed:
		a.departed++
		a.sum += m.meetings
		if a.departed == a.creatures {
			ctx.Send(a.replyTo, &finished{value: a.sum})
		}
	}
}

type creatureActor struct {
	mall     *actor.PID
	colour   colour
	meetings int64
}

func (a *creatureActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Send(a.mall, &meet{ctx.Self(), a.colour})
	case *meet:
		// The mall paired this waiting creature with m.from.
		a.colour = complement(a.colour, m.colour)
		a.meetings++
		ctx.Send(m.from, &change{a.colour})
		ctx.Send(a.mall, &meet{ctx.Self(), a.colour})
	case *change:
		a.colour = m.colour
		a.meetings++
		ctx.Send(a.mall, &meet{ctx.Self(), a.colour})
	case *leave:
		ctx.Send(a.mall, &departed{a.meetings})
		ctx.Stop(ctx.Self())
	}
}

func runChameneos(sys *actor.ActorSystem, p params) (outcome, error) {
	creatures, n := p["chameneos"], p["n"]
	if creatures < 2 {
		return outcome{}, fmt.Errorf("chameneos needs chameneos >= 2")
	}
	mall := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &mallActor{creatures: creatures, n: n}
	}))
	t0 := time.Now()
	res, err := await[*finished](sys.Root.RequestFuture(mall, &start{}, waitLimit))
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != 2*int64(n) {
		return outcome{}, fmt.Errorf("creatures met %d times, want %d", res.value, 2*n)
	}
	return outcome{elapsed}, stopAll(sys, mall)
}

// ---- big --------------------------------------------------------------------------------

type bigStart struct{ peers []*actor.PID }

// bigActor sends n pings, one at a time, each to a peer drawn from its own seeded generator,
// answers every ping it receives with a pong, and reports to the collector after n pongs.
type bigActor struct {
	id, n, pongs int
	peers        []*actor.PID
	rng          *rand.Rand
	collector    *actor.PID
}

func (a *bigActor) sendPing(ctx actor.Context) {
	k := a.rng.Intn(len(a.peers) - 1)
	if k >= a.id {
		k++ // never itself
	}
	ctx.Request(a.peers[k], pingMsg)
}

func (a *bigActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *bigStart:
		a.peers = m.peers
		a.sendPing(ctx)
	case *ping:
		ctx.Respond(pongMsg)
	case *pong:
		a.pongs++
		if a.pongs == a.n {
			ctx.Send(a.collector, &workerDone{float64(a.pongs)})
		} else {
			a.sendPing(ctx)
		}
	}
}

func runBig(sys *actor.ActorSystem, p params) (outcome, error) {
	n, count, seed := p["n"], p["actors"], p["seed"]
	if count < 2 {
		return outcome{}, fmt.Errorf("big needs actors >= 2")
	}
	collector := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &collectorActor{} }))
	pids := make([]*actor.PID, count)
	for i := range pids {
		id := i
		pids[i] = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &bigActor{id: id, n: n, collector: collector,
				rng: rand.New(rand.NewSource(int64(seed)*1000003 + int64(id)))}
		}))
	}
	t0 := time.Now()
	f := sys.Root.RequestFuture(collector, &awaitWorker{count}, waitLimit)
	startMsg := &bigStart{pids}
	for _, pid := range pids {
		sys.Root.Send(pid, startMsg)
	}
	res, err := await[*finished](f)
	elapsed := time.Since(t0)
	if err != nil {
		return outcome{}, err
	}
	if res.value != int64(count) {
		return outcome{}, fmt.Errorf("%d actors finished, want %d", res.value, count)
	}
	if res.total != float64(n)*float64(count) {
		return outcome{}, fmt.Errorf("%.0f pongs in all, want %d", res.total, n*count)
	}
	return outcome{elapsed}, stopAll(sys, append(pids, collector)...)
}
