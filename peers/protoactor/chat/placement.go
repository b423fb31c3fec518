// Where the node processes of the distributed deployment run: all on loopback, or each in the
// network namespace the lab made for it (TROUPE_NETNS), so that the lab's network faults,
// applied in a hub namespace outside every runtime, hit this peer as they hit the others
// (docs/chat.md, "The chat peer contract").
//
// Rules:
//  1. Without TROUPE_NETNS every process's remote listens on and advertises 127.0.0.1 (as
//     before).
//  2. With it, TROUPE_NETNS is the path of the lab's JSON file {"coordinator": {"netns",
//     "addr"}, "nodes": [{"index", "name", "netns", "addr"}, ...]}. Its nodes must be exactly the
//     chat's network nodes in order (server-0 .. server-{num_supervisor-1}, then clients-0 ..;
//     index = position); anything else (a missing or extra node, another order, an address that
//     is not IPv4, a namespace name that is not a plain file name) is refused, naming the file
//     and the field.
//  3. The orchestrator (the process the lab starts, already inside the coordinator namespace)
//     listens on the coordinator's address; node `name` is started as `ip netns exec <netns>
//     target/chat ROLE G` and its remote listens on and advertises its addr (TROUPE_PA_HOST).
//     The port stays 0 (a free one), as on loopback: only the address and the command's prefix
//     differ.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

const (
	envNetns = "TROUPE_NETNS"
	envHost  = "TROUPE_PA_HOST" // the address a node process listens on, handed to it
	loopback = "127.0.0.1"
)

// spot is a namespace and the address a node listens on there.
type spot struct {
	Netns string `json:"netns"`
	Addr  string `json:"addr"`
}

// placement says where each node runs; coordinator is nil on loopback.
type placement struct {
	coordinator *spot
	nodes       map[string]spot
	ip          string // the `ip` binary, in namespaces
}

var netnsName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// netNodes is the chat's network nodes in the lab's order (its net_nodes).
func netNodes(cfg config) []string {
	var names []string
	for g := 0; g < cfg.NumSupervisor; g++ {
		names = append(names, fmt.Sprintf("%s-%d", roleServer, g))
	}
	for g := range clientGroups(cfg) {
		names = append(names, fmt.Sprintf("%s-%d", roleClients, g))
	}
	return names
}

// placementError is a bad TROUPE_NETNS file (a configuration error, exit 2); other errors of
// loadPlacement are a missing `ip` binary.
type placementError struct{ msg string }

func (e *placementError) Error() string { return e.msg }

// loadPlacement reads the placement for names: loopback without TROUPE_NETNS (rule 1), else
// the file's (rule 2).
func loadPlacement(names []string) (*placement, error) {
	path := os.Getenv(envNetns)
	if path == "" {
		return &placement{}, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, &placementError{fmt.Sprintf("%s=%s: cannot read it: %v", envNetns, path, err)}
	}
	p, err := parsePlacement(text, names)
	if err != nil {
		return nil, &placementError{fmt.Sprintf("%s=%s: %v", envNetns, path, err)}
	}
	p.ip, err = findIP()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// parsePlacement parses the lab's namespace file for the nodes names (rule 2).
func parsePlacement(text []byte, names []string) (*placement, error) {
	var doc struct {
		Coordinator *spot `json:"coordinator"`
		Nodes       []struct {
			Index *int    `json:"index"`
			Name  *string `json:"name"`
			spot
		} `json:"nodes"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("not the namespace file's JSON: %v", err)
	}
	if err := checkSpot(doc.Coordinator, "coordinator"); err != nil {
		return nil, err
	}
	if len(doc.Nodes) != len(names) {
		return nil, fmt.Errorf("\"nodes\" lists %d nodes; this config has %d (%s)", len(doc.Nodes), len(names), strings.Join(names, ", "))
	}
	p := &placement{coordinator: doc.Coordinator, nodes: map[string]spot{}}
	for i, n := range doc.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		if n.Index == nil || *n.Index != i {
			return nil, fmt.Errorf("%s.index is %s, expected %d", field, show(n.Index), i)
		}
		if n.Name == nil || *n.Name != names[i] {
			return nil, fmt.Errorf("%s.name is %s, expected %q", field, show(n.Name), names[i])
		}
		s := n.spot
		if err := checkSpot(&s, field); err != nil {
			return nil, err
		}
		p.nodes[names[i]] = s
	}
	return p, nil
}

func show[T any](v *T) string {
	if v == nil {
		return "missing"
	}
	b, _ := json.Marshal(*v)
	return string(b)
}

func checkSpot(s *spot, field string) error {
	switch {
	case s == nil || s.Netns == "" || s.Addr == "":
		return fmt.Errorf("%s needs string fields \"netns\" and \"addr\"", field)
	case !netnsName.MatchString(s.Netns):
		return fmt.Errorf("%s.netns %q is not a namespace name", field, s.Netns)
	}
	if ip := net.ParseIP(s.Addr); ip == nil || ip.To4() == nil || strings.Contains(s.Addr, ":") {
		return fmt.Errorf("%s.addr %q is not an IPv4 address", field, s.Addr)
	}
	return nil
}

func findIP() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("ip (iproute2) not found on PATH, /usr/sbin or /sbin; %s needs it to start the node processes in their namespaces", envNetns)
}

// coordinatorAddr is the orchestrator's address (rule 3).
func (p *placement) coordinatorAddr() string {
	if p.coordinator == nil {
		return loopback
	}
	return p.coordinator.Addr
}

// addr is the address node name listens on and advertises.
func (p *placement) addr(name string) string {
	if p.coordinator == nil {
		return loopback
	}
	return p.nodes[name].Addr
}

// command is how node name is started: exe args..., or ip netns exec <netns> exe args... .
func (p *placement) command(name, exe string, args ...string) *exec.Cmd {
	if p.coordinator == nil {
		return exec.Command(exe, args...)
	}
	return exec.Command(p.ip, append([]string{"netns", "exec", p.nodes[name].Netns, exe}, args...)...)
}
