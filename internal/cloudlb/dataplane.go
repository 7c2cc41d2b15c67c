package cloudlb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/sched"
)

// Runner runs a command with stdin and returns its combined output. It is how
// the data plane reaches nft, ip and sysctl, so tests can run them inside a
// network namespace.
type Runner func(ctx context.Context, stdin string, name string, args ...string) ([]byte, error)

// ExecRunner runs commands on this host, inside network namespace netns when
// it is not empty (through `ip netns exec`).
func ExecRunner(netns string) Runner {
	return func(ctx context.Context, stdin string, name string, args ...string) ([]byte, error) {
		if netns != "" {
			args = append([]string{"netns", "exec", netns, name}, args...)
			name = "ip"
		}
		cmd := exec.CommandContext(ctx, name, args...)
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		// A command runs in the default scheduling class even when the LB
		// runs in a real-time one (sched.Normal).
		var out []byte
		err := sched.Normal(func() (err error) {
			out, err = cmd.CombinedOutput()
			return err
		})
		if err != nil {
			return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return out, nil
	}
}

// Proto is a transport protocol the L4 data plane forwards, as nftables
// names it.
type Proto string

const (
	ProtoTCP Proto = "tcp"
	ProtoUDP Proto = "udp"
)

// DPPort is one port of a Service on its VIP.
type DPPort struct {
	Proto Proto
	Port  uint16
}

func (p DPPort) String() string { return fmt.Sprintf("%d/%s", p.Port, p.Proto) }

// DPService is one L4 Service as the data plane sees it.
type DPService struct {
	Key    string     // namespace/name, for comments and IDs
	VIP    netip.Addr // the LoadBalancer address
	Ports  []DPPort   // ports on the VIP
	Active []string   // nodes that take new flows
	// ClientIP picks a new flow's node from the client address alone, so
	// every flow of one client lands on one node while the active set
	// stands (session affinity ClientIP at the LB).
	ClientIP    bool
	Draining    []string             // nodes that keep their flows but take no new ones
	CloseAction profiles.CloseAction // what packets of closed or unknown flows meet
	NoBackends  profiles.CloseAction // what new connections meet when Active is empty
	IdleTimeout time.Duration
	// Targets, when not nil, makes the service's backends Pods behind an L4
	// LB (AWS NLB IP targets) instead of nodes: each backend name of Active
	// and Draining maps to the Pod address a VIP port sends to. A new flow
	// is DNATed to one Active target and masqueraded to the LB's own
	// address, which is the NLB's default for IP targets over TCP (client
	// IP preservation off: AWS NLB guide, "Edit target group attributes",
	// Client IP preservation), and conntrack keeps it on that target. A
	// packet of a flow whose target is neither Active nor Draining meets
	// CloseAction. Only TCP ports are sent (the Pod targets' ports are
	// read for TCP only).
	Targets map[string]map[DPPort]netip.AddrPort
}

// NAT reports whether the service sends to Pod targets through NAT.
func (s DPService) NAT() bool { return s.Targets != nil }

// DPConfig is the whole desired data plane.
type DPConfig struct {
	Nodes map[string]netip.Addr // every node any service names -> its address
	// PodCIDRs routes each node's Pod range (spec.podCIDR) through that node,
	// so the LB reaches Pod IPs directly (Pod targets, as a VPC routes them
	// on a cloud); kindnet gives every node its range.
	PodCIDRs map[netip.Prefix]netip.Addr
	Services []DPService  // L4 services
	VIPs     []netip.Addr // every LB address to answer for (L4 and profiles.L7)
}

// Dataplane programs direct-server-return forwarding in the network namespace
// it runs in: VIPs on lo (so the LB answers ARP for them), an nftables table
// that picks a node per new flow and remembers it, and one policy-routing table
// per node that sends marked packets to that node unchanged. See doc.go.
type Dataplane struct {
	run   Runner
	dev   string
	table string

	mu       sync.Mutex
	nodeIDs  map[string]uint16
	svcIDs   map[string]uint16
	chains   map[uint16]bool // service chains present in the kernel
	routes   map[uint16]netip.Addr
	podNets  map[netip.Prefix]netip.Addr
	vips     map[netip.Addr]bool
	seed     uint32
	prepared bool
	announce func(netip.Addr) error
	fresh    []netip.Addr // VIPs added by this Apply, announced after the rules are in
	applied  string       // the last ruleset the kernel accepted
}

// DataplaneOption configures a Dataplane.
type DataplaneOption func(*Dataplane)

// WithAnnounce sets how a newly added VIP is announced on the network
// (production: GratuitousARP on dev). Without it nothing is announced.
func WithAnnounce(f func(netip.Addr) error) DataplaneOption {
	return func(d *Dataplane) { d.announce = f }
}

// NewDataplane returns a data plane that forwards through interface dev.
func NewDataplane(run Runner, dev string, opts ...DataplaneOption) *Dataplane {
	d := &Dataplane{run: run, dev: dev, table: "zerodrop_lb", nodeIDs: map[string]uint16{}, svcIDs: map[string]uint16{},
		chains: map[uint16]bool{}, routes: map[uint16]netip.Addr{}, podNets: map[netip.Prefix]netip.Addr{}, vips: map[netip.Addr]bool{}, seed: 0x5a17d20b}
	for _, o := range opts {
		o(d)
	}
	return d
}

const (
	rulePref      = 100  // fwmark rules, ahead of the local table
	localPref     = 200  // where the local table moves to
	tableBase     = 1000 // routing table of node id N is tableBase+N
	nodeMarkMask  = 0xffff
	maxIDs        = 0x7fff
	flowTableSize = 1 << 20
)

// Prepare sets the sysctls DSR needs and moves the local routing table behind
// the fwmark rules, and starts from an empty nftables table. Run once at start.
func (d *Dataplane) Prepare(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sysctls := []string{
		"net.ipv4.ip_forward=1",
		// The LB sends packets out of the interface they came in on: no redirects,
		// and no reverse-path filtering of client addresses.
		"net.ipv4.conf.all.send_redirects=0",
		"net.ipv4.conf.default.send_redirects=0",
		"net.ipv4.conf." + d.dev + ".send_redirects=0",
		"net.ipv4.conf.all.rp_filter=0",
		"net.ipv4.conf.default.rp_filter=0",
		"net.ipv4.conf." + d.dev + ".rp_filter=0",
	}
	for _, s := range sysctls {
		if _, err := d.run(ctx, "", "sysctl", "-q", "-w", s); err != nil {
			return fmt.Errorf("data plane: set %s: %w", s, err)
		}
	}
	// A packet to a VIP is local by the local table; marked ones must be routed
	// to their node first, so the fwmark rules go ahead of it.
	rules, err := d.rules(ctx)
	if err != nil {
		return err
	}
	hasLocalAt := map[int]bool{}
	for _, r := range rules {
		if r.Table == "local" {
			hasLocalAt[r.Priority] = true
		}
	}
	if !hasLocalAt[localPref] {
		if _, err := d.run(ctx, "", "ip", "rule", "add", "pref", fmt.Sprint(localPref), "lookup", "local"); err != nil {
			return fmt.Errorf("data plane: move local table: %w", err)
		}
	}
	if hasLocalAt[0] {
		if _, err := d.run(ctx, "", "ip", "rule", "del", "pref", "0", "lookup", "local"); err != nil {
			return fmt.Errorf("data plane: move local table: %w", err)
		}
	}
	// Start from nothing: stale rules of a previous run would route to old nodes.
	for _, r := range rules {
		if r.Priority == rulePref {
			_, _ = d.run(ctx, "", "ip", "rule", "del", "pref", fmt.Sprint(rulePref), "fwmark", r.Fwmark, "lookup", r.Table)
		}
	}
	_, _ = d.run(ctx, "", "nft", "delete", "table", "ip", d.table)
	_, _ = d.run(ctx, "", "nft", "delete", "table", "ip", d.natTable())
	d.applied = ""
	d.prepared = true
	return nil
}

type ipRule struct {
	Priority int    `json:"priority"`
	Table    string `json:"table"`
	Fwmark   string `json:"fwmark"`
	Fwmask   string `json:"fwmask"`
}

func (d *Dataplane) rules(ctx context.Context) ([]ipRule, error) {
	out, err := d.run(ctx, "", "ip", "-j", "rule", "show")
	if err != nil {
		return nil, fmt.Errorf("data plane: list ip rules: %w", err)
	}
	var rs []ipRule
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Errorf("data plane: parse `ip -j rule show`: %w", err)
	}
	for i := range rs {
		if rs[i].Fwmask != "" {
			rs[i].Fwmark += "/" + rs[i].Fwmask
		}
	}
	return rs, nil
}

