// The distributed deployment (deployment = "distributed"), laid out as Troupe's own
// (crates/troupe-lab-workloads/src/chat/sub.rs): the process the lab starts is the
// orchestrator, node "discovery"; it hosts discovery under its known name and a coordinator,
// and starts this same binary once per supervisor (`chat server G`, node "server-G") and once
// per client group of at most clients_per_process clients (`chat clients G`, node
// "clients-G"). Every process is a Proto.Actor remote node on 127.0.0.1 (a free port each),
// or, with TROUPE_NETNS, each in the network namespace the lab gives it, on its address there
// (placement.go: only the address and an `ip netns exec` prefix differ).
//
// Rules:
//  1. Discovery is found by its known name on the orchestrator's node: the orchestrator hands
//     its address to the node processes (TROUPE_PA_ORCH) and each addresses
//     actor.NewPID(addr, "chat-discovery"); actors are never handed each other's addresses.
//  2. Set-up order: server groups (each ready once its chats registered), then client groups
//     (each ready once its clients joined). Each tells the coordinator Ready (a remote
//     request); the coordinator answers every one with the window start once all are ready.
//  3. Clients Watch their chat across the wire (Proto.Actor remote watch); the injector of chat
//     c runs in the client group holding the chat's first client and stops or poisons the
//     chat across the wire, as Troupe's does.
//  4. Client groups end at the window's end, server groups one second later. The orchestrator
//     waits for every node process under a deadline; a node that exits early, exits non-zero
//     or is still running at the deadline fails the run: the others are killed and reaped and
//     the orchestrator's run_finished names them in failed_nodes. Node processes die with the
//     orchestrator (Pdeathsig), and every wait of theirs is bounded.
//  5. Every process appends its own lines, whole lines per write, to the one TROUPE_EVENTS
//     file, with its node name; each writes run_finished last.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"troupe/peers/protoactor/chat/msg"
)

const (
	roleServer      = "server"
	roleClients     = "clients"
	coordinatorName = "chat-coordinator"
	envOrchestrator = "TROUPE_PA_ORCH"
)

// startRemote makes this process's actor system a remote node on a free port of host
// (127.0.0.1, or its namespace's address).
func startRemote(host string) (*actor.ActorSystem, *remote.Remote) {
	system := newSystem()
	rem := remote.NewRemote(system, remote.Configure(host, 0))
	rem.Start()
	return system, rem
}

// clientGroups splits the clients in groups of at most clients_per_process: (first, count).
func clientGroups(cfg config) [][2]int {
	total := cfg.NumSupervisor * cfg.ChatsPerSup * cfg.ClientsPerServer
	var gs [][2]int
	for first := 0; first < total; first += cfg.ClientsPerProcess {
		gs = append(gs, [2]int{first, min(cfg.ClientsPerProcess, total-first)})
	}
	return gs
}

// ---------------------------------------------------------------------------------------------
// Orchestrator

// coordinator collects Ready requests and answers them all with the window start.
type coordinator struct {
	ready   *atomic.Int64
	waiting []*actor.PID
	startUs int64
}

type openWindow struct{ startUs int64 }

func (c *coordinator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *msg.Ready:
		if ctx.Sender() == nil {
			return
		}
		if c.startUs != 0 {
			ctx.Respond(&msg.Window{StartUs: c.startUs})
		} else {
			c.waiting = append(c.waiting, ctx.Sender())
		}
		c.ready.Add(1)
	case *openWindow:
		c.startUs = m.startUs
		for _, p := range c.waiting {
			ctx.Send(p, &msg.Window{StartUs: m.startUs})
		}
		c.waiting = nil
	}
}

// nodeExit is how a node process ended.
type nodeExit struct {
	name string
	err  error
	at   time.Time
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("killed by signal %d", int(ws.Signal()))
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}

