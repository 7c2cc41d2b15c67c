// Package router runs the upstream router of MetalLB's BGP mode next to a
// kind cluster: FRR (Debian's package, clusters/images/build-router.sh) in
// its own container on the cluster's docker network. The nodes' MetalLB
// speakers peer with it, it installs the routes they advertise into its
// kernel as ECMP multipath routes, and the host reaches the BGP address
// pool through it (one host route), so every request the load generator
// sends to a BGP Service's address crosses a real router that hashes its
// flow onto one of the nodes that advertise it. Its knobs are the ones
// that change what a node's withdrawal does to established flows (the
// kernel's multipath hash policy).
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Options say how to run the router.
type Options struct {
	Cluster string // kind cluster name
	Network string // docker network, default "kind"
	Image   string // the router image (build-router.sh); never pulled
	// ASN is the router's autonomous system, PeerASN the speakers' (eBGP
	// between them, so every node's route is a path of equal length).
	ASN, PeerASN uint32
	// Pool is the address range the speakers advertise in BGP mode; the
	// host routes it through the router.
	Pool netip.Prefix
	Hash HashPolicy
	// HoldTime is the BGP hold time the router offers its peers (the
	// session's is the lower of both sides'; MetalLB's speaker offers 90 s
	// by default, metallb v0.15.2 BGPPeer holdTime); zero keeps FRR's
	// default (180 s with "frr defaults traditional"). A peer that goes
	// silent (its machine off) keeps its routes until the hold time ends.
	HoldTime   time.Duration
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
	Hash         HashPolicy
	HoldTime     time.Duration // 0: FRR's default
	// FRRVersion is the FRR package's version in the image.
	FRRVersion string
}

