package cloudlb

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
