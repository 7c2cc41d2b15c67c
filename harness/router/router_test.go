package router

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseRoutes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // Route.String of each
		err  string
	}{
		{name: "multipath", in: `[{"dst":"198.18.0.1","protocol":"bgp","metric":20,"flags":[],"nexthops":[{"gateway":"172.18.0.4","dev":"eth0","weight":1,"flags":[]},{"gateway":"172.18.0.3","dev":"eth0","weight":1,"flags":[]}]}]`,
			want: []string{"198.18.0.1/32 via 172.18.0.3,172.18.0.4"}},
		{name: "one path", in: `[{"dst":"198.18.0.2","gateway":"172.18.0.5","dev":"eth0","protocol":"bgp","metric":20,"flags":[]}]`,
			want: []string{"198.18.0.2/32 via 172.18.0.5"}},
		{name: "a prefix", in: `[{"dst":"198.18.0.0/24","gateway":"172.18.0.5","dev":"eth0"}]`, want: []string{"198.18.0.0/24 via 172.18.0.5"}},
		{name: "none", in: `[]`},
		{name: "a resilient group, members inline", in: `[{"type":"throw","dst":"198.18.0.0/24","flags":[]},{"dst":"198.18.0.1","nhid":3323068417,"flags":[],"nexthops":[{"gateway":"172.22.0.4","dev":"eth0","weight":1,"flags":[]},{"gateway":"172.22.0.5","dev":"eth0","weight":1,"flags":[]}]}]`,
			want: []string{"198.18.0.1/32 via 172.22.0.4,172.22.0.5"}},
		{name: "a nexthop object", in: `[{"dst":"198.18.0.1","nhid":12,"protocol":"bgp"}]`, err: "nexthop object 12"},
		{name: "garbage", in: `{`, err: "read ip -j route"},
		{name: "bad gateway", in: `[{"dst":"198.18.0.1","gateway":"x"}]`, err: "nexthop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := ParseRoutes([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.String())
			}
			if strings.Join(got, ";") != strings.Join(tc.want, ";") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRouteString(t *testing.T) {
	r := Route{Dst: netip.MustParsePrefix("198.18.0.1/32")}
	if got := r.String(); got != "198.18.0.1/32 unreachable (no route)" {
		t.Errorf("%q", got)
	}
}

func TestParseEstablished(t *testing.T) {
	in := `{"ipv4Unicast":{"peers":{"172.18.0.3":{"state":"Established"},"172.18.0.4":{"state":"Active"},"172.18.0.5":{"state":"Established"}}}}`
	if n, err := parseEstablished([]byte(in)); err != nil || n != 2 {
		t.Errorf("got %d, %v; want 2", n, err)
	}
	// FRR answers {} before any session exists.
	if n, err := parseEstablished([]byte(`{}`)); err != nil || n != 0 {
		t.Errorf("got %d, %v; want 0", n, err)
	}
	if _, err := parseEstablished([]byte(`nope`)); err == nil {
		t.Error("garbage read as a summary")
	}
}

func TestParseFound(t *testing.T) {
	r, err := parseFound("zerodrop-router", "172.18.0.9|198.18.0.0/24|64512|64513|l4|8.4.4-1.1~deb12u2|9s|resilient")
	if err != nil {
		t.Fatal(err)
	}
	if r.IP.String() != "172.18.0.9" || r.Pool.String() != "198.18.0.0/24" || r.ASN != 64512 || r.PeerASN != 64513 || r.Hash != HashL4 ||
		r.FRRVersion != "8.4.4-1.1~deb12u2" || r.HoldTime != 9*time.Second || r.Groups != GroupResilient {
		t.Errorf("%+v", r)
	}
	// A router started before groups were a setting has no label.
	if r, err := parseFound("r", "172.18.0.9|198.18.0.0/24|64512|64513|l4|v|0s|<no value>"); err != nil || r.Groups != GroupHashThreshold {
		t.Errorf("no groups label: %+v, %v", r, err)
	}
	for _, bad := range []string{"", "172.18.0.9|198.18.0.0/24|64512|64513|l4|v|0s", "x|198.18.0.0/24|1|2|l3|v|0s|", "172.18.0.9|nope|1|2|l3|v|0s|",
		"172.18.0.9|198.18.0.0/24|a|2|l3|v|0s|", "172.18.0.9|198.18.0.0/24|1|2|l9|v|0s|", "172.18.0.9|198.18.0.0/24|1|2|l3|v|soon|",
		"172.18.0.9|198.18.0.0/24|1|2|l3|v|0s|consistent"} {
		if _, err := parseFound("r", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConfig(t *testing.T) {
	r := &Router{Container: "zerodrop-router", IP: netip.MustParseAddr("172.18.0.9"), ASN: 64512, PeerASN: 64513}
	c, err := Config(r, netip.MustParsePrefix("172.18.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"router bgp 64512", "bgp router-id 172.18.0.9", "neighbor SPEAKERS remote-as 64513",
		"bgp listen range 172.18.0.0/16 peer-group SPEAKERS", "maximum-paths 16", "no bgp ebgp-requires-policy", "no zebra nexthop kernel enable"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "timers") {
		t.Errorf("FRR's default hold time rendered as timers:\n%s", c)
	}
	r.HoldTime = 9 * time.Second
	if c, err = Config(r, netip.MustParsePrefix("172.18.0.0/16")); err != nil || !strings.Contains(c, "neighbor SPEAKERS timers 3 9") {
		t.Errorf("hold time 9s: %v\n%s", err, c)
	}
	r.HoldTime = time.Second
	if _, err := Config(r, netip.MustParsePrefix("172.18.0.0/16")); err == nil {
		t.Error("a 1s hold time accepted")
	}
	if _, err := Config(&Router{}, netip.MustParsePrefix("172.18.0.0/16")); err == nil {
		t.Error("a router without address or AS numbers configured")
	}
}

func TestParseHashPolicy(t *testing.T) {
	for in, want := range map[string]HashPolicy{"l3": HashL3, "": HashL3, "L4": HashL4} {
		if got, err := ParseHashPolicy(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseHashPolicy("l5"); err == nil {
		t.Error("l5 accepted")
	}
}

func TestParseGroupType(t *testing.T) {
	for in, want := range map[string]GroupType{"hash-threshold": GroupHashThreshold, "": GroupHashThreshold, "Resilient": GroupResilient} {
		if got, err := ParseGroupType(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
		if got, _ := ParseGroupType(want.String()); got != want {
			t.Errorf("%v does not read back", want)
		}
	}
	if _, err := ParseGroupType("consistent"); err == nil {
		t.Error("consistent accepted")
	}
}

func TestRouteTo(t *testing.T) {
	rs := []Route{{Dst: netip.MustParsePrefix("198.18.0.1/32"), Nexthops: []netip.Addr{netip.MustParseAddr("172.18.0.3")}}}
	if got := routeTo(rs, netip.MustParseAddr("198.18.0.1")).String(); got != "198.18.0.1/32 via 172.18.0.3" {
		t.Errorf("%q", got)
	}
	if got := routeTo(rs, netip.MustParseAddr("198.18.0.2")).String(); got != "198.18.0.2/32 unreachable (no route)" {
		t.Errorf("%q", got)
	}
}
