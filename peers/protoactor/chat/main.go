// Command chat is the Proto.Actor (Go) peer of the Troupe lab's chat benchmark (seed 000), in
// single-process mode (deployment = "single"); see docs/chat.md, "The chat peer contract".
//
// The system is built with the ordinary Proto.Actor API:
//   - discovery is spawned under the known name "chat-discovery" (SpawnNamed) and found by it;
//     it watches every registered chat and forgets a chat when it terminates;
//   - num_supervisor supervisors, each with a one_for_one strategy over its chats_per_sup chats.
//     The decider answers StopDirective: a failed chat is stopped, and the supervisor, told of
//     the child's termination, spawns a fresh chat (a new PID) that registers again. Seed 000
//     forces this full stop-and-respawn in Go so that watchers see the failure; Proto.Actor's
//     in-place restart keeps the PID and would hide it;
//   - clients resolve their chat through discovery (Request/Respond), Watch it, join it, post
//     every send_interval_ms (throughput test only; scheduler.SendRepeatedly), and on
//     *actor.Terminated re-resolve with a fixed-delay retry (scheduler.SendOnce self-messages,
//     never a blocking sleep), at most retry_max attempts in a row.
//
// The injector, the per-second throughput counter and the event writer are harness goroutines
// outside the actor system; actors only bump atomic counters and hand event lines to a bounded
// channel (a full channel drops the line and counts it, it never blocks an actor).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"troupe/peers/protoactor/chat/msg"
)

const (
	runtimeName   = "protoactor"
	nodeName      = "protoactor"
	discoveryName = "chat-discovery"
	setupLimit    = 120 * time.Second
	protoModule   = "github.com/asynkron/protoactor-go"
)

// config holds every key of docs/chat.md's chat key table; missing keys keep their defaults.
type config struct {
	TestType          string `json:"test_type"`
	NumSupervisor     int    `json:"num_supervisor"`
	ChatsPerSup       int    `json:"chats_per_sup"`
	ClientsPerServer  int    `json:"clients_per_server"`
	FaultPauseMs      int    `json:"fault_pause_ms"`
	MsgType           string `json:"msg_type"`
	TestDurationSecs  int    `json:"test_duration_secs"`
	WarmupS           int    `json:"warmup_s"`
	SendIntervalMs    int    `json:"send_interval_ms"`
	RetryDelayMs      int    `json:"retry_delay_ms"`
	RetryMax          int    `json:"retry_max"`
	StressMs          int    `json:"stress_ms"`
	StressMb          int    `json:"stress_mb"`
	Deployment        string `json:"deployment"`
	ClientsPerProcess int    `json:"clients_per_process"`
	FaultPhase        string `json:"fault_phase"`
	Events            string `json:"events"`
	Seed              uint64 `json:"seed"`
	Lookup            string `json:"lookup"`
}

func defaultConfig() config {
	return config{
		TestType: "throughput", NumSupervisor: 1, ChatsPerSup: 256, ClientsPerServer: 5,
		FaultPauseMs: 5000, MsgType: "error", TestDurationSecs: 60, WarmupS: 5,
		SendIntervalMs: 200, RetryDelayMs: 10, RetryMax: 500, StressMs: 100, StressMb: 64,
		Deployment: "distributed", ClientsPerProcess: 10000, FaultPhase: "random",
		Events: "file", Seed: 1, Lookup: "retry",
	}
}

// action is one line of the chat schedule.
type action struct {
	AtMs  int64           `json:"at_ms"`
	ID    json.RawMessage `json:"id"`
	Kind  string          `json:"kind"`
	Group int             `json:"group"`
	Slot  int             `json:"slot"`
}

// ---------------------------------------------------------------------------------------------
// Events

// emitter hands event lines to one writer goroutine through a bounded channel.
type emitter struct {
	ch      chan []byte
	head    string // `"run":...,"rt":...,"node":...`
	dropped atomic.Uint64
	stopped atomic.Bool
	fin     chan func() []byte
	done    chan error
}

func newEmitter(path, run, node string) (*emitter, error) {
	f, err := openSink(path, run) // a file, or RabbitMQ for amqp:// (amqp.go)
	if err != nil {
		return nil, err
	}
	runJSON, _ := json.Marshal(run)
	e := &emitter{
		ch:   make(chan []byte, 1<<16),
		head: fmt.Sprintf(`"run":%s,"rt":%q,"node":%q`, runJSON, runtimeName, node),
		fin:  make(chan func() []byte),
		done: make(chan error, 1),
	}
	go e.loop(f)
	return e, nil
}

