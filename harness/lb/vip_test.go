package lb

import (
	"net/netip"
	"strings"
	"testing"
)

func TestVIPPool(t *testing.T) {
	p, err := ParseVIPRange("10.0.0.10-10.0.0.12")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Allocate("a", netip.Addr{})
	b, _ := p.Allocate("b", netip.MustParseAddr("10.0.0.12"))
	c, _ := p.Allocate("c", netip.MustParseAddr("10.0.0.12")) // taken: lowest free
	if a.String() != "10.0.0.10" || b.String() != "10.0.0.12" || c.String() != "10.0.0.11" {
		t.Fatalf("allocated %s %s %s", a, b, c)
	}
	if again, _ := p.Allocate("a", netip.Addr{}); again != a {
		t.Fatalf("a moved to %s", again)
	}
	if _, err := p.Allocate("d", netip.Addr{}); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("err = %v, want exhausted", err)
	}
	p.Release("b")
	if d, err := p.Allocate("d", netip.Addr{}); err != nil || d.String() != "10.0.0.12" {
		t.Fatalf("after release got %s, %v", d, err)
	}
	for _, bad := range []string{"10.0.0.5", "10.0.0.9-10.0.0.1", "x-y", "::1-::2"} {
		if _, err := ParseVIPRange(bad); err == nil {
			t.Errorf("ParseVIPRange(%q) accepted", bad)
		}
	}
}

func TestKindVIPRange(t *testing.T) {
	subnet := netip.MustParsePrefix("172.18.0.0/16")
	first, last, err := KindVIPRange(subnet, "zerodrop")
	if err != nil {
		t.Fatal(err)
	}
	// MetalLB of "zerodrop" (harness/cluster lbRange block 0, 32 addresses) ends at .255.253 and starts at .255.222.
	if first.String() != "172.18.255.190" || last.String() != "172.18.255.221" {
		t.Fatalf("range %s-%s", first, last)
	}
	// Another cluster name: below every MetalLB block (blocks 2-17 end above .253.190).
	f2, l2, err := KindVIPRange(subnet, "zde2e")
	if err != nil {
		t.Fatal(err)
	}
	lowestMetalLB := netip.MustParseAddr("172.18.253.190") // block 17's first address
	if !l2.Less(lowestMetalLB) || f2 == first {
		t.Fatalf("range of another cluster %s-%s overlaps MetalLB's blocks or the default cloud LB", f2, l2)
	}
	if _, _, err := KindVIPRange(netip.MustParsePrefix("10.0.0.0/24"), "zerodrop"); err == nil {
		t.Fatal("a /24 is too small for the blocks")
	}
}
