package cloudlb

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// recorder is a Runner that records commands and answers `ip -j rule show`.
type recorder struct {
	mu    sync.Mutex
	cmds  []string
	stdin []string
}

func (r *recorder) run(_ context.Context, stdin, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := name + " " + strings.Join(args, " ")
	r.cmds = append(r.cmds, line)
	if stdin != "" {
		r.stdin = append(r.stdin, stdin)
	}
	if line == "ip -j rule show" {
		return []byte(`[{"priority":0,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"}]`), nil
	}
	return nil, nil
}

func testConfig(active, draining []string, closeAction profiles.CloseAction) DPConfig {
	return DPConfig{
		Nodes: map[string]netip.Addr{
			"n1": netip.MustParseAddr("10.0.0.11"),
			"n2": netip.MustParseAddr("10.0.0.12"),
		},
		Services: []DPService{{
			Key: "default/web", VIP: netip.MustParseAddr("10.0.0.200"), Ports: []DPPort{{ProtoTCP, 80}},
			Active: active, Draining: draining, CloseAction: closeAction, NoBackends: closeAction,
			IdleTimeout: 10 * time.Minute,
		}},
		VIPs: []netip.Addr{netip.MustParseAddr("10.0.0.200")},
	}
}

func TestDataplaneRender(t *testing.T) {
	rec := &recorder{}
	d := NewDataplane(rec.run, "eth0")
	ctx := context.Background()
	if err := d.Apply(ctx, DPConfig{}); err == nil {
		t.Fatal("Apply before Prepare must fail")
	}
	if err := d.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	prep := strings.Join(rec.cmds, "\n")
	for _, want := range []string{
		"sysctl -q -w net.ipv4.ip_forward=1",
		"sysctl -q -w net.ipv4.conf.eth0.send_redirects=0",
		"sysctl -q -w net.ipv4.conf.all.rp_filter=0",
		"ip rule add pref 200 lookup local",
		"ip rule del pref 0 lookup local",
	} {
		if !strings.Contains(prep, want) {
			t.Errorf("Prepare did not run %q:\n%s", want, prep)
		}
	}
	rec.cmds = nil
	if err := d.Apply(ctx, testConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)); err != nil {
		t.Fatal(err)
	}
	cmds := strings.Join(rec.cmds, "\n")
	for _, want := range []string{
		"ip route replace default via 10.0.0.11 dev eth0 onlink table 1001",
		"ip rule add pref 100 fwmark 0x1/0xffff lookup 1001",
		"ip route replace default via 10.0.0.12 dev eth0 onlink table 1002",
		"ip addr replace 10.0.0.200/32 dev lo",
	} {
		if !strings.Contains(cmds, want) {
			t.Errorf("Apply did not run %q:\n%s", want, cmds)
		}
	}
	script := rec.stdin[len(rec.stdin)-1]
	for _, want := range []string{
		"add element ip zerodrop_lb vips { 10.0.0.200 . tcp . 80 : jump svc_1 }",
		"mod 2 seed 0x5a17d20b map { 0 : 0x00010001, 1 : 0x00010002 }",
		"add element ip zerodrop_lb live { 0x00010001 : jump svc_1_keep }",
		"add rule ip zerodrop_lb raw ip daddr @vipaddrs notrack",
		"add rule ip zerodrop_lb svc_1 meta mark set 0x0 accept",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "jhash ip saddr mod") || strings.Contains(script, ". udp .") {
		t.Errorf("a TCP service without ClientIP affinity hashes the 5-tuple and has no UDP rule:\n%s", script)
	}
	if strings.Contains(script, "flush map ip zerodrop_lb flows") || strings.Contains(script, "flush map ip zerodrop_lb uflows") {
		t.Error("the flows map must never be flushed: established flows would move")
	}

	// UDP next to TCP, and ClientIP affinity: one hash of the client address.
	rec.cmds, rec.stdin = nil, nil
	cfg := testConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)
	cfg.Services[0].Ports = append(cfg.Services[0].Ports, DPPort{ProtoUDP, 53})
	cfg.Services[0].ClientIP = true
	if err := d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	script = rec.stdin[0]
	for _, want := range []string{
		"add element ip zerodrop_lb vips { 10.0.0.200 . tcp . 80 : jump svc_1 }",
		"add element ip zerodrop_lb vips { 10.0.0.200 . udp . 53 : jump svc_1 }",
		"add rule ip zerodrop_lb svc_1 meta l4proto udp jump svc_1_new",
		"meta mark set jhash ip saddr mod 2 seed 0x5a17d20b map",
		"add rule ip zerodrop_lb svc_1_new meta l4proto udp add @uflows { ip saddr . th sport . ip daddr . th dport timeout 600s : meta mark }",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	// A UDP datagram of no live flow starts one; only then do TCP's leftovers meet the close action.
	if i, j := strings.Index(script, "svc_1 meta l4proto udp jump"), strings.Index(script, "svc_1 meta mark set 0x0 accept"); i < 0 || j < i {
		t.Errorf("the UDP new-flow rule must come before the close action:\n%s", script)
	}

	// n2 drains, closed flows are dropped: n2 is live but not chosen.
	rec.cmds, rec.stdin = nil, nil
	if err := d.Apply(ctx, testConfig([]string{"n1"}, []string{"n2"}, profiles.CloseDrop)); err != nil {
		t.Fatal(err)
	}
	script = rec.stdin[0]
	for _, want := range []string{
		"mod 1 seed 0x5a17d20b map { 0 : 0x00010001 }",
		"live { 0x00010002 : jump svc_1_keep }",
		"add rule ip zerodrop_lb svc_1 drop",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(strings.Join(rec.cmds, "\n"), "ip rule add") {
		t.Error("routes and rules must not be re-added when nodes did not change")
	}

	// No active node: new connections meet NoBackends; the service removed: its chains go.
	rec.cmds, rec.stdin = nil, nil
	if err := d.Apply(ctx, DPConfig{Nodes: testConfig(nil, nil, profiles.CloseDrop).Nodes}); err != nil {
		t.Fatal(err)
	}
	script = rec.stdin[0]
	for _, want := range []string{"delete chain ip zerodrop_lb svc_1\n", "delete chain ip zerodrop_lb svc_1_new\n"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if !strings.Contains(strings.Join(rec.cmds, "\n"), "ip addr del 10.0.0.200/32 dev lo") {
		t.Error("VIP of the removed service stays")
	}
}

func TestMarkLayout(t *testing.T) {
	if got := Mark(3, 2); got != 0x30002 {
		t.Fatalf("Mark(3,2) = %#x", got)
	}
}

// An unchanged desired state sends nothing to the kernel: the controller
// syncs on every node heartbeat, and every nft transaction is a chance for a
// packet to race it.
func TestDataplaneSkipsUnchangedRuleset(t *testing.T) {
	rec := &recorder{}
	d := NewDataplane(rec.run, "eth0")
	ctx := context.Background()
	if err := d.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	nfts := func() int {
		n := 0
		for _, c := range rec.cmds {
			if c == "nft -f -" {
				n++
			}
		}
		return n
	}
	two := testConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)
	for i := 0; i < 3; i++ {
		if err := d.Apply(ctx, two); err != nil {
			t.Fatal(err)
		}
	}
	if got := nfts(); got != 1 {
		t.Errorf("3 Applies of one state sent %d rulesets, want 1", got)
	}
	// The same state with services listed in another order is the same state.
	other := two
	other.Services = append([]DPService{{Key: "a/first", VIP: netip.MustParseAddr("10.0.0.201"), Ports: []DPPort{{ProtoTCP, 80}}, Active: []string{"n1"}}}, two.Services...)
	other.VIPs = []netip.Addr{netip.MustParseAddr("10.0.0.201"), netip.MustParseAddr("10.0.0.200")}
	swapped := other
	swapped.Services = []DPService{other.Services[1], other.Services[0]}
	swapped.VIPs = []netip.Addr{other.VIPs[1], other.VIPs[0]}
	if err := d.Apply(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, swapped); err != nil {
		t.Fatal(err)
	}
	if got := nfts(); got != 2 {
		t.Errorf("a new state then the same one reordered: %d rulesets in all, want 2", got)
	}
	if err := d.Apply(ctx, testConfig([]string{"n1"}, []string{"n2"}, profiles.CloseReset)); err != nil {
		t.Fatal(err)
	}
	if got := nfts(); got != 3 {
		t.Errorf("a changed backend set was not sent: %d rulesets, want 3", got)
	}
}

// A NAT service (Pod targets behind the L4 LB) is conntracked and DNATed in
// its own table: its VIP is not untracked, new flows go to active targets
// only, draining ones keep theirs, and a target with no port for the VIP
// port is left out.
func TestDataplaneRenderNAT(t *testing.T) {
	d := NewDataplane((&recorder{}).run, "eth0")
	vip := netip.MustParseAddr("10.0.0.201")
	at := func(s string) map[DPPort]netip.AddrPort {
		return map[DPPort]netip.AddrPort{{ProtoTCP, 80}: netip.MustParseAddrPort(s)}
	}
	cfg := testConfig([]string{"n1"}, nil, profiles.CloseReset)
	cfg.Services = append(cfg.Services, DPService{Key: "default/pods", VIP: vip, Ports: []DPPort{{ProtoTCP, 80}, {ProtoUDP, 53}},
		Active: []string{"pod-a", "pod-c"}, Draining: []string{"pod-b"}, CloseAction: profiles.CloseReset, NoBackends: profiles.CloseReset,
		Targets: map[string]map[DPPort]netip.AddrPort{"pod-a": at("10.244.1.5:8080"), "pod-b": at("10.244.2.7:8080"), "pod-c": {}}})
	cfg.VIPs = append(cfg.VIPs, vip)
	if err := d.assignIDs(cfg); err != nil {
		t.Fatal(err)
	}
	script, chains := d.render(cfg)
	for _, want := range []string{
		"add element ip zerodrop_lb vipaddrs { 10.0.0.200 }",
		"add element ip zerodrop_lb_nat natvips { 10.0.0.201 }",
		"add rule ip zerodrop_lb_nat nat_2_80_0 meta l4proto tcp dnat to 10.244.1.5:8080",
		"jhash ip saddr . th sport . ip daddr . th dport mod 1 seed",
		"add element ip zerodrop_lb_nat live { 10.0.0.201 . 10.244.2.7 . tcp . 8080 }",
		"add rule ip zerodrop_lb_nat post ct status dnat ct original ip daddr @natvips masquerade",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	for _, not := range []string{"vipaddrs { 10.0.0.201 }", "10.244.2.7:8080", "svc_2", "dport 53"} {
		if strings.Contains(script, not) {
			t.Errorf("script has %q (untracked NAT VIP, new flows to a draining target, a node chain or a UDP port for a NAT service):\n%s", not, script)
		}
	}
	if chains[2] || !chains[1] {
		t.Errorf("service chains %v; want the node service's only", chains)
	}
}
