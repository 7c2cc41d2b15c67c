// Package router runs the upstream router of MetalLB's BGP mode next to a
// kind cluster: FRR (Debian's package, clusters/images/build-router.sh) in
// its own container on the cluster's docker network. The nodes' MetalLB
// speakers peer with it, it installs the routes they advertise into its
// kernel as ECMP multipath routes, and the host reaches the BGP address
// pool through it (one host route), so every request the load generator
// sends to a BGP Service's address crosses a real router that hashes its
// flow onto one of the nodes that advertise it. Its knobs are the ones
// that change what a node's withdrawal does to established flows: the
// kernel's multipath hash policy and its kind of nexthop group.
package router

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/internal/dockercli"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// Label marks the router container with the kind cluster it serves, so
// Remove finds it.
const Label = "dev.zerodrop.router.cluster"

// Labels of the router container with its settings (Find).
const (
	labelPool    = "dev.zerodrop.router.pool"
	labelASN     = "dev.zerodrop.router.asn"
	labelPeerASN = "dev.zerodrop.router.peer-asn"
	labelHash    = "dev.zerodrop.router.hash"
	labelHold    = "dev.zerodrop.router.hold-time"
	labelGroups  = "dev.zerodrop.router.groups"
)

// VersionLabel is the image label with the FRR package's version (set by
// clusters/images/build-router.sh).
const VersionLabel = "dev.zerodrop.router.frr-version"

// HashPolicy is the kernel's ECMP hash (net.ipv4.fib_multipath_hash_policy,
// Linux Documentation/networking/ip-sysctl.rst): which fields of a packet
// pick its nexthop among a multipath route's.
type HashPolicy int

const (
	// HashL3 hashes source and destination address only (the kernel's
	// default, 0): every connection of one client to one address takes
	// the same nexthop.
	HashL3 HashPolicy = 0
	// HashL4 hashes the 5-tuple (1): a client's connections spread over
	// the nexthops.
	HashL4 HashPolicy = 1
)

func (h HashPolicy) String() string {
	if h == HashL4 {
		return "l4"
	}
	return "l3"
}

// ParseHashPolicy reads "l3" or "l4".
func ParseHashPolicy(s string) (HashPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "l3", "":
		return HashL3, nil
	case "l4":
		return HashL4, nil
	}
	return 0, fmt.Errorf("router hash policy %q: want l3 (source and destination address) or l4 (the 5-tuple)", s)
}

// GroupType is how the router's kernel spreads flows over a route's
// nexthops (Linux Documentation/networking/nexthop-group-resilient.rst).
type GroupType int

const (
	// GroupHashThreshold is the kernel's multipath route as FRR 8.4's zebra
	// installs it: each nexthop owns a contiguous range of the hash space
	// (RFC 2992), so when one leaves or comes the ranges are recomputed
	// and part of every other nexthop's flows move too.
	GroupHashThreshold GroupType = iota
	// GroupResilient puts each route behind a resilient nexthop group, a
	// table of buckets: a nexthop that leaves gives up only its own
	// buckets, and one that comes takes only buckets idle for
	// ResilientIdle, so established flows to the nodes that stay stay.
	// FRR 8.4 installs no such group for a BGP route, so a loop in the
	// router (resilient.sh) mirrors FRR's routes into one.
	GroupResilient
)

// The resilient groups' parameters (ip-nexthop(8) RESILIENT_ARGS).
const (
	// ResilientBuckets is the size of each group's bucket table; 128
	// buckets spread three to sixteen nodes within a bucket of their share.
	ResilientBuckets = 128
	// ResilientIdle is how long a bucket must carry no packet before it
	// may move to a node that came (a kept-alive connection idle longer
	// than this may move: its next request is reset).
	ResilientIdle = 10 * time.Second
	// resilientTable is the routing table of the mirror, looked up first
	// by traffic arriving on the cluster's network (resilient.sh).
	resilientTable = 200
)

// Where the router keeps the mirror's script and its log of every change.
const (
	resilientPath = "/usr/local/sbin/zerodrop-resilient"
	resilientLog  = "/var/log/zerodrop-resilient.log"
)

// resilientScript mirrors FRR's routes into resilient groups.
//
//go:embed resilient.sh
var resilientScript string

