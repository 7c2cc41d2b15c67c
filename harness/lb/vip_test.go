package lb

import (
	"net/netip"
	"testing"
)

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

func TestClaimsUnclassed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--lb-profile", "generic", "--claim-unclassed=true"}, true},
		{[]string{"--claim-unclassed=false", "--admin-addr", ":9100"}, false},
		// A bare boolean flag is true; "false" is then a stray argument
		// that ends flag parsing, as in flag.FlagSet.Parse.
		{[]string{"--claim-unclassed", "false"}, true},
		{[]string{"-claim-unclassed=false"}, false},
		{[]string{"--claim-unclassed=0"}, false},
		{[]string{"--claim-unclassed=F"}, false},
		{[]string{"--claim-unclassed=false", "--claim-unclassed"}, true},
		{[]string{"--claim-unclassed=nonsense"}, true},
		{[]string{"--kubeconfig", "/etc/k", "--claim-unclassed=false"}, false},
		{[]string{"--claimunclassed=false"}, true},
		{[]string{"claim-unclassed=false"}, true},
	} {
		if got := claimsUnclassed(tc.args); got != tc.want {
			t.Errorf("claimsUnclassed(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