func (e *emitter) line(ev, fields string) []byte {
	b := make([]byte, 0, 96+len(e.head)+len(fields))
	b = append(b, `{"ts_us":`...)
	b = strconv.AppendInt(b, time.Now().UnixMicro(), 10)
	b = append(b, ',')
	b = append(b, e.head...)
	b = append(b, `,"ev":"`...)
	b = append(b, ev...)
	b = append(b, '"')
	if fields != "" {
		b = append(b, ',')
		b = append(b, fields...)
	}
	return append(b, '}', '\n')
}

// emit queues one line; fields is a rendered JSON fragment (`"k":v,...`). It never blocks.
func (e *emitter) emit(ev, fields string) {
	if e.stopped.Load() {
		return
	}
	select {
	case e.ch <- e.line(ev, fields):
	default:
		e.dropped.Add(1)
	}
}

// loop writes queued lines. Several processes of one run append to the same file, so every
// write(2) carries whole lines only (O_APPEND keeps each write in one piece): lines gather in
// buf and go out when it passes 60 KiB, every 250 ms, and at the end.
func (e *emitter) loop(f eventSink) {
	buf := make([]byte, 0, 1<<16)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var werr error
	flush := func() {
		if len(buf) > 0 {
			if _, err := f.Write(buf); err != nil && werr == nil {
				werr = err
			}
			buf = buf[:0]
		}
	}
	write := func(b []byte) {
		buf = append(buf, b...)
		if len(buf) >= 60<<10 {
			flush()
		}
	}
	for {
		select {
		case b := <-e.ch:
			write(b)
		case <-t.C:
			flush()
		case last := <-e.fin:
			for drained := false; !drained; {
				select {
				case b := <-e.ch:
					write(b)
				default:
					drained = true
				}
			}
			write(last())
			flush()
			if err := f.Close(); err != nil && werr == nil {
				werr = err
			}
			e.done <- werr
			return
		}
	}
}

// finish writes run_finished as the last line (after everything queued) and closes the file.
// extra, when not empty, is a rendered JSON fragment appended to its fields.
func (e *emitter) finish(errors, skipped uint64, extra string) error {
	e.stopped.Store(true)
	e.fin <- func() []byte {
		f := fmt.Sprintf(`"dropped_events":%d,"errors":%d,"skipped_faults":%d`, e.dropped.Load(), errors, skipped)
		if extra != "" {
			f += "," + extra
		}
		return e.line("run_finished", f)
	}
	return <-e.done
}

// ---------------------------------------------------------------------------------------------
// Messages

type tick struct{}
type retry struct{ attempt uint32 }

// shared is what every actor of the run reads: settings, counters, the emitter.
type shared struct {
	cfg          config
	em           *emitter
	sched        *scheduler.TimerScheduler
	discovery    *actor.PID
	clientsSend  bool
	retryDelay   time.Duration
	sendInterval time.Duration
	registered   atomic.Int64 // chats registered for the first time
	joined       atomic.Int64 // clients joined for the first time
	received     atomic.Uint64
	errors       atomic.Uint64
	stopping     atomic.Bool
}

func topic(c int) string { return "chat-" + strconv.Itoa(c) }

// ---------------------------------------------------------------------------------------------
// Discovery

// discovery maps a topic to its live chat and watches it (a dead chat is forgotten).
// A Lookup for a topic with no live chat (it is restarting) is answered "not registered" at
// once with lookup = "retry" (seed 000). With lookup = "park" it is held: answered with the chat
// the moment that chat registers again, or "not registered" after retry_delay_ms (one
// scheduler.SendOnce timer per parked lookup, cancelled when the registration answers it),
// whichever comes first; each parked lookup is answered exactly once.
type discovery struct {
	chats  map[string]*actor.PID
	byID   map[string]string // pidKey(chat) -> topic
	park   bool
	delay  time.Duration
	sched  *scheduler.TimerScheduler // on the system's root context, never on ctx (timers fire on other goroutines)
	parked map[string]map[uint64]parkedLookup
	nextID uint64
}

// parkedLookup is a client's Lookup held by discovery (lookup = "park").
type parkedLookup struct {
	client  *actor.PID
	attempt uint32
	cancel  scheduler.CancelFunc
}