// Apply makes the kernel match cfg. The nftables part is one `nft -f`
// transaction: packets see either the old or the new rules, and the flow map
// (which node each established flow is on) survives untouched.
func (d *Dataplane) Apply(ctx context.Context, cfg DPConfig) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.prepared {
		return fmt.Errorf("data plane: Apply before Prepare")
	}
	if err := d.assignIDs(cfg); err != nil {
		return err
	}
	// Routes first: a new mark must never be set before its route exists.
	if err := d.applyRoutes(ctx, cfg); err != nil {
		return err
	}
	if err := d.applyVIPs(ctx, cfg, true); err != nil {
		return err
	}
	script, chains := d.render(cfg)
	// The controller syncs on every informer event (node heartbeats every
	// few seconds); an unchanged ruleset is not sent to the kernel again, so
	// packets never race a needless transaction.
	if script != d.applied {
		if _, err := d.run(ctx, script, "nft", "-f", "-"); err != nil {
			d.applied = ""
			return fmt.Errorf("data plane: apply nftables ruleset: %w\n%s", err, script)
		}
		d.applied = script
	}
	d.chains = chains
	if d.announce != nil {
		for _, v := range d.fresh {
			// Best effort: a host with a stale entry otherwise recovers on its own
			// once the entry fails.
			_ = d.announce(v)
		}
	}
	d.fresh = nil
	return d.applyVIPs(ctx, cfg, false)
}