func runOrchestrator(r *run) int {
	cfg := r.cfg
	place, err := loadPlacement(netNodes(cfg))
	if err != nil {
		if _, bad := err.(*placementError); bad {
			fatal(2, "%v", err)
		}
		fatal(3, "missing toolchain: %v", err)
	}
	em := r.startEmitter("discovery", "chat")
	system, rem := startRemote(place.coordinatorAddr())
	var failed []string
	var errors uint64
	finish := func() int {
		extra := `"failed_nodes":[`
		for i, f := range failed {
			if i > 0 {
				extra += ","
			}
			extra += strconv.Quote(f)
		}
		extra += "]"
		if err := em.finish(errors, 0, extra); err != nil {
			fmt.Fprintf(os.Stderr, "protoactor chat: writing events: %v\n", err)
			return 1
		}
		return 0
	}
	if err := spawnDiscovery(system, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat: spawning discovery: %v\n", err)
		errors++
		return finish()
	}
	var ready atomic.Int64
	coord, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &coordinator{ready: &ready}
	}), coordinatorName)
	if err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat: spawning the coordinator: %v\n", err)
		errors++
		return finish()
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat: cannot find this executable: %v\n", err)
		errors++
		return finish()
	}

	exits := make(chan nodeExit, 1024)
	var mu sync.Mutex
	procs := map[string]*os.Process{} // running node processes
	start := func(role string, g int) error {
		name := fmt.Sprintf("%s-%d", role, g)
		cmd := place.command(name, exe, role, strconv.Itoa(g))
		cmd.Env = append(os.Environ(), envOrchestrator+"="+system.Address(), envHost+"="+place.addr(name))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, os.Stderr
		// The node dies with the orchestrator, whatever ends it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("cannot start node process %s: %v", name, err)
		}
		mu.Lock()
		procs[name] = cmd.Process
		mu.Unlock()
		go func() {
			err := cmd.Wait()
			mu.Lock()
			delete(procs, name)
			mu.Unlock()
			exits <- nodeExit{name: name, err: err, at: time.Now()}
		}()
		return nil
	}
	started := 0
	// waitReady waits until n processes said Ready; a process ending first fails the run.
	waitReady := func(n int) error {
		deadline := time.Now().Add(setupLimit)
		for ready.Load() < int64(n) {
			select {
			case e := <-exits:
				failed = append(failed, fmt.Sprintf("%s (%s)", e.name, describeExit(e.err)))
				started--
				return fmt.Errorf("node process %s ended during set-up: %s", e.name, describeExit(e.err))
			case <-time.After(2 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("set-up took longer than %v", setupLimit)
			}
		}
		return nil
	}
	outcome := func() error {
		for g := 0; g < cfg.NumSupervisor; g++ {
			if err := start(roleServer, g); err != nil {
				return err
			}
			started++
		}
		if err := waitReady(started); err != nil {
			return err
		}
		em.emit("ready", fmt.Sprintf(`"what":"server_groups","count":%d`, cfg.NumSupervisor))
		for g := range clientGroups(cfg) {
			if err := start(roleClients, g); err != nil {
				return err
			}
			started++
		}
		if err := waitReady(started); err != nil {
			return err
		}
		startUs := time.Now().Add(time.Duration(cfg.WarmupS) * time.Second).UnixMicro()
		em.emit("ready", fmt.Sprintf(`"what":"window","count":%d,"start_us":%d`, cfg.TestDurationSecs, startUs))
		system.Root.Send(coord, &openWindow{startUs: startUs})
		windowEnd := time.UnixMicro(startUs).Add(time.Duration(cfg.TestDurationSecs) * time.Second)
		deadline := windowEnd.Add(60 * time.Second)
		for left := started; left > 0; left-- {
			select {
			case e := <-exits:
				started--
				switch {
				case e.err != nil:
					failed = append(failed, fmt.Sprintf("%s (%s)", e.name, describeExit(e.err)))
					return fmt.Errorf("node process %s failed: %s", e.name, describeExit(e.err))
				case e.at.Before(windowEnd):
					failed = append(failed, e.name+" (exited before the window ended (exit status 0))")
					return fmt.Errorf("node process %s exited before the window ended", e.name)
				}
			case <-time.After(time.Until(deadline)):
				return fmt.Errorf("%d node process(es) did not end by the deadline", left)
			}
		}
		return nil
	}()
	if outcome != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat: %v\n", outcome)
		errors++
		if len(failed) == 0 {
			failed = append(failed, outcome.Error())
		}
	}
	// Whatever happened, no node process outlives the orchestrator: kill what is left, reap it.
	mu.Lock()
	for _, p := range procs {
		_ = p.Kill()
	}
	mu.Unlock()
	reapBy := time.After(10 * time.Second)
reap:
	for started > 0 {
		select {
		case <-exits:
			started--
		case <-reapBy:
			fmt.Fprintf(os.Stderr, "protoactor chat: %d node process(es) not reaped within 10 s\n", started)
			break reap
		}
	}
	reportParked(cfg)
	rem.Shutdown(false)
	return finish()
}

// ---------------------------------------------------------------------------------------------
// Node processes

// joinRun starts a remote node and addresses discovery and the coordinator on the
// orchestrator's node by their names.
func joinRun() (*actor.ActorSystem, *remote.Remote, *actor.PID, *actor.PID, error) {
	addr := os.Getenv(envOrchestrator)
	if addr == "" || !strings.Contains(addr, ":") {
		return nil, nil, nil, nil, fmt.Errorf("%s is not set; node processes are started by the orchestrator", envOrchestrator)
	}
	host := os.Getenv(envHost)
	if host == "" {
		host = loopback
	}
	system, rem := startRemote(host)
	return system, rem, actor.NewPID(addr, discoveryName), actor.NewPID(addr, coordinatorName), nil
}