// parkStats counts discovery's parked lookups in this process (lookup = "park"), for the line
// reportParked writes on stderr at the end of a run.
var parkStats struct{ parked, byRegistration, timedOut atomic.Uint64 }

func reportParked(cfg config) {
	if cfg.Lookup == "park" {
		fmt.Fprintf(os.Stderr, "protoactor chat: discovery (lookup=park): %d lookups parked, %d answered by a registration, %d timed out\n",
			parkStats.parked.Load(), parkStats.byRegistration.Load(), parkStats.timedOut.Load())
	}
}

// parkTimeout is discovery's own timer message: parked lookup id on topic waited retry_delay_ms.
type parkTimeout struct {
	topic string
	id    uint64
}

// pidKey names a PID uniquely across processes (address and id).
func pidKey(p *actor.PID) string { return p.Address + "/" + p.Id }

func (d *discovery) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *msg.Register:
		ctx.Watch(m.Chat)
		if old, ok := d.chats[m.Topic]; ok && pidKey(old) != pidKey(m.Chat) {
			ctx.Unwatch(old)
			delete(d.byID, pidKey(old))
		}
		d.chats[m.Topic] = m.Chat
		d.byID[pidKey(m.Chat)] = m.Topic
		ctx.Send(m.Chat, &msg.Registered{})
		if waiting, ok := d.parked[m.Topic]; ok {
			delete(d.parked, m.Topic)
			for _, p := range waiting {
				p.cancel()
				parkStats.byRegistration.Add(1)
				ctx.Send(p.client, &msg.Found{Attempt: p.attempt, Chat: m.Chat})
			}
		}
	case *msg.Lookup:
		chat := d.chats[m.Topic]
		if chat != nil || !d.park || ctx.Sender() == nil {
			ctx.Respond(&msg.Found{Attempt: m.Attempt, Chat: chat})
			return
		}
		d.nextID++
		id := d.nextID
		parkStats.parked.Add(1)
		waiting := d.parked[m.Topic]
		if waiting == nil {
			waiting = map[uint64]parkedLookup{}
			d.parked[m.Topic] = waiting
		}
		waiting[id] = parkedLookup{
			client:  ctx.Sender(),
			attempt: m.Attempt,
			cancel:  d.sched.SendOnce(d.delay, ctx.Self(), &parkTimeout{topic: m.Topic, id: id}),
		}
	case *parkTimeout:
		// A timer that lost the race to a registration finds nothing here: answered once only.
		if p, ok := d.parked[m.topic][m.id]; ok {
			delete(d.parked[m.topic], m.id)
			if len(d.parked[m.topic]) == 0 {
				delete(d.parked, m.topic)
			}
			parkStats.timedOut.Add(1)
			ctx.Send(p.client, &msg.Found{Attempt: p.attempt})
		}
	case *msg.Find:
		ctx.Respond(&msg.FoundChat{Chat: d.chats[m.Topic]})
	case *actor.Terminated:
		if t, ok := d.byID[pidKey(m.Who)]; ok {
			delete(d.byID, pidKey(m.Who))
			if cur := d.chats[t]; cur != nil && pidKey(cur) == pidKey(m.Who) {
				delete(d.chats, t)
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Chats and their supervisors

type chat struct {
	sh          *shared
	topic       string
	incarnation int
	members     []*actor.PID
	memberIDs   map[string]struct{}
}

func (c *chat) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Send(c.sh.discovery, &msg.Register{Topic: c.topic, Chat: ctx.Self()})
	case *msg.Registered:
		if c.incarnation == 0 {
			c.sh.registered.Add(1)
		}
	case *msg.Join:
		client := ctx.Sender()
		if client == nil {
			return
		}
		if _, ok := c.memberIDs[pidKey(client)]; !ok {
			c.memberIDs[pidKey(client)] = struct{}{}
			c.members = append(c.members, client)
		}
		ctx.Respond(&msg.Joined{Attempt: m.Attempt})
	case *msg.Post:
		b := &msg.Broadcast{From: m.From, Text: m.Text}
		for _, member := range c.members {
			ctx.Send(member, b)
		}
	case *msg.Poison:
		panic(c.topic + ": poison message")
	case *msg.Stress:
		doStress(int(m.CpuMs), int(m.RamMb))
	}
}