func (d *Dataplane) assignIDs(cfg DPConfig) error {
	next := func(used map[uint16]bool) (uint16, error) {
		for i := uint16(1); i <= maxIDs; i++ {
			if !used[i] {
				return i, nil
			}
		}
		return 0, fmt.Errorf("data plane: more than %d ids in use", maxIDs)
	}
	used := map[uint16]bool{}
	for _, id := range d.nodeIDs {
		used[id] = true
	}
	names := make([]string, 0, len(cfg.Nodes))
	for n := range cfg.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := d.nodeIDs[n]; ok {
			continue
		}
		id, err := next(used)
		if err != nil {
			return err
		}
		used[id] = true
		d.nodeIDs[n] = id
	}
	used = map[uint16]bool{}
	for _, id := range d.svcIDs {
		used[id] = true
	}
	for _, s := range cfg.Services {
		if _, ok := d.svcIDs[s.Key]; ok {
			continue
		}
		id, err := next(used)
		if err != nil {
			return err
		}
		used[id] = true
		d.svcIDs[s.Key] = id
	}
	return nil
}

// Mark is the packet mark of flows of service svc on node: service id in the
// high 16 bits (so the live map can tell services apart), node id in the low
// 16 (which the fwmark rule routes on).
func Mark(svc, node uint16) uint32 { return uint32(svc)<<16 | uint32(node) }

func (d *Dataplane) applyRoutes(ctx context.Context, cfg DPConfig) error {
	want := map[uint16]netip.Addr{}
	for n, ip := range cfg.Nodes {
		want[d.nodeIDs[n]] = ip
	}
	for id, ip := range want {
		if d.routes[id] == ip {
			continue
		}
		table := fmt.Sprint(tableBase + int(id))
		if _, err := d.run(ctx, "", "ip", "route", "replace", "default", "via", ip.String(), "dev", d.dev, "onlink", "table", table); err != nil {
			return fmt.Errorf("data plane: route to node %s: %w", ip, err)
		}
		if _, ok := d.routes[id]; !ok {
			if _, err := d.run(ctx, "", "ip", "rule", "add", "pref", fmt.Sprint(rulePref), "fwmark", fmt.Sprintf("%#x/%#x", id, nodeMarkMask), "lookup", table); err != nil {
				return fmt.Errorf("data plane: rule for node %s: %w", ip, err)
			}
		}
		d.routes[id] = ip
	}
	// Routes of nodes that left stay: a draining flow may still carry their
	// mark until it expires, and an id is never reused for another node.
	return d.applyPodRoutes(ctx, cfg)
}