func (g GroupType) String() string {
	if g == GroupResilient {
		return "resilient"
	}
	return "hash-threshold"
}

// ParseGroupType reads "hash-threshold" or "resilient".
func ParseGroupType(s string) (GroupType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "hash-threshold", "":
		return GroupHashThreshold, nil
	case "resilient":
		return GroupResilient, nil
	}
	return 0, fmt.Errorf("router ECMP groups %q: want hash-threshold (the kernel's multipath route, as FRR installs it) or resilient (resilient nexthop groups)", s)
}

// Tuning is what the router can be set to that changes what a node's
// coming or going does to established flows.
type Tuning struct {
	Hash   HashPolicy
	Groups GroupType
	// HoldTime is the BGP hold time the router offers its peers (the
	// session's is the lower of both sides'; MetalLB's speaker offers 90 s
	// by default, metallb v0.15.2 BGPPeer holdTime); zero keeps FRR's
	// default (180 s with "frr defaults traditional"). A peer that goes
	// silent (its machine off) keeps its routes until the hold time ends.
	HoldTime time.Duration
}

// Options say how to run the router.
type Options struct {
	Cluster string // kind cluster name
	// Instance names one of several routers of a cluster, one per BGP
	// implementation (its speakers peer from the nodes' addresses, and a
	// peer address has one session): "" is MetalLB's, the default.
	Instance string
	Network  string // docker network, default "kind"
	Image    string // the router image (build-router.sh); never pulled
	// ASN is the router's autonomous system, PeerASN the speakers' (eBGP
	// between them, so every node's route is a path of equal length).
	ASN, PeerASN uint32
	// Pool is the address range the speakers advertise in BGP mode; the
	// host routes it through the router.
	Pool netip.Prefix
	Tuning
	Timeout    time.Duration // for each wait; default 1 min
	Progress   func(string)
	HostRoutes HostRoutes // default: the host's ip(8)
}

// HostRoutes changes the host's routing table (the real one runs ip(8)).
type HostRoutes interface {
	Replace(ctx context.Context, prefix netip.Prefix, via netip.Addr) error
	Delete(ctx context.Context, prefix netip.Prefix) error
}

// Router is a running router.
type Router struct {
	Container    string
	IP           netip.Addr
	ASN, PeerASN uint32
	Pool         netip.Prefix
	Tuning
	// FRRVersion is the FRR package's version in the image.
	FRRVersion string
}

// ContainerName is the router container of a cluster: instance "" (its
// first, MetalLB's) is "<cluster>-router", another "<cluster>-router-<instance>".
func ContainerName(cluster, instance string) string {
	if instance == "" {
		return cluster + "-router"
	}
	return cluster + "-router-" + instance
}