// doStress spins for cpuMs, then allocates ramMb MiB, touches every 4 KiB page and drops it.
func doStress(cpuMs, ramMb int) {
	if cpuMs > 0 {
		until := time.Now().Add(time.Duration(cpuMs) * time.Millisecond)
		x := uint64(1)
		for time.Now().Before(until) {
			for i := uint64(0); i < 1000; i++ {
				x = x*6364136223846793005 + i
			}
		}
		sink.Add(x)
	}
	if ramMb > 0 {
		v := make([]byte, ramMb<<20)
		for i := 0; i < len(v); i += 4096 {
			v[i] = 1
		}
		sink.Add(uint64(v[len(v)-1]))
	}
}

var sink atomic.Uint64

type supervisor struct {
	sh           *shared
	first        int            // index of its first chat
	children     map[string]int // chat PID id -> chat index
	incarnations []int
}

func (s *supervisor) spawnChat(ctx actor.Context, index int) {
	inc := s.incarnations[index-s.first]
	sh := s.sh
	props := actor.PropsFromProducer(func() actor.Actor {
		return &chat{sh: sh, topic: topic(index), incarnation: inc, memberIDs: map[string]struct{}{}}
	})
	pid := ctx.Spawn(props)
	s.children[pid.Id] = index
}

func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for i := range s.incarnations {
			s.spawnChat(ctx, s.first+i)
		}
	case *actor.Terminated:
		// A child chat stopped: killed, or stopped by the strategy after a panic. One_for_one:
		// only this chat is replaced, by a fresh actor with a new PID.
		index, ok := s.children[m.Who.Id]
		if !ok {
			return
		}
		delete(s.children, m.Who.Id)
		if s.sh.stopping.Load() {
			return
		}
		s.incarnations[index-s.first]++
		s.sh.em.emit("restarted", fmt.Sprintf(`"target":"%s","attempt":%d`, topic(index), s.incarnations[index-s.first]))
		s.spawnChat(ctx, index)
	}
}

// stopDecider makes the one_for_one strategy stop a failed chat instead of restarting it in place.
func stopDecider(reason interface{}) actor.Directive { return actor.StopDirective }

// ---------------------------------------------------------------------------------------------
// Clients

type client struct {
	sh         *shared
	index      int
	topic      string
	fields     string // `"target":"chat-c","by":"ck"`
	post       *msg.Post
	attempt    uint32
	tries      int
	chat       *actor.PID
	connected  bool
	everJoined bool
	gaveUp     bool
	lostAt     time.Time
}

func (c *client) resolve(ctx actor.Context) {
	c.attempt++
	c.tries++
	ctx.Request(c.sh.discovery, &msg.Lookup{Topic: c.topic, Attempt: c.attempt})
}

func (c *client) retryLater(ctx actor.Context) {
	if c.chat != nil {
		ctx.Unwatch(c.chat)
		c.chat = nil
	}
	if c.tries >= c.sh.cfg.RetryMax {
		if !c.gaveUp {
			c.gaveUp = true
			c.sh.errors.Add(1)
			c.sh.em.emit("gave_up", fmt.Sprintf(`%s,"tries":%d`, c.fields, c.tries))
		}
		return
	}
	c.sh.sched.SendOnce(c.sh.retryDelay, ctx.Self(), &retry{attempt: c.attempt})
}

func (c *client) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *msg.Broadcast:
		c.sh.received.Add(1)
	case *tick:
		if c.connected && c.chat != nil {
			ctx.Send(c.chat, c.post)
		}
	case *actor.Started:
		if c.sh.clientsSend {
			c.sh.sched.SendRepeatedly(c.sh.sendInterval, c.sh.sendInterval, ctx.Self(), &tick{})
		}
		c.resolve(ctx)
	case *msg.Found:
		if m.Attempt != c.attempt || c.connected {
			return
		}
		if m.Chat == nil {
			c.retryLater(ctx)
			return
		}
		ctx.Watch(m.Chat)
		c.chat = m.Chat
		ctx.Request(m.Chat, &msg.Join{Attempt: m.Attempt})
	case *msg.Joined:
		if m.Attempt != c.attempt || c.connected || c.chat == nil {
			return
		}
		c.connected = true
		c.tries = 0
		if !c.lostAt.IsZero() {
			ms := float64(time.Since(c.lostAt).Nanoseconds()) / 1e6
			c.lostAt = time.Time{}
			c.sh.em.emit("reconnected", c.fields+`,"ms":`+strconv.FormatFloat(ms, 'f', -1, 64))
		}
		if !c.everJoined {
			c.everJoined = true
			c.sh.joined.Add(1)
		}
	case *retry:
		if m.attempt == c.attempt && !c.connected && !c.gaveUp {
			c.resolve(ctx)
		}
	case *actor.Terminated:
		if c.chat == nil || pidKey(m.Who) != pidKey(c.chat) {
			return
		}
		c.chat = nil
		if c.connected {
			c.connected = false
			c.lostAt = time.Now()
			c.sh.em.emit("fault_detected", `"id":null,`+c.fields)
			c.tries = 0
			c.resolve(ctx)
		} else {
			// The chat we found was already dead (discovery had not seen its termination yet).
			c.retryLater(ctx)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Harness

func fatal(code int, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "protoactor chat: "+format+"\n", args...)
	os.Exit(code)
}