// sayReady tells the coordinator this node is ready and waits for the window start.
func sayReady(system *actor.ActorSystem, coord *actor.PID, node string) (time.Time, error) {
	res, err := system.Root.RequestFuture(coord, &msg.Ready{Node: node, Addr: system.Address()}, 2*setupLimit).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("the orchestrator did not open the window: %v", err)
	}
	w, ok := res.(*msg.Window)
	if !ok {
		return time.Time{}, fmt.Errorf("the orchestrator answered %T", res)
	}
	return time.UnixMicro(w.StartUs), nil
}

// runServerGroup is server group g: supervisor g and its chats.
func runServerGroup(r *run, g int) int {
	cfg := r.cfg
	node := fmt.Sprintf("server-%d", g)
	em := r.startEmitter(node, "chat-server")
	fail := func(sh *shared, format string, args ...interface{}) int {
		fmt.Fprintf(os.Stderr, "protoactor chat %s: "+format+"\n", append([]interface{}{node}, args...)...)
		var errs uint64 = 1
		if sh != nil {
			errs += sh.errors.Load()
		}
		_ = em.finish(errs, 0, "")
		return 1
	}
	if g >= cfg.NumSupervisor {
		return fail(nil, "server group %d does not exist for this config", g)
	}
	system, rem, disc, coord, err := joinRun()
	if err != nil {
		return fail(nil, "%v", err)
	}
	sh := newShared(cfg, em, system, disc)
	if err := startSupervisor(system, sh, g); err != nil {
		return fail(sh, "spawning supervisor %d: %v", g, err)
	}
	if !waitFor(&sh.registered, int64(cfg.ChatsPerSup), setupLimit) {
		return fail(sh, "only %d of %d chats registered within %v", sh.registered.Load(), cfg.ChatsPerSup, setupLimit)
	}
	em.emit("ready", fmt.Sprintf(`"what":"chats","count":%d,"rss_bytes":%d,"pid":%d`, cfg.ChatsPerSup, rssBytes(), os.Getpid()))
	start, err := sayReady(system, coord, node)
	if err != nil {
		return fail(sh, "%v", err)
	}
	sleepUntil(start.Add(time.Duration(cfg.TestDurationSecs+1) * time.Second))
	sh.stopping.Store(true)
	code := 0
	if err := em.finish(sh.errors.Load(), 0, ""); err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat %s: writing events: %v\n", node, err)
		code = 1
	}
	rem.Shutdown(false)
	return code
}

// runClientGroup is client group g: its clients, their chats' injectors, its counter.
func runClientGroup(r *run, g int) int {
	cfg := r.cfg
	node := fmt.Sprintf("clients-%d", g)
	em := r.startEmitter(node, "chat-clients")
	fail := func(sh *shared, format string, args ...interface{}) int {
		fmt.Fprintf(os.Stderr, "protoactor chat %s: "+format+"\n", append([]interface{}{node}, args...)...)
		var errs uint64 = 1
		if sh != nil {
			errs += sh.errors.Load()
		}
		_ = em.finish(errs, 0, "")
		return 1
	}
	groups := clientGroups(cfg)
	if g >= len(groups) {
		return fail(nil, "client group %d does not exist for this config", g)
	}
	first, count := groups[g][0], groups[g][1]
	system, rem, disc, coord, err := joinRun()
	if err != nil {
		return fail(nil, "%v", err)
	}
	sh := newShared(cfg, em, system, disc)
	spawnClients(system, sh, first, count)
	if !waitFor(&sh.joined, int64(count), setupLimit) {
		return fail(sh, "only %d of %d clients joined within %v", sh.joined.Load(), count, setupLimit)
	}
	em.emit("ready", fmt.Sprintf(`"what":"clients","count":%d,"rss_bytes":%d,"pid":%d`, count, rssBytes(), os.Getpid()))
	start, err := sayReady(system, coord, node)
	if err != nil {
		return fail(sh, "%v", err)
	}
	// This group injects into the chats whose first client it holds.
	var mine []action
	for _, a := range r.acts {
		k := a.Group * cfg.ClientsPerServer
		if k >= first && k < first+count {
			mine = append(mine, a)
		}
	}
	totalChats := cfg.NumSupervisor * cfg.ChatsPerSup
	skipped, bad := runWindow(system, sh, start, mine, totalChats)
	sh.stopping.Store(true)
	code := 0
	if err := em.finish(sh.errors.Load()+bad, skipped, ""); err != nil {
		fmt.Fprintf(os.Stderr, "protoactor chat %s: writing events: %v\n", node, err)
		code = 1
	}
	if sh.errors.Load()+bad > 0 {
		code = 1
	}
	rem.Shutdown(false)
	return code
}