// ContainerName is the router container of a cluster.
func ContainerName(cluster string) string { return cluster + "-router" }

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
	name := ContainerName(o.Cluster)
	_, _ = dockercli.Run(ctx, nil, "rm", "-f", name)
	ok := false
	defer func() {
		if !ok {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = Remove(cctx, o.Cluster, o.Pool, o.HostRoutes)
		}
	}()
	// Privileged: FRR's zebra programs the container's routing table and
	// the hash policy is a sysctl of its network namespace.
	if _, err := dockercli.Run(ctx, nil, "run", "-d", "--name", name, "--hostname", name, "--network", o.Network,
		"--privileged", "--restart", "no", "--label", Label+"="+o.Cluster,
		// What Find needs to know the router again from another process.
		"--label", labelPool+"="+o.Pool.String(), "--label", labelASN+"="+fmt.Sprint(o.ASN),
		"--label", labelPeerASN+"="+fmt.Sprint(o.PeerASN), "--label", labelHash+"="+o.Hash.String(),
		"--label", labelHold+"="+o.HoldTime.String(), o.Image); err != nil {
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
	subnet, err := networkSubnet(ctx, o.Network)
	if err != nil {
		return nil, err
	}
	r := &Router{Container: name, IP: ip, ASN: o.ASN, PeerASN: o.PeerASN, Pool: o.Pool, Hash: o.Hash, HoldTime: o.HoldTime, FRRVersion: strings.TrimSpace(ver)}
	conf, err := Config(r, subnet)
	if err != nil {
		return nil, err
	}
	steps := []struct {
		what  string
		stdin string
		args  []string
	}{
		{"forwarding and hash policy", "", []string{"sysctl", "-w", "net.ipv4.ip_forward=1",
			fmt.Sprintf("net.ipv4.fib_multipath_hash_policy=%d", int(o.Hash))}},
		{"/etc/frr/daemons", "", []string{"sh", "-c", Daemons}},
		{"/etc/frr/frr.conf", conf, []string{"sh", "-c", "cat > /etc/frr/frr.conf && chown frr:frr /etc/frr/frr.conf"}},
		{"FRR", "", []string{"/usr/lib/frr/frrinit.sh", "start"}},
	}
	for _, s := range steps {
		var in *strings.Reader
		args := append([]string{"exec"}, s.args...)
		if s.stdin != "" {
			in = strings.NewReader(s.stdin)
			args = append([]string{"exec", "-i"}, s.args...)
		}
		args = slices.Insert(args, len(args)-len(s.args), name)
		var err error
		if in != nil {
			_, err = dockercli.Run(ctx, in, args...)
		} else {
			_, err = dockercli.Run(ctx, nil, args...)
		}
		if err != nil {
			return nil, fmt.Errorf("router: %s: %w", s.what, err)
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

// Remove removes the cluster's router container and the host's route for
// pool through it; neither being there is not an error.
func Remove(ctx context.Context, cluster string, pool netip.Prefix, hr HostRoutes) error {
	if hr == nil {
		hr = ipRoutes{}
	}
	var errs []string
	if pool.IsValid() {
		if err := hr.Delete(ctx, pool); err != nil {
			errs = append(errs, err.Error())
		}
	}
	out, err := dockercli.Run(ctx, nil, "ps", "-aq", "--filter", "label="+Label+"="+cluster)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	for _, id := range strings.Fields(out) {
		if _, err := dockercli.Run(ctx, nil, "rm", "-f", id); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("router: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Find returns the running router of a kind cluster (nil, nil when there
// is none), with the settings Start gave it.
func Find(ctx context.Context, cluster, network string) (*Router, error) {
	if network == "" {
		network = "kind"
	}
	name := ContainerName(cluster)
	out, err := dockercli.Run(ctx, nil, "ps", "-q", "--filter", "name=^"+name+"$", "--filter", "label="+Label+"="+cluster)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	f := fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}|{{index .Config.Labels %q}}",
		network, labelPool, labelASN, labelPeerASN, labelHash, VersionLabel, labelHold)
	info, err := dockercli.Run(ctx, nil, "inspect", "-f", f, name)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return parseFound(name, strings.TrimSpace(info))
}

// parseFound reads Find's inspect line:
// address|pool|asn|peer-asn|hash|version|hold-time.
func parseFound(name, line string) (*Router, error) {
	v := strings.Split(line, "|")
	if len(v) != 7 {
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
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("router: container %s: labels: %w", name, err)
	}
	return &Router{Container: name, IP: ip, Pool: pool, ASN: uint32(asn), PeerASN: uint32(peer), Hash: hash, HoldTime: hold, FRRVersion: v[5]}, nil
}

// Settings describes the router as a report names it.
func (r *Router) Settings() string {
	hold := "FRR's default hold time"
	if r.HoldTime > 0 {
		hold = "hold time " + r.HoldTime.String()
	}
	return fmt.Sprintf("FRR %s, AS %d, speakers AS %d, ECMP hash %s, %s", r.FRRVersion, r.ASN, r.PeerASN, r.Hash, hold)
}

func networkSubnet(ctx context.Context, network string) (netip.Prefix, error) {
	out, err := dockercli.Run(ctx, nil, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", network)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("router: %w", err)
	}
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil && p.Addr().Is4() {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("router: docker network %s has no IPv4 subnet (%q)", network, out)
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
// show`), one per destination, with their nexthops.
func (r *Router) Routes(ctx context.Context) ([]Route, error) {
	out, err := dockercli.Run(ctx, nil, "exec", r.Container, "ip", "-j", "route", "show", "root", r.Pool.String())
	if err != nil {
		return nil, fmt.Errorf("router: routes: %w", err)
	}
	return ParseRoutes([]byte(out))
}

// ParseRoutes reads `ip -j route show` output: a single-path route has a
// gateway, a multipath one a list of nexthops. FRR is configured without
// kernel nexthop objects (Daemons), so no route names a nexthop id.
func ParseRoutes(b []byte) ([]Route, error) {
	var raw []struct {
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
		out = append(out, Route{Dst: dst, Nexthops: hops})
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