func version() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == protoModule {
				v = d.Version
			}
		}
	}
	return fmt.Sprintf("protoactor-go %s (%s)", v, runtime.Version())
}

func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func waitFor(counter *atomic.Int64, target int64, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for counter.Load() < target {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

func readSchedule(path string) ([]action, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var acts []action
	for n, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var a action
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n+1, err)
		}
		acts = append(acts, a)
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].AtMs < acts[j].AtMs })
	return acts, nil
}

// newShared makes the state every actor of this process reads.
func newShared(cfg config, em *emitter, system *actor.ActorSystem, discovery *actor.PID) *shared {
	return &shared{
		cfg:          cfg,
		em:           em,
		sched:        scheduler.NewTimerScheduler(system.Root),
		discovery:    discovery,
		clientsSend:  cfg.TestType == "throughput",
		retryDelay:   time.Duration(cfg.RetryDelayMs) * time.Millisecond,
		sendInterval: time.Duration(cfg.SendIntervalMs) * time.Millisecond,
	}
}

func newSystem() *actor.ActorSystem {
	quiet := func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return actor.NewActorSystem(actor.WithLoggerFactory(quiet))
}

// spawnDiscovery spawns discovery under its known name.
func spawnDiscovery(system *actor.ActorSystem, cfg config) error {
	sched := scheduler.NewTimerScheduler(system.Root)
	dprops := actor.PropsFromProducer(func() actor.Actor {
		return &discovery{
			chats: map[string]*actor.PID{}, byID: map[string]string{},
			park: cfg.Lookup == "park", delay: time.Duration(cfg.RetryDelayMs) * time.Millisecond,
			sched: sched, parked: map[string]map[uint64]parkedLookup{},
		}
	})
	_, err := system.Root.SpawnNamed(dprops, discoveryName)
	return err
}

// startSupervisor spawns supervisor s ("sup-s") and its chats_per_sup chats.
func startSupervisor(system *actor.ActorSystem, sh *shared, s int) error {
	cfg := sh.cfg
	strategy := actor.NewOneForOneStrategy(10, time.Second, stopDecider)
	first := s * cfg.ChatsPerSup
	props := actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{sh: sh, first: first, children: map[string]int{}, incarnations: make([]int, cfg.ChatsPerSup)}
	}, actor.WithSupervisor(strategy))
	_, err := system.Root.SpawnNamed(props, "sup-"+strconv.Itoa(s))
	return err
}

// spawnClients spawns clients first..first+count-1 (client k belongs to chat k / clients_per_server).
func spawnClients(system *actor.ActorSystem, sh *shared, first, count int) {
	for k := first; k < first+count; k++ {
		c := k / sh.cfg.ClientsPerServer
		cl := &client{
			sh: sh, index: k, topic: topic(c),
			fields: fmt.Sprintf(`"target":"chat-%d","by":"c%d"`, c, k),
			post:   &msg.Post{From: int64(k), Text: fmt.Sprintf("hello from c%d", k)},
		}
		system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return cl }))
	}
}

