// Tests of the reader of the lab's namespace file (placement.go, rules 1 to 3).
package main

import (
	"fmt"
	"strings"
	"testing"
)

var testNames = []string{"server-0", "clients-0", "clients-1"}

func nsNode(i int, name string) string {
	return fmt.Sprintf(`{"index": %d, "name": %q, "netns": "tl-ab-%d", "addr": "10.232.%d.2"}`, i, name, i, i+1)
}

func nsFile(nodes ...string) []byte {
	return []byte(`{"coordinator": {"netns": "tl-ab-c", "addr": "10.232.0.2"}, "nodes": [` + strings.Join(nodes, ", ") + `]}`)
}

func goodNodes() []string {
	var out []string
	for i, n := range testNames {
		out = append(out, nsNode(i, n))
	}
	return out
}

func wantErr(t *testing.T, text []byte, part string) {
	t.Helper()
	_, err := parsePlacement(text, testNames)
	if err == nil || !strings.Contains(err.Error(), part) {
		t.Fatalf("expected an error containing %q, got %v", part, err)
	}
}

func TestRule2AFileNamingTheChatsNodesInOrderPlacesEachOne(t *testing.T) {
	p, err := parsePlacement(nsFile(goodNodes()...), testNames)
	if err != nil {
		t.Fatal(err)
	}
	p.ip = "/usr/sbin/ip"
	if p.coordinatorAddr() != "10.232.0.2" || p.addr("clients-1") != "10.232.3.2" {
		t.Fatalf("wrong addresses: %s, %s", p.coordinatorAddr(), p.addr("clients-1"))
	}
	cmd := p.command("clients-0", "/x/chat", "clients", "0")
	if got := strings.Join(cmd.Args, " "); got != "/usr/sbin/ip netns exec tl-ab-1 /x/chat clients 0" {
		t.Fatalf("rule 3: wrong command %q", got)
	}
}

func TestRule2AMissingExtraOrReorderedNodeIsRefused(t *testing.T) {
	g := goodNodes()
	wantErr(t, nsFile(g[:2]...), `"nodes" lists 2 nodes; this config has 3`)
	wantErr(t, nsFile(g[2], g[1], g[0]), "nodes[0].index is 2, expected 0")
	wantErr(t, nsFile(nsNode(0, "clients-0"), nsNode(1, "server-0"), g[2]), `nodes[0].name is "clients-0", expected "server-0"`)
	wantErr(t, nsFile(`{"index": 0, "netns": "tl-ab-0", "addr": "10.232.1.2"}`, g[1], g[2]), "nodes[0].name is missing")
}

func TestRule2BadAddressesAndNamespaceNamesAreRefused(t *testing.T) {
	g := goodNodes()
	wantErr(t, nsFile(g[0], strings.Replace(g[1], "10.232.2.2", "10.232.2", 1), g[2]), `nodes[1].addr "10.232.2" is not an IPv4 address`)
	wantErr(t, nsFile(g[0], strings.Replace(g[1], "10.232.2.2", "::1", 1), g[2]), `nodes[1].addr "::1" is not an IPv4 address`)
	wantErr(t, nsFile(g[0], g[1], strings.Replace(g[2], "tl-ab-2", "../etc", 1)), `nodes[2].netns "../etc" is not a namespace name`)
	wantErr(t, []byte(`{"nodes": []}`), `coordinator needs string fields`)
	wantErr(t, []byte(`[1]`), "not the namespace file's JSON")
}

func TestRule1WithoutTheFileEveryNodeIsOnLoopback(t *testing.T) {
	t.Setenv(envNetns, "")
	p, err := loadPlacement(testNames)
	if err != nil {
		t.Fatal(err)
	}
	if p.coordinatorAddr() != loopback || p.addr("server-0") != loopback {
		t.Fatal("expected loopback")
	}
	if got := strings.Join(p.command("server-0", "/x/chat", "server", "0").Args, " "); got != "/x/chat server 0" {
		t.Fatalf("wrong command %q", got)
	}
}
