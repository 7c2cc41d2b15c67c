package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the script's process and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestResilientMirror runs resilient.sh against the kernel in a network
// namespace of its own: FRR's part is played by routes of protocol bgp
// added by hand, and what is checked is what the data path will do, the
// group's buckets. A nexthop that leaves must give up only its own
// buckets; the hash-threshold route it mirrors would move others' too.
func TestResilientMirror(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	ns := fmt.Sprintf("zdres%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("no network namespaces here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("link", "add", "d0", "type", "veth", "peer", "name", "d1")
	run("link", "set", "d0", "up")
	run("link", "set", "d1", "up")
	run("addr", "add", "172.30.0.1/24", "dev", "d0")
	run("route", "add", "198.18.0.1", "proto", "bgp", "nexthop", "via", "172.30.0.2", "dev", "d0",
		"nexthop", "via", "172.30.0.3", "dev", "d0", "nexthop", "via", "172.30.0.5", "dev", "d0")

	script := filepath.Join(t.TempDir(), "resilient.sh")
	if err := os.WriteFile(script, []byte(resilientScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "sh", script, "198.18.0.0/24", "200", "d0", "32", "10", "0")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The loop's pipeline outlives sh; the namespace's processes go
		// with it.
		pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, p := range strings.Fields(string(pids)) {
			_ = exec.Command("kill", p).Run()
		}
		_ = cmd.Wait()
	})

	gid := fmt.Sprint(addrID("198.18.0.1"))
	buckets := func() []string {
		var bs []struct {
			Bucket struct {
				NHID uint32 `json:"nhid"`
			} `json:"bucket"`
		}
		if err := json.Unmarshal([]byte(run("-j", "nexthop", "bucket", "show", "id", gid)), &bs); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(bs))
		for i, b := range bs {
			// A gateway's twin is its id with the top bit flipped.
			id := b.Bucket.NHID
			if id < 1<<31 {
				id ^= 1 << 31
			}
			out[i] = idAddr(id)
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10s for %s; the script's log:\n%s", what, log.String())
			}
		}
	}
	waitFor("the script to say ready", func() bool { return strings.Contains(log.String(), " ready: ") })
	rs, err := ParseRoutes([]byte(run("-j", "route", "show", "table", "200")))
	if err != nil || len(rs) != 1 || rs[0].String() != "198.18.0.1/32 via 172.30.0.2,172.30.0.3,172.30.0.5" {
		t.Fatalf("mirror table: %v, %v; log:\n%s", rs, err, log.String())
	}
	before := buckets()
	if len(before) != 32 {
		t.Fatalf("%d buckets, want 32", len(before))
	}

	// 172.30.0.2 withdraws (the first nexthop: under hash-threshold the
	// other two ranges would both move).
	run("route", "replace", "198.18.0.1", "proto", "bgp", "nexthop", "via", "172.30.0.3", "dev", "d0", "nexthop", "via", "172.30.0.5", "dev", "d0")
	waitFor("the group to lose 172.30.0.2", func() bool { return !strings.Contains(strings.Join(buckets(), " "), "172.30.0.2") })
	after := buckets()
	moved := 0
	for i := range before {
		switch {
		case before[i] == "172.30.0.2":
			moved++
		case after[i] != before[i]:
			t.Errorf("bucket %d moved from %s to %s though its nexthop stayed", i, before[i], after[i])
		}
	}
	if moved == 0 {
		t.Errorf("172.30.0.2 had no bucket: %v", before)
	}

	// A route of one node is still a group of two nexthops (the node and
	// its twin), so the kernel keeps marking its buckets busy.
	run("route", "replace", "198.18.0.1", "proto", "bgp", "via", "172.30.0.5", "dev", "d0")
	waitFor("the group to keep only 172.30.0.5", func() bool { return !strings.Contains(strings.Join(buckets(), " "), "172.30.0.3") })
	var grp []struct {
		Group []struct {
			ID uint32 `json:"id"`
		} `json:"group"`
	}
	if err := json.Unmarshal([]byte(run("-j", "nexthop", "show", "id", gid)), &grp); err != nil || len(grp) != 1 || len(grp[0].Group) != 2 {
		t.Errorf("a route of one node: group %+v (%v), want two members, the node and its twin", grp, err)
	}

	// The last route goes: the mirror's goes with it, and the throw route
	// hands the address back to the main table.
	run("route", "del", "198.18.0.1", "proto", "bgp")
	waitFor("the mirror's route to go", func() bool { return !strings.Contains(run("route", "show", "table", "200"), "198.18.0.1") })
	if got := run("route", "show", "table", "200"); !strings.Contains(got, "throw 198.18.0.0/24") {
		t.Errorf("table 200 lost its throw route: %q", got)
	}
}

func addrID(s string) uint32 {
	b := netip.MustParseAddr(s).As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func idAddr(id uint32) string {
	return netip.AddrFrom4([4]byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}).String()
}