// runWindow runs this process's per-second throughput counter and its injector over the window
// that starts at start, and returns when both are done: the faults skipped, and the actions
// with an unknown kind (errors).
func runWindow(system *actor.ActorSystem, sh *shared, start time.Time, acts []action, totalChats int) (skipped, bad uint64) {
	cfg := sh.cfg
	em := sh.em
	var wg sync.WaitGroup
	var nSkipped, nBad atomic.Uint64
	wg.Add(2)
	go func() { // the per-second throughput counter
		defer wg.Done()
		sleepUntil(start)
		prev := sh.received.Load()
		for s := 0; s < cfg.TestDurationSecs; s++ {
			sleepUntil(start.Add(time.Duration(s+1) * time.Second))
			cur := sh.received.Load()
			em.emit("throughput", fmt.Sprintf(`"second":%d,"count":%d`, s, cur-prev))
			prev = cur
		}
	}()
	go func() { // the injector: every action at start_us + at_ms, on the chat = group
		defer wg.Done()
		for _, a := range acts {
			if a.Group < 0 || a.Group >= totalChats {
				fmt.Fprintf(os.Stderr, "protoactor chat: action %s targets chat %d of %d; skipped\n", a.ID, a.Group, totalChats)
				nSkipped.Add(1)
				continue
			}
			sleepUntil(start.Add(time.Duration(a.AtMs) * time.Millisecond))
			t := topic(a.Group)
			res, err := system.Root.RequestFuture(sh.discovery, &msg.Find{Topic: t}, 5*time.Second).Result()
			fc, _ := res.(*msg.FoundChat)
			if err != nil || fc == nil || fc.Chat == nil {
				nSkipped.Add(1) // the chat is restarting: not registered at this instant
				continue
			}
			var hurt func()
			switch a.Kind {
			case "kill":
				hurt = func() { system.Root.Stop(fc.Chat) }
			case "error":
				hurt = func() { system.Root.Send(fc.Chat, &msg.Poison{}) }
			case "cpu":
				hurt = func() { system.Root.Send(fc.Chat, &msg.Stress{CpuMs: int32(cfg.StressMs)}) }
			case "ram":
				hurt = func() { system.Root.Send(fc.Chat, &msg.Stress{RamMb: int32(cfg.StressMb)}) }
			default:
				fmt.Fprintf(os.Stderr, "protoactor chat: action %s has unknown kind %q; skipped\n", a.ID, a.Kind)
				nBad.Add(1)
				nSkipped.Add(1)
				continue
			}
			id := a.ID
			if len(id) == 0 {
				id = json.RawMessage("null")
			}
			kindJSON, _ := json.Marshal(a.Kind)
			em.emit("fault_injected", fmt.Sprintf(`"id":%s,"target":"%s","kind":%s`, id, t, kindJSON))
			hurt()
		}
	}()
	wg.Wait()
	sleepUntil(start.Add(time.Duration(cfg.TestDurationSecs) * time.Second))
	return nSkipped.Load(), nBad.Load()
}

// run is what main hands to each role: the config, its compact JSON and the schedule.
type run struct {
	cfg    config
	cfgObj []byte
	acts   []action
	events string
	id     string
}

// startEmitter opens the events file for this process's node and writes run_started.
func (r *run) startEmitter(node, role string) *emitter {
	em, err := newEmitter(r.events, r.id, node)
	if err != nil {
		fatal(1, "events: %v", err)
	}
	verJSON, _ := json.Marshal(version())
	em.emit("run_started", fmt.Sprintf(`"workload":"chat","config":%s,"version":%s,"role":%q`, r.cfgObj, verJSON, role))
	return em
}

