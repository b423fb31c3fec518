// Tests discovery's lookup modes in one process (go test): "retry" answers a lookup for a topic
// with no chat at once; "park" holds it until that chat registers, or answers "not registered"
// after retry_delay_ms, and answers each parked lookup once.
package main

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"troupe/peers/protoactor/chat/msg"
)

// probe forwards every *msg.Found it receives to a channel.
type probe struct{ got chan *msg.Found }

func (p *probe) Receive(ctx actor.Context) {
	if f, ok := ctx.Message().(*msg.Found); ok {
		p.got <- f
	}
}

func startDiscovery(t *testing.T, lookup string, delayMs int) (*actor.ActorSystem, *actor.PID, *actor.PID, chan *msg.Found) {
	t.Helper()
	system := newSystem()
	cfg := defaultConfig()
	cfg.Lookup, cfg.RetryDelayMs = lookup, delayMs
	if err := spawnDiscovery(system, cfg); err != nil {
		t.Fatal(err)
	}
	got := make(chan *msg.Found, 16)
	client := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &probe{got: got} }))
	return system, actor.NewPID(system.Address(), discoveryName), client, got
}

// lookup sends a Lookup from client (so discovery's Sender is the client).
func lookup(system *actor.ActorSystem, d, client *actor.PID, topic string, attempt uint32) {
	system.Root.RequestWithCustomSender(d, &msg.Lookup{Topic: topic, Attempt: attempt}, client)
}

func next(t *testing.T, got chan *msg.Found, within time.Duration) (*msg.Found, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case f := <-got:
		return f, time.Since(start)
	case <-time.After(within):
		t.Fatalf("no Found within %v", within)
		return nil, 0
	}
}

func none(t *testing.T, got chan *msg.Found, within time.Duration) {
	t.Helper()
	select {
	case f := <-got:
		t.Fatalf("unexpected second answer %v", f)
	case <-time.After(within):
	}
}

func TestRetryAnswersAtOnce(t *testing.T) {
	system, d, client, got := startDiscovery(t, "retry", 500)
	defer system.Shutdown()
	lookup(system, d, client, "chat-0", 1)
	f, took := next(t, got, 2*time.Second)
	if f.Chat != nil || f.Attempt != 1 || took > 250*time.Millisecond {
		t.Fatalf("retry: got %v after %v, want not registered at once", f, took)
	}
}

func TestParkTimesOut(t *testing.T) {
	system, d, client, got := startDiscovery(t, "park", 100)
	defer system.Shutdown()
	start := time.Now()
	lookup(system, d, client, "chat-0", 7)
	f, _ := next(t, got, 2*time.Second)
	if took := time.Since(start); f.Chat != nil || f.Attempt != 7 || took < 100*time.Millisecond {
		t.Fatalf("park: got %v after %v, want not registered after 100 ms", f, took)
	}
	none(t, got, 200*time.Millisecond)
}

func TestParkAnsweredByRegistration(t *testing.T) {
	system, d, client, got := startDiscovery(t, "park", 300)
	defer system.Shutdown()
	lookup(system, d, client, "chat-0", 1)
	lookup(system, d, client, "chat-0", 2)
	lookup(system, d, client, "chat-1", 3) // another topic: still parked, then times out
	time.Sleep(50 * time.Millisecond)
	chat := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	system.Root.Send(d, &msg.Register{Topic: "chat-0", Chat: chat})
	seen := map[uint32]bool{}
	for i := 0; i < 2; i++ {
		f, _ := next(t, got, time.Second)
		if f.Chat == nil || pidKey(f.Chat) != pidKey(chat) || seen[f.Attempt] {
			t.Fatalf("park: got %v, want the registered chat once per lookup", f)
		}
		seen[f.Attempt] = true
	}
	f, _ := next(t, got, time.Second)
	if f.Chat != nil || f.Attempt != 3 {
		t.Fatalf("park: got %v, want chat-1 not registered", f)
	}
	// The answered lookups' timers were cancelled: nothing else comes.
	none(t, got, 500*time.Millisecond)
	// A topic with a live chat is answered at once.
	lookup(system, d, client, "chat-0", 4)
	if f, took := next(t, got, time.Second); f.Chat == nil || took > 250*time.Millisecond {
		t.Fatalf("park: got %v after %v for a registered topic", f, took)
	}
}