// applyPodRoutes keeps one main-table route per node's Pod range. A range
// whose node left is removed: its Pods are gone with it.
func (d *Dataplane) applyPodRoutes(ctx context.Context, cfg DPConfig) error {
	for cidr, via := range cfg.PodCIDRs {
		if d.podNets[cidr] == via {
			continue
		}
		if _, err := d.run(ctx, "", "ip", "route", "replace", cidr.String(), "via", via.String(), "dev", d.dev, "onlink"); err != nil {
			return fmt.Errorf("data plane: route Pod range %s via node %s: %w", cidr, via, err)
		}
		d.podNets[cidr] = via
	}
	for cidr := range d.podNets {
		if _, ok := cfg.PodCIDRs[cidr]; ok {
			continue
		}
		if _, err := d.run(ctx, "", "ip", "route", "del", cidr.String()); err != nil {
			return fmt.Errorf("data plane: remove route of Pod range %s: %w", cidr, err)
		}
		delete(d.podNets, cidr)
	}
	return nil
}

// applyVIPs adds missing addresses (add=true, before rules use them) or
// removes stale ones (add=false, after the rules stopped using them).
func (d *Dataplane) applyVIPs(ctx context.Context, cfg DPConfig, add bool) error {
	want := map[netip.Addr]bool{}
	for _, v := range cfg.VIPs {
		want[v] = true
	}
	if add {
		for v := range want {
			if d.vips[v] {
				continue
			}
			if _, err := d.run(ctx, "", "ip", "addr", "replace", v.String()+"/32", "dev", "lo"); err != nil {
				return fmt.Errorf("data plane: add VIP %s: %w", v, err)
			}
			d.vips[v] = true
			d.fresh = append(d.fresh, v)
		}
		return nil
	}
	for v := range d.vips {
		if want[v] {
			continue
		}
		if _, err := d.run(ctx, "", "ip", "addr", "del", v.String()+"/32", "dev", "lo"); err != nil {
			return fmt.Errorf("data plane: remove VIP %s: %w", v, err)
		}
		delete(d.vips, v)
	}
	return nil
}

