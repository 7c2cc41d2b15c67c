//go:build e2e

package cloudlb

// Pod targets behind the L4 data plane (NAT services), on the namespaces of
// dataplane_e2e_test.go: the two "nodes" serve :8080 on their own address,
// which here stands for a Pod address the LB sends to straight.

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// natConfig is one NAT service on VIP:80 whose targets p1 and p2 are the
// two nodes' :8080.
func natConfig(active, draining []string) DPConfig {
	targets := map[string]map[DPPort]netip.AddrPort{}
	for i, n := range []string{"n1", "n2"} {
		name := []string{"p1", "p2"}[i]
		targets[name] = map[DPPort]netip.AddrPort{{ProtoTCP, 80}: netip.AddrPortFrom(netip.MustParseAddr(e2eNodes[n]), 8080)}
	}
	return DPConfig{
		Services: []DPService{{Key: "e2e/pods", VIP: netip.MustParseAddr(e2eVIP), Ports: []DPPort{{ProtoTCP, 80}},
			Active: active, Draining: draining, CloseAction: profiles.CloseReset, NoBackends: profiles.CloseReset,
			IdleTimeout: time.Minute, Targets: targets}},
		VIPs: []netip.Addr{netip.MustParseAddr(e2eVIP)},
	}
}

// podOf names the target that answered.
func podOf(r echoReply) string {
	if r.Node == "n1" {
		return "p1"
	}
	return "p2"
}

func TestDataplaneNATE2E(t *testing.T) {
	tp := newTopo(t)
	ctx := context.Background()
	dp := NewDataplane(ExecRunner(tp.ns("lb")), "eth0")
	if err := dp.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dp.Close(context.Background()) })
	if err := dp.Apply(ctx, natConfig([]string{"p1", "p2"}, nil)); err != nil {
		t.Fatal(err)
	}
	spread := func(t *testing.T, n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for i := 0; i < n; i++ {
			r, err := tp.oneShot(t)
			if err != nil {
				t.Fatalf("request %d of %d: %v", i+1, n, err)
			}
			// The NLB's default for IP targets over TCP: the target sees
			// the LB's address, and answers it.
			if r.ClientIP != e2eLB {
				t.Fatalf("target %s saw client %s, want the LB's own %s (masqueraded)", r.Node, r.ClientIP, e2eLB)
			}
			// The Pod's own port, not the VIP's: the flow was DNATed.
			if r.Local != r.Node+":8080" && r.Local != e2eNodes[r.Node]+":8080" {
				t.Fatalf("target %s answered on %s, want its own address:8080", r.Node, r.Local)
			}
			got[podOf(r)]++
		}
		return got
	}

	t.Run("new connections spread over the targets, masqueraded, replies from the VIP", func(t *testing.T) {
		got := spread(t, 40)
		t.Logf("40 new connections: %v", got)
		if got["p1"] == 0 || got["p2"] == 0 {
			t.Fatalf("all connections on one target: %v", got)
		}
	})

	t.Run("an established flow stays on its draining target; new flows avoid it; a removed target's flow is reset", func(t *testing.T) {
		c, err := tp.dial(t, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.c.Close()
		first, err := c.get(false)
		if err != nil {
			t.Fatal(err)
		}
		x := podOf(first)
		y := map[string]string{"p1": "p2", "p2": "p1"}[x]
		if err := dp.Apply(ctx, natConfig([]string{y}, []string{x})); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			r, err := c.get(false)
			if err != nil {
				t.Fatalf("request %d on the established connection after %s started draining: %v", i+2, x, err)
			}
			if podOf(r) != x {
				t.Fatalf("established connection moved from %s to %s", x, podOf(r))
			}
		}
		if got := spread(t, 20); got[x] != 0 {
			t.Fatalf("new connections reached draining target %s: %v", x, got)
		}
		// Neither active nor draining: its flows meet the close action.
		if err := dp.Apply(ctx, natConfig([]string{y}, nil)); err != nil {
			t.Fatal(err)
		}
		_, err = c.get(false)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("request on a flow whose target left: err = %v, want connection reset", err)
		}
		t.Logf("draining %s kept its connection for 6 requests; once removed the connection got: %v", x, err)
	})

	t.Run("no target: a new connection is refused by the LB", func(t *testing.T) {
		if err := dp.Apply(ctx, natConfig(nil, nil)); err != nil {
			t.Fatal(err)
		}
		_, err := tp.dial(t, 0)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial with no target: err = %v, want connection refused", err)
		}
	})

	t.Run("the NAT table goes with the last NAT service", func(t *testing.T) {
		if err := dp.Apply(ctx, svcConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		r, err := tp.oneShot(t)
		if err != nil {
			t.Fatal(err)
		}
		if r.ClientIP != e2eClient {
			t.Fatalf("direct server return after the NAT service left: the node saw %s, want the client %s", r.ClientIP, e2eClient)
		}
	})
}