func (o *Options) defaults() {
	if o.Network == "" {
		o.Network = "kind"
	}
	if o.ASN == 0 {
		o.ASN = 64512
	}
	if o.PeerASN == 0 {
		o.PeerASN = 64513
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.HostRoutes == nil {
		o.HostRoutes = ipRoutes{}
	}
}

// Start runs the router on the cluster's network (replacing one left
// there), starts FRR with the configuration Config renders, and routes
// the pool from the host through it. On error nothing is left behind.
func Start(ctx context.Context, o Options) (*Router, error) {
	o.defaults()
	if o.Cluster == "" || o.Image == "" || !o.Pool.IsValid() {
		return nil, fmt.Errorf("router: cluster name, image and address pool are required")
	}
	ver, err := dockercli.Run(ctx, nil, "image", "inspect", "-f", fmt.Sprintf("{{index .Config.Labels %q}}", VersionLabel), o.Image)
	if err != nil {
		return nil, fmt.Errorf("router: image %s is not in the local Docker (build it with clusters/images/build-router.sh): %w", o.Image, err)
	}
	name := ContainerName(o.Cluster, o.Instance)
	_, _ = dockercli.Run(ctx, nil, "rm", "-f", name)
	ok := false
	defer func() {
		if !ok {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = removeOne(cctx, name, o.Pool, o.HostRoutes)
		}
	}()
	// Privileged: FRR's zebra programs the container's routing table and
	// the hash policy is a sysctl of its network namespace.
	if _, err := dockercli.Run(ctx, nil, "run", "-d", "--name", name, "--hostname", name, "--network", o.Network,
		"--privileged", "--restart", "no", "--label", Label+"="+o.Cluster,
		// What Find needs to know the router again from another process.
		"--label", labelPool+"="+o.Pool.String(), "--label", labelASN+"="+fmt.Sprint(o.ASN),
		"--label", labelPeerASN+"="+fmt.Sprint(o.PeerASN), "--label", labelHash+"="+o.Hash.String(),
		"--label", labelHold+"="+o.HoldTime.String(), "--label", labelGroups+"="+o.Groups.String(), o.Image); err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	ipStr, err := dockercli.Run(ctx, nil, "inspect", "-f", fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}", o.Network), name)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(ipStr))
	if err != nil {
		return nil, fmt.Errorf("router: container %s has no address on network %s (%q)", name, o.Network, ipStr)
	}
	subnet, err := dockercli.NetworkSubnet(ctx, o.Network)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	r := &Router{Container: name, IP: ip, ASN: o.ASN, PeerASN: o.PeerASN, Pool: o.Pool, Tuning: o.Tuning, FRRVersion: strings.TrimSpace(ver)}
	conf, err := Config(r, subnet)
	if err != nil {
		return nil, err
	}
	// A router does not tell its clients to bypass it: with redirects
	// on, a host that accepts them would send to one node directly and
	// no flow would cross the router's ECMP again.
	sysctls := []string{"sysctl", "-w", "net.ipv4.ip_forward=1", fmt.Sprintf("net.ipv4.fib_multipath_hash_policy=%d", int(o.Hash)),
		"net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.eth0.send_redirects=0"}
	type step struct {
		what, stdin string
		args        []string
	}
	steps := []step{
		{"forwarding, redirects and hash policy", "", sysctls},
		{"/etc/frr/daemons", "", []string{"sh", "-c", Daemons}},
		{"/etc/frr/frr.conf", conf, []string{"sh", "-c", "cat > /etc/frr/frr.conf && chown frr:frr /etc/frr/frr.conf"}},
		{"FRR", "", []string{"/usr/lib/frr/frrinit.sh", "start"}},
	}
	if o.Groups == GroupResilient {
		// Two execs: a loop started in the same `docker exec -i` that
		// wrote the script never starts (tried: its log stays empty).
		steps = append(steps,
			step{"the resilient groups' loop", resilientScript, []string{"sh", "-c", "cat > " + resilientPath + " && chmod 755 " + resilientPath}},
			step{"the resilient groups' loop", "", []string{"sh", "-c", fmt.Sprintf("nohup %s %s %d eth0 %d %d 0 >%s 2>&1 &",
				resilientPath, o.Pool, resilientTable, ResilientBuckets, int(ResilientIdle/time.Second), resilientLog)}})
	}
	for _, s := range steps {
		args := []string{"exec", name}
		var in io.Reader
		if s.stdin != "" {
			args, in = []string{"exec", "-i", name}, strings.NewReader(s.stdin)
		}
		if _, err := dockercli.Run(ctx, in, append(args, s.args...)...); err != nil {
			return nil, fmt.Errorf("router: %s: %w", s.what, err)
		}
	}
	if o.Groups == GroupResilient {
		if err := waitfor.Retry(ctx, "the resilient groups' loop to start in "+name, o.Timeout, 200*time.Millisecond, func(ctx context.Context) error {
			_, err := dockercli.Run(ctx, nil, "exec", name, "grep", "-q", "^[0-9:.]* ready:", resilientLog)
			return err
		}); err != nil {
			log, _ := dockercli.Run(ctx, nil, "exec", name, "cat", resilientLog)
			return nil, fmt.Errorf("router: %w (its log: %s)", err, strings.TrimSpace(log))
		}
	}
	if err := waitfor.Retry(ctx, "FRR's bgpd to answer vtysh in "+name, o.Timeout, time.Second, func(ctx context.Context) error {
		_, err := dockercli.Run(ctx, nil, "exec", name, "vtysh", "-c", "show bgp summary")
		return err
	}); err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	if err := o.HostRoutes.Replace(ctx, o.Pool, ip); err != nil {
		return nil, fmt.Errorf("router: route %s via %s on the host: %w", o.Pool, ip, err)
	}
	o.Progress(fmt.Sprintf("router: %s at %s (%s), host routes %s through it", name, ip, r.Settings(), o.Pool))
	ok = true
	return r, nil
}

// Remove removes every router container of the cluster and the host's
// route through each (for the pool its label names, and for pools, which
// a router that is gone no longer names); none being there is not an
// error.
func Remove(ctx context.Context, cluster string, hr HostRoutes, pools ...netip.Prefix) error {
	if hr == nil {
		hr = ipRoutes{}
	}
	var errs []string
	for _, p := range pools {
		if err := hr.Delete(ctx, p); err != nil {
			errs = append(errs, err.Error())
		}
	}
	out, err := dockercli.Run(ctx, nil, "ps", "-aq", "--filter", "label="+Label+"="+cluster)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	for _, id := range strings.Fields(out) {
		v, _ := dockercli.Run(ctx, nil, "inspect", "-f", fmt.Sprintf("{{index .Config.Labels %q}}", labelPool), id)
		pool, _ := netip.ParsePrefix(strings.TrimSpace(v))
		if err := removeOne(ctx, id, pool, hr); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("router: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeOne removes one router container (by name or id) and the host's
// route for its pool (when valid).
func removeOne(ctx context.Context, container string, pool netip.Prefix, hr HostRoutes) error {
	var errs []error
	if pool.IsValid() {
		errs = append(errs, hr.Delete(ctx, pool))
	}
	if _, err := dockercli.Run(ctx, nil, "rm", "-f", container); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Find returns a running router of a kind cluster, the instance Start
// named (nil, nil when there is none), with the settings Start gave it.
func Find(ctx context.Context, cluster, instance, network string) (*Router, error) {
	if network == "" {
		network = "kind"
	}
	name := ContainerName(cluster, instance)
	out, err := dockercli.Run(ctx, nil, "ps", "-q", "--filter", "name=^"+name+"$", "--filter", "label="+Label+"="+cluster)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	f := fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}",
		network, labelPool, labelASN, labelPeerASN, labelHash, VersionLabel, labelHold, labelGroups)
	info, err := dockercli.Run(ctx, nil, "inspect", "-f", f, name)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return parseFound(name, strings.TrimSpace(info))
}

// parseFound reads Find's inspect line:
// address|pool|asn|peer-asn|hash|version|hold-time|groups (a router
// started before groups were a setting has no such label: hash-threshold).
func parseFound(name, line string) (*Router, error) {
	v := strings.Split(line, "|")
	if len(v) != 8 {
		return nil, fmt.Errorf("router: container %s: unexpected inspect output %q", name, line)
	}
	ip, err := netip.ParseAddr(v[0])
	if err != nil {
		return nil, fmt.Errorf("router: container %s has no address (%q)", name, v[0])
	}
	pool, err := netip.ParsePrefix(v[1])
	if err != nil {
		return nil, fmt.Errorf("router: container %s: label %s %q: %w", name, labelPool, v[1], err)
	}
	asn, err1 := strconv.ParseUint(v[2], 10, 32)
	peer, err2 := strconv.ParseUint(v[3], 10, 32)
	hash, err3 := ParseHashPolicy(v[4])
	hold, err4 := time.ParseDuration(v[6])
	groups, err5 := ParseGroupType(strings.TrimPrefix(v[7], "<no value>"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("router: container %s: labels: %w", name, err)
	}
	return &Router{Container: name, IP: ip, Pool: pool, ASN: uint32(asn), PeerASN: uint32(peer), Tuning: Tuning{Hash: hash, Groups: groups, HoldTime: hold}, FRRVersion: v[5]}, nil
}

// Settings describes the router as a report names it.
func (r *Router) Settings() string {
	hold := "FRR's default hold time"
	if r.HoldTime > 0 {
		hold = "hold time " + r.HoldTime.String()
	}
	groups := "hash-threshold groups"
	if r.Groups == GroupResilient {
		groups = fmt.Sprintf("resilient groups (%d buckets, idle %s)", ResilientBuckets, ResilientIdle)
	}
	return fmt.Sprintf("FRR %s, AS %d, speakers AS %d, ECMP hash %s, %s, %s", r.FRRVersion, r.ASN, r.PeerASN, r.Hash, groups, hold)
}

// Route is the router's route to one address: the nodes it sends to.
type Route struct {
	Dst      netip.Prefix
	Nexthops []netip.Addr // sorted; empty when the router has no route
}

func (r Route) String() string {
	if len(r.Nexthops) == 0 {
		return r.Dst.String() + " unreachable (no route)"
	}
	hops := make([]string, len(r.Nexthops))
	for i, h := range r.Nexthops {
		hops[i] = h.String()
	}
	return r.Dst.String() + " via " + strings.Join(hops, ",")
}

// Routes reads the router's kernel routes within its pool (`ip -j route
// show`), one per destination, with their nexthops: the routes its
// clients' traffic takes (with resilient groups, the mirror's table).
func (r *Router) Routes(ctx context.Context) ([]Route, error) {
	args := []string{"exec", r.Container, "ip", "-j", "route", "show", "root", r.Pool.String()}
	if r.Groups == GroupResilient {
		args = append(args, "table", strconv.Itoa(resilientTable))
	}
	out, err := dockercli.Run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("router: routes: %w", err)
	}
	return ParseRoutes([]byte(out))
}

// ParseRoutes reads `ip -j route show` output: a single-path route has a
// gateway, a multipath one a list of nexthops (ip(8) lists a nexthop
// group's members inline too). Routes of other types (the mirror's throw
// route) send no traffic anywhere and are left out.
func ParseRoutes(b []byte) ([]Route, error) {
	var raw []struct {
		Type     string `json:"type"`
		Dst      string `json:"dst"`
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
		NHID int `json:"nhid"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("router: read ip -j route: %w", err)
	}
	var out []Route
	for _, x := range raw {
		if x.Type != "" && x.Type != "unicast" {
			continue
		}
		dst, err := netip.ParsePrefix(x.Dst)
		if err != nil {
			a, aerr := netip.ParseAddr(x.Dst)
			if aerr != nil {
				return nil, fmt.Errorf("router: route destination %q: %w", x.Dst, err)
			}
			dst = netip.PrefixFrom(a, a.BitLen())
		}
		if x.NHID != 0 && len(x.Nexthops) == 0 && x.Gateway == "" {
			return nil, fmt.Errorf("router: route %s uses kernel nexthop object %d, which this reader does not resolve", dst, x.NHID)
		}
		var hops []netip.Addr
		if x.Gateway != "" {
			x.Nexthops = append(x.Nexthops, struct {
				Gateway string `json:"gateway"`
			}{x.Gateway})
		}
		for _, n := range x.Nexthops {
			a, err := netip.ParseAddr(n.Gateway)
			if err != nil {
				return nil, fmt.Errorf("router: route %s nexthop %q: %w", dst, n.Gateway, err)
			}
			hops = append(hops, a)
		}
		slices.SortFunc(hops, func(a, b netip.Addr) int { return a.Compare(b) })
		// A resilient group lists each node twice (resilient.sh's twins).
		out = append(out, Route{Dst: dst, Nexthops: slices.Compact(hops)})
	}
	return out, nil
}

// ipRoutes is the host's routing table through ip(8).
type ipRoutes struct{}

func (ipRoutes) Replace(ctx context.Context, p netip.Prefix, via netip.Addr) error {
	return runIP(ctx, "route", "replace", p.String(), "via", via.String())
}

func (ipRoutes) Delete(ctx context.Context, p netip.Prefix) error {
	err := runIP(ctx, "route", "del", p.String())
	if err != nil && strings.Contains(err.Error(), "No such process") {
		return nil // no such route: nothing to delete
	}
	return err
}

func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Established counts the router's BGP sessions in state Established
// (`vtysh -c 'show bgp summary json'`).
func (r *Router) Established(ctx context.Context) (int, error) {
	out, err := dockercli.Run(ctx, nil, "exec", r.Container, "vtysh", "-c", "show bgp summary json")
	if err != nil {
		return 0, fmt.Errorf("router: bgp summary: %w", err)
	}
	return parseEstablished([]byte(out))
}

func parseEstablished(b []byte) (int, error) {
	var sum struct {
		IPv4 struct {
			Peers map[string]struct {
				State string `json:"state"`
			} `json:"peers"`
		} `json:"ipv4Unicast"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return 0, fmt.Errorf("router: read bgp summary: %w", err)
	}
	n := 0
	for _, p := range sum.IPv4.Peers {
		if p.State == "Established" {
			n++
		}
	}
	return n, nil
}