// render returns the nft script for cfg and the service chains it leaves.
func (d *Dataplane) render(cfg DPConfig) (string, map[uint16]bool) {
	// Sorted, so the same desired state always renders the same script.
	cfg.Services = append([]DPService(nil), cfg.Services...)
	sort.Slice(cfg.Services, func(i, j int) bool { return cfg.Services[i].Key < cfg.Services[j].Key })
	cfg.VIPs = append([]netip.Addr(nil), cfg.VIPs...)
	sort.Slice(cfg.VIPs, func(i, j int) bool { return cfg.VIPs[i].Less(cfg.VIPs[j]) })
	var b strings.Builder
	t := "ip " + d.table
	// A flow is the 4-tuple in the map of its protocol (flows for TCP,
	// uflows for UDP); th (the transport header) reads the ports of both.
	// One map keyed by the 5-tuple would do, but nft 1.0.6 (Debian 12, the
	// LB image's base) aborts on a dynamic-set update with a five-part key
	// and a data value (netlink_gen_expr: "dreg < ctx->reg_low").
	key := "ip saddr . th sport . ip daddr . th dport"
	flowMaps := []struct {
		proto Proto
		name  string
	}{{ProtoTCP, "flows"}, {ProtoUDP, "uflows"}}
	fmt.Fprintf(&b, "add table %s\n", t)
	for _, m := range flowMaps {
		fmt.Fprintf(&b, "add map %s %s { type ipv4_addr . inet_service . ipv4_addr . inet_service : mark; flags dynamic,timeout; timeout 10m; size %d; }\n", t, m.name, flowTableSize)
	}
	fmt.Fprintf(&b, "add map %s vips { type ipv4_addr . inet_proto . inet_service : verdict; }\n", t)
	fmt.Fprintf(&b, "add map %s live { type mark : verdict; }\n", t)
	fmt.Fprintf(&b, "add set %s vipaddrs { type ipv4_addr; }\n", t)
	fmt.Fprintf(&b, "add chain %s raw { type filter hook prerouting priority raw; policy accept; }\n", t)
	fmt.Fprintf(&b, "add chain %s pre { type filter hook prerouting priority mangle; policy accept; }\n", t)
	for _, c := range []string{"raw", "pre"} {
		fmt.Fprintf(&b, "flush chain %s %s\n", t, c)
	}
	fmt.Fprintf(&b, "flush map %s vips\nflush map %s live\nflush set %s vipaddrs\n", t, t, t)

	chains := map[uint16]bool{}
	for _, s := range cfg.Services {
		if !s.NAT() { // NAT services have their chains in the NAT table
			chains[d.svcIDs[s.Key]] = true
		}
	}
	var stale []int
	for id := range d.chains {
		if !chains[id] {
			stale = append(stale, int(id))
		}
	}
	sort.Ints(stale)
	for _, id := range stale {
		for _, suffix := range []string{"", "_new", "_keep"} {
			fmt.Fprintf(&b, "delete chain %s svc_%d%s\n", t, id, suffix)
		}
	}

	// Flows only go one way through the LB (replies leave the nodes straight
	// to the client), so conntrack would call every packet after the SYN
	// invalid: VIP traffic is not tracked; the flows map is the state.
	fmt.Fprintf(&b, "add rule %s raw ip daddr @vipaddrs notrack\n", t)
	fmt.Fprintf(&b, "add rule %s pre ip daddr . meta l4proto . th dport vmap @vips\n", t)
	vipSeen := map[netip.Addr]bool{}
	for _, s := range cfg.Services {
		if s.NAT() {
			vipSeen[s.VIP] = true // conntrack is the state of NAT flows (renderNAT)
		}
	}
	for _, v := range cfg.VIPs {
		if !vipSeen[v] {
			vipSeen[v] = true
			fmt.Fprintf(&b, "add element %s vipaddrs { %s }\n", t, v)
		}
	}
	for _, s := range cfg.Services {
		if s.NAT() {
			continue
		}
		id := d.svcIDs[s.Key]
		c := fmt.Sprintf("svc_%d", id)
		timeout := int(s.IdleTimeout / time.Second)
		if timeout < 1 {
			timeout = 600
		}
		closed := "meta mark set 0x0 accept" // to the local stack, which has no socket there: RST from the VIP
		if s.CloseAction == profiles.CloseDrop {
			closed = "drop"
		}
		noBackends := "meta mark set 0x0 accept"
		if s.NoBackends == profiles.CloseDrop {
			noBackends = "drop"
		}
		for _, suffix := range []string{"", "_new", "_keep"} {
			fmt.Fprintf(&b, "add chain %s %s%s\nflush chain %s %s%s\n", t, c, suffix, t, c, suffix)
		}
		fmt.Fprintf(&b, "# %s %s ports %v active %v draining %v client-ip %t\n", s.Key, s.VIP, s.Ports, s.Active, s.Draining, s.ClientIP)
		// New TCP connection (SYN without ACK): forget any old flow on the
		// same 4-tuple, pick an active node by hash, remember it.
		fmt.Fprintf(&b, "add rule %s %s tcp flags & (fin | syn | rst | ack) == syn jump %s_new\n", t, c, c)
		// A known flow carries its node's mark (a failed lookup leaves the
		// packet's mark 0, which no node has); a live node keeps it.
		for _, m := range flowMaps {
			fmt.Fprintf(&b, "add rule %s %s meta l4proto %s meta mark set %s map @%s\n", t, c, m.proto, key, m.name)
		}
		fmt.Fprintf(&b, "add rule %s %s meta mark vmap @live\n", t, c)
		// UDP has no handshake and nothing to reset: a datagram of no known
		// flow, or of a flow whose node stopped taking it, starts a new flow
		// on an active node (a drained node keeps its flows until the drain
		// ends, through @live above).
		fmt.Fprintf(&b, "add rule %s %s meta l4proto %s jump %s_new\n", t, c, ProtoUDP, c)
		fmt.Fprintf(&b, "add rule %s %s %s\n", t, c, closed)

		for _, m := range flowMaps {
			fmt.Fprintf(&b, "add rule %s %s_new meta l4proto %s delete @%s { %s : meta mark }\n", t, c, m.proto, m.name, key)
		}
		if len(s.Active) == 0 {
			fmt.Fprintf(&b, "add rule %s %s_new %s\n", t, c, noBackends)
		} else {
			var elems []string
			for i, n := range s.Active {
				elems = append(elems, fmt.Sprintf("%d : %#08x", i, Mark(id, d.nodeIDs[n])))
			}
			hash := key
			if s.ClientIP {
				hash = "ip saddr"
			}
			fmt.Fprintf(&b, "add rule %s %s_new meta mark set jhash %s mod %d seed %#x map { %s }\n", t, c, hash, len(s.Active), d.seed, strings.Join(elems, ", "))
			for _, m := range flowMaps {
				fmt.Fprintf(&b, "add rule %s %s_new meta l4proto %s add @%s { %s timeout %ds : meta mark }\n", t, c, m.proto, m.name, key, timeout)
			}
			fmt.Fprintf(&b, "add rule %s %s_new accept\n", t, c)
		}
		for _, m := range flowMaps {
			fmt.Fprintf(&b, "add rule %s %s_keep meta l4proto %s update @%s { %s timeout %ds : meta mark }\n", t, c, m.proto, m.name, key, timeout)
		}
		fmt.Fprintf(&b, "add rule %s %s_keep accept\n", t, c)

		for _, p := range s.Ports {
			fmt.Fprintf(&b, "add element %s vips { %s . %s . %d : jump %s }\n", t, s.VIP, p.Proto, p.Port, c)
		}
		for _, n := range append(append([]string(nil), s.Active...), s.Draining...) {
			fmt.Fprintf(&b, "add element %s live { %#08x : jump %s_keep }\n", t, Mark(id, d.nodeIDs[n]), c)
		}
	}
	d.renderNAT(&b, cfg.Services)
	return b.String(), chains
}