func main() {
	cfgPath, schedPath, eventsPath, runID :=
		os.Getenv("TROUPE_CONFIG"), os.Getenv("TROUPE_SCHEDULE"), os.Getenv("TROUPE_EVENTS"), os.Getenv("TROUPE_RUN_ID")
	if cfgPath == "" || eventsPath == "" {
		fatal(2, "TROUPE_CONFIG and TROUPE_EVENTS must be set")
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		fatal(1, "reading config: %v", err)
	}
	cfg := defaultConfig()
	if err := json.Unmarshal(raw, &cfg); err != nil {
		fatal(2, "config %s: %v", cfgPath, err)
	}
	// The config is echoed in run_started on one line: compact it (a pretty-printed file would
	// break the JSON Lines).
	var cfgObj bytes.Buffer
	if err := json.Compact(&cfgObj, raw); err != nil {
		fatal(2, "config %s: %v", cfgPath, err)
	}
	if cfg.Deployment != "single" && cfg.Deployment != "distributed" {
		fatal(2, "deployment=%s is not implemented", cfg.Deployment)
	}
	if cfg.Lookup != "retry" && cfg.Lookup != "park" {
		fatal(2, "config %s: lookup=%q: expected \"retry\" or \"park\"", cfgPath, cfg.Lookup)
	}
	if strings.Contains(eventsPath, "://") && !strings.HasPrefix(eventsPath, "amqp://") {
		fatal(2, "TROUPE_EVENTS=%s: only a file path or an amqp:// URL is implemented", redactURL(eventsPath))
	}
	if cfg.NumSupervisor < 1 || cfg.ChatsPerSup < 1 || cfg.ClientsPerServer < 1 || cfg.TestDurationSecs < 1 ||
		cfg.SendIntervalMs < 1 || cfg.RetryDelayMs < 1 || cfg.RetryMax < 1 || cfg.WarmupS < 0 || cfg.ClientsPerProcess < 1 {
		fatal(2, "config %s: a count, duration or interval is out of range", cfgPath)
	}
	var acts []action
	if schedPath != "" {
		if acts, err = readSchedule(schedPath); err != nil {
			fatal(1, "schedule: %v", err)
		}
	}
	r := &run{cfg: cfg, cfgObj: cfgObj.Bytes(), acts: acts, events: eventsPath, id: runID}

	// Distributed node processes are this binary started by the orchestrator with a role.
	if len(os.Args) == 3 && (os.Args[1] == roleServer || os.Args[1] == roleClients) {
		g, err := strconv.Atoi(os.Args[2])
		if err != nil || g < 0 {
			fatal(2, "bad group %q", os.Args[2])
		}
		if os.Args[1] == roleServer {
			os.Exit(runServerGroup(r, g))
		}
		os.Exit(runClientGroup(r, g))
	}
	if len(os.Args) > 1 {
		fatal(2, "unexpected arguments %q (node processes take: %s|%s GROUP)", os.Args[1:], roleServer, roleClients)
	}
	if cfg.Deployment == "distributed" {
		os.Exit(runOrchestrator(r))
	}
	os.Exit(runSingle(r))
}

// runSingle runs the whole system in this process (deployment = "single").
func runSingle(r *run) int {
	cfg := r.cfg
	em := r.startEmitter(nodeName, "chat")
	system := newSystem()
	sh := newShared(cfg, em, system, actor.NewPID(system.Address(), discoveryName))
	finish := func(code int) int {
		if err := em.finish(sh.errors.Load(), 0, ""); err != nil {
			fmt.Fprintf(os.Stderr, "protoactor chat: writing events: %v\n", err)
			code = 1
		}
		return code
	}

	// 1. Discovery, under its known name.
	if err := spawnDiscovery(system, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat: spawning discovery: %v\n", err)
		return finish(1)
	}

	// 2. Supervisors and their chats; ready once every chat registered.
	totalChats := cfg.NumSupervisor * cfg.ChatsPerSup
	for s := 0; s < cfg.NumSupervisor; s++ {
		if err := startSupervisor(system, sh, s); err != nil {
			fmt.Fprintf(os.Stderr, "protoactor chat: spawning supervisor %d: %v\n", s, err)
			return finish(1)
		}
	}
	if !waitFor(&sh.registered, int64(totalChats), setupLimit) {
		fmt.Fprintf(os.Stderr, "protoactor chat: only %d of %d chats registered within %v\n", sh.registered.Load(), totalChats, setupLimit)
		return finish(1)
	}
	em.emit("ready", fmt.Sprintf(`"what":"chats","count":%d`, totalChats))

	// 3. Clients; ready once every client joined.
	totalClients := totalChats * cfg.ClientsPerServer
	spawnClients(system, sh, 0, totalClients)
	if !waitFor(&sh.joined, int64(totalClients), setupLimit) {
		fmt.Fprintf(os.Stderr, "protoactor chat: only %d of %d clients joined within %v\n", sh.joined.Load(), totalClients, setupLimit)
		return finish(1)
	}
	em.emit("ready", fmt.Sprintf(`"what":"clients","count":%d,"rss_bytes":%d`, totalClients, rssBytes()))

	// 4. The window, warmup_s from now.
	startUs := time.Now().Add(time.Duration(cfg.WarmupS) * time.Second).UnixMicro()
	em.emit("ready", fmt.Sprintf(`"what":"window","count":%d,"start_us":%d`, cfg.TestDurationSecs, startUs))
	skipped, bad := runWindow(system, sh, time.UnixMicro(startUs), r.acts, totalChats)
	reportParked(cfg)

	// 5. Done: no restarts or events after run_finished.
	sh.stopping.Store(true)
	if err := em.finish(sh.errors.Load()+bad, skipped, ""); err != nil {
		fatal(1, "writing events: %v", err)
	}
	return 0
}