// natTable is the nftables table of the NAT services, next to d.table.
func (d *Dataplane) natTable() string { return d.table + "_nat" }

// renderNAT writes the NAT services' table (Pod targets behind an L4 LB),
// rebuilt whole in the same transaction as the main table: its chains
// follow the targets, and deleting them touches no established flow, whose
// translation lives in conntrack. A new flow's first packet picks an
// Active target with jhash over its 4-tuple and is DNATed to it; the LB
// masquerades it, so the Pod answers the LB and conntrack undoes both
// translations on the way back. In forward, a packet of a flow whose
// target is no longer live (Active or Draining for its service) meets the
// service's closeAction: a RST to the client for reset (nf_reject attaches
// the flow's conntrack entry, so the RST leaves from the VIP) or a drop.
func (d *Dataplane) renderNAT(b *strings.Builder, services []DPService) {
	t := "ip " + d.natTable()
	fmt.Fprintf(b, "add table %s\ndelete table %s\nadd table %s\n", t, t, t)
	var nat []DPService
	for _, s := range services {
		if s.NAT() {
			nat = append(nat, s)
		}
	}
	if len(nat) == 0 {
		return
	}
	flow := "ip saddr . th sport . ip daddr . th dport"
	fmt.Fprintf(b, "add set %s natvips { type ipv4_addr; }\n", t)
	fmt.Fprintf(b, "add set %s live { type ipv4_addr . ipv4_addr . inet_proto . inet_service; }\n", t)
	fmt.Fprintf(b, "add chain %s pre { type nat hook prerouting priority dstnat; policy accept; }\n", t)
	fmt.Fprintf(b, "add chain %s post { type nat hook postrouting priority srcnat; policy accept; }\n", t)
	fmt.Fprintf(b, "add chain %s established { type filter hook forward priority filter; policy accept; }\n", t)
	fmt.Fprintf(b, "add chain %s closed_reset\nadd chain %s closed_drop\n", t, t)
	fmt.Fprintf(b, "add rule %s closed_reset meta l4proto tcp reject with tcp reset\nadd rule %s closed_reset drop\nadd rule %s closed_drop drop\n", t, t, t)
	fmt.Fprintf(b, "add rule %s post ct status dnat ct original ip daddr @natvips masquerade\n", t)
	for _, s := range nat {
		id := d.svcIDs[s.Key]
		closed := "closed_reset"
		if s.CloseAction == profiles.CloseDrop {
			closed = "closed_drop"
		}
		noBackends := "accept" // to the local stack, which has no socket on VIP:port: RST from the VIP
		if s.NoBackends == profiles.CloseDrop {
			noBackends = "drop"
		}
		fmt.Fprintf(b, "# %s %s ports %v active %v draining %v (Pod targets, NAT)\n", s.Key, s.VIP, s.Ports, s.Active, s.Draining)
		fmt.Fprintf(b, "add element %s natvips { %s }\n", t, s.VIP)
		fmt.Fprintf(b, "add rule %s established ct direction original ct status dnat ct original ip daddr %s ct original ip daddr . ip daddr . meta l4proto . th dport != @live goto %s\n", t, s.VIP, closed)
		for _, p := range s.Ports {
			if p.Proto != ProtoTCP {
				continue
			}
			c := fmt.Sprintf("nat_%d_%d", id, p.Port)
			fmt.Fprintf(b, "add chain %s %s\n", t, c)
			fmt.Fprintf(b, "add rule %s pre ip daddr %s meta l4proto %s th dport %d goto %s\n", t, s.VIP, p.Proto, p.Port, c)
			var to []netip.AddrPort
			for _, n := range s.Active {
				if ap, ok := s.Targets[n][p]; ok {
					to = append(to, ap)
				}
			}
			for _, n := range append(append([]string(nil), s.Active...), s.Draining...) {
				if ap, ok := s.Targets[n][p]; ok {
					fmt.Fprintf(b, "add element %s live { %s . %s . %s . %d }\n", t, s.VIP, ap.Addr(), p.Proto, ap.Port())
				}
			}
			if len(to) == 0 {
				fmt.Fprintf(b, "add rule %s %s %s\n", t, c, noBackends)
				continue
			}
			var elems []string
			for i, ap := range to {
				tc := fmt.Sprintf("%s_%d", c, i)
				fmt.Fprintf(b, "add chain %s %s\nadd rule %s %s meta l4proto %s dnat to %s\n", t, tc, t, tc, p.Proto, ap)
				elems = append(elems, fmt.Sprintf("%d : goto %s", i, tc))
			}
			hash := flow
			if s.ClientIP {
				hash = "ip saddr"
			}
			fmt.Fprintf(b, "add rule %s %s jhash %s mod %d seed %#x vmap { %s }\n", t, c, hash, len(to), d.seed, strings.Join(elems, ", "))
		}
	}
}

// Close removes what the data plane added: the nftables table, the fwmark
// rules and their routing tables, and the VIPs. The local table stays where
// Prepare moved it (it still comes first for unmarked packets).
func (d *Dataplane) Close(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []string
	if _, err := d.run(ctx, "", "nft", "delete", "table", "ip", d.table); err != nil && d.prepared {
		errs = append(errs, err.Error())
	}
	_, _ = d.run(ctx, "", "nft", "delete", "table", "ip", d.natTable()) // absent when no NAT service ever ran
	for id := range d.routes {
		table := fmt.Sprint(tableBase + int(id))
		_, _ = d.run(ctx, "", "ip", "rule", "del", "pref", fmt.Sprint(rulePref), "fwmark", fmt.Sprintf("%#x/%#x", id, nodeMarkMask), "lookup", table)
		_, _ = d.run(ctx, "", "ip", "route", "flush", "table", table)
	}
	d.routes = map[uint16]netip.Addr{}
	for v := range d.vips {
		_, _ = d.run(ctx, "", "ip", "addr", "del", v.String()+"/32", "dev", "lo")
	}
	d.vips = map[netip.Addr]bool{}
	d.chains = map[uint16]bool{}
	if len(errs) > 0 {
		return fmt.Errorf("data plane: close: %s", strings.Join(errs, "; "))
	}
	return nil
}
