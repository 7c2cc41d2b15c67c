//go:build e2e

package cloudlb

// The data plane on real kernels, without Docker or kind: network namespaces
// for a client, the LB and two "nodes" on a bridge inside a switch namespace.
// Each node DNATs VIP:80 to a local HTTP server, as kube-proxy DNATs a
// LoadBalancer ingress IP to a local endpoint. Traffic never leaves these
// namespaces. Needs root; run with `go test -tags e2e -run Dataplane ./harness/lb/`.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

const (
	e2eSubnet = "10.213.0.0/24"
	e2eVIP    = "10.213.0.200"
	e2eClient = "10.213.0.100"
	e2eLB     = "10.213.0.2"
)

var e2eNodes = map[string]string{"n1": "10.213.0.11", "n2": "10.213.0.12"}

type topo struct {
	prefix  string
	healthy map[string]*atomic.Bool // node -> healthz answers 200
}

func (tp *topo) ns(role string) string { return tp.prefix + "-" + role }

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTopo builds the namespaces; cleanup removes them even when the test fails.
func newTopo(t *testing.T) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this e2e test creates network namespaces and needs root")
	}
	tp := &topo{prefix: fmt.Sprintf("zdlb%d", os.Getpid()%100000), healthy: map[string]*atomic.Bool{}}
	roles := []string{"sw", "cl", "lb", "n1", "n2"}
	cleanup := func() {
		for _, r := range roles {
			_ = exec.Command("ip", "netns", "del", tp.ns(r)).Run()
		}
	}
	cleanup() // leftovers of a killed run with the same pid
	t.Cleanup(cleanup)
	for _, r := range roles {
		sh(t, "ip", "netns", "add", tp.ns(r))
		sh(t, "ip", "-n", tp.ns(r), "link", "set", "lo", "up")
	}
	sw := tp.ns("sw")
	sh(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "-n", sw, "link", "set", "br0", "up")
	addrs := map[string]string{"cl": e2eClient, "lb": e2eLB, "n1": e2eNodes["n1"], "n2": e2eNodes["n2"]}
	for r, a := range addrs {
		sh(t, "ip", "-n", sw, "link", "add", "v-"+r, "type", "veth", "peer", "name", "eth0", "netns", tp.ns(r))
		sh(t, "ip", "-n", sw, "link", "set", "v-"+r, "master", "br0", "up")
		sh(t, "ip", "-n", tp.ns(r), "addr", "add", a+"/24", "dev", "eth0")
		sh(t, "ip", "-n", tp.ns(r), "link", "set", "eth0", "up")
	}
	for n, a := range e2eNodes {
		// kube-proxy's rule for a LoadBalancer ingress IP with a local endpoint.
		sh(t, "ip", "netns", "exec", tp.ns(n), "iptables", "-t", "nat", "-A", "PREROUTING", "-d", e2eVIP, "-p", "tcp", "--dport", "80",
			"-j", "DNAT", "--to-destination", a+":8080")
		sh(t, "ip", "netns", "exec", tp.ns(n), "iptables", "-t", "nat", "-A", "PREROUTING", "-d", e2eVIP, "-p", "udp", "--dport", "53",
			"-j", "DNAT", "--to-destination", a+":8053")
		tp.healthy[n] = &atomic.Bool{}
		tp.healthy[n].Store(true)
		tp.serve(t, n)
	}
	return tp
}

type echoReply struct {
	Node     string `json:"node"`
	ClientIP string `json:"client_ip"`
	Local    string `json:"local"`
}

// serve starts the node's "pod" on :8080 and its kube-proxy healthz on :10256.
func (tp *topo) serve(t *testing.T, node string) {
	t.Helper()
	var app, hz net.Listener
	if err := InNetns(tp.ns(node), func() error {
		var err error
		if app, err = net.Listen("tcp4", ":8080"); err != nil {
			return err
		}
		hz, err = net.Listen("tcp4", ":10256")
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", node, err)
	}
	appSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
		_ = json.NewEncoder(w).Encode(echoReply{Node: node, ClientIP: host, Local: local})
	})}
	hzSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp.healthy[node].Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	var udp net.PacketConn
	if err := InNetns(tp.ns(node), func() error {
		var err error
		udp, err = net.ListenPacket("udp4", ":8053")
		return err
	}); err != nil {
		t.Fatalf("listen udp in %s: %v", node, err)
	}
	go func() { // answers each datagram with the node's name
		buf := make([]byte, 1500)
		for {
			_, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = udp.WriteTo([]byte(node), from)
		}
	}()
	t.Cleanup(func() { _ = udp.Close() })
	go func() { _ = appSrv.Serve(app) }()
	go func() { _ = hzSrv.Serve(hz) }()
	t.Cleanup(func() { _ = appSrv.Close(); _ = hzSrv.Close() })
}

// conn is a client keep-alive connection to VIP:80 from the client namespace.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

func (tp *topo) dial(t *testing.T, localPort int) (*conn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	if localPort != 0 {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(e2eClient), Port: localPort}
	}
	c, err := NetnsDialer(tp.ns("cl"), d)(context.Background(), "tcp4", e2eVIP+":80")
	if err != nil {
		return nil, err
	}
	return &conn{c: c, br: bufio.NewReader(c)}, nil
}

func (c *conn) get(close bool) (echoReply, error) {
	_ = c.c.SetDeadline(time.Now().Add(2 * time.Second))
	hdr := ""
	if close {
		hdr = "Connection: close\r\n"
	}
	if _, err := fmt.Fprintf(c.c, "GET / HTTP/1.1\r\nHost: vip\r\n%s\r\n", hdr); err != nil {
		return echoReply{}, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return echoReply{}, err
	}
	defer resp.Body.Close()
	var r echoReply
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode %q: %w", b, err)
	}
	return r, nil
}

// oneShot makes a request on a new connection and closes it.
func (tp *topo) oneShot(t *testing.T) (echoReply, error) {
	c, err := tp.dial(t, 0)
	if err != nil {
		return echoReply{}, err
	}
	defer c.c.Close()
	if ra := c.c.RemoteAddr().String(); ra != e2eVIP+":80" {
		return echoReply{}, fmt.Errorf("connected to %s, want the VIP", ra)
	}
	return c.get(true)
}

func (tp *topo) spread(t *testing.T, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		r, err := tp.oneShot(t)
		if err != nil {
			t.Fatalf("request %d of %d: %v", i+1, n, err)
		}
		if r.ClientIP != e2eClient {
			t.Fatalf("node %s saw client %s, want %s (client address not preserved)", r.Node, r.ClientIP, e2eClient)
		}
		got[r.Node]++
	}
	return got
}

// udpAsk sends one datagram to VIP:53 from the client's port (0: any) and
// returns the answering node.
func (tp *topo) udpAsk(t *testing.T, localPort int) (string, error) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(e2eClient), Port: localPort}}
	c, err := NetnsDialer(tp.ns("cl"), d)(context.Background(), "udp4", e2eVIP+":53")
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("who")); err != nil {
		return "", err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func svcConfig(active, draining []string, closeAction profiles.CloseAction) DPConfig {
	nodes := map[string]netip.Addr{}
	for n, a := range e2eNodes {
		nodes[n] = netip.MustParseAddr(a)
	}
	return DPConfig{
		Nodes: nodes,
		Services: []DPService{{Key: "e2e/web", VIP: netip.MustParseAddr(e2eVIP), Ports: []DPPort{{ProtoTCP, 80}, {ProtoUDP, 53}},
			Active: active, Draining: draining, CloseAction: closeAction, NoBackends: profiles.CloseReset, IdleTimeout: time.Minute}},
		VIPs: []netip.Addr{netip.MustParseAddr(e2eVIP)},
	}
}

func other(n string) string {
	if n == "n1" {
		return "n2"
	}
	return "n1"
}

func TestDataplaneE2E(t *testing.T) {
	tp := newTopo(t)
	ctx := context.Background()
	dp := NewDataplane(ExecRunner(tp.ns("lb")), "eth0", WithAnnounce(func(ip netip.Addr) error {
		return InNetns(tp.ns("lb"), func() error { return GratuitousARP("eth0", ip) })
	}))
	if err := dp.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dp.Close(context.Background()) })
	// The client still remembers the VIP at another MAC (a previous LB): the
	// gratuitous ARP of the new VIP must correct it.
	sh(t, "ip", "-n", tp.ns("cl"), "neigh", "replace", e2eVIP, "lladdr", "02:00:00:00:00:01", "dev", "eth0", "nud", "stale")
	time.Sleep(1100 * time.Millisecond) // past the neighbour locktime
	if err := dp.Apply(ctx, svcConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)); err != nil {
		t.Fatal(err)
	}
	lbMAC, err := exec.Command("ip", "-n", tp.ns("lb"), "-br", "link", "show", "eth0").Output()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the client's ARP entry for the VIP to point at the LB", func() bool {
		out, _ := exec.Command("ip", "-n", tp.ns("cl"), "neigh", "show", e2eVIP).Output()
		return strings.Contains(string(out), strings.Fields(string(lbMAC))[2])
	})

	t.Run("client address preserved, replies from the VIP, spread over nodes", func(t *testing.T) {
		got := tp.spread(t, 40)
		t.Logf("40 new connections: %v", got)
		if got["n1"] == 0 || got["n2"] == 0 {
			t.Fatalf("all connections on one node: %v", got)
		}
	})

	t.Run("established flow stays on its node while it drains; new flows avoid it", func(t *testing.T) {
		c, err := tp.dial(t, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.c.Close()
		first, err := c.get(false)
		if err != nil {
			t.Fatal(err)
		}
		x := first.Node
		if err := dp.Apply(ctx, svcConfig([]string{other(x)}, []string{x}, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			r, err := c.get(false)
			if err != nil {
				t.Fatalf("request %d on the established connection after %s started draining: %v", i+2, x, err)
			}
			if r.Node != x {
				t.Fatalf("established connection moved from %s to %s", x, r.Node)
			}
		}
		got := tp.spread(t, 20)
		t.Logf("draining %s: established connection stayed on it for 6 requests; 20 new connections: %v", x, got)
		if got[x] != 0 {
			t.Fatalf("new connections reached draining node %s: %v", x, got)
		}
		// Drain over: the established connection is reset by the LB.
		if err := dp.Apply(ctx, svcConfig([]string{other(x)}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		_, err = c.get(false)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("request on a closed flow: err = %v, want connection reset", err)
		}
		t.Logf("after the drain the old connection got: %v", err)
	})

	t.Run("a reused 4-tuple after its node left picks a live node", func(t *testing.T) {
		if err := dp.Apply(ctx, svcConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		port := 40000 + os.Getpid()%20000
		c, err := tp.dial(t, port)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.get(true)
		// Abort (RST) rather than close: no TIME_WAIT, so the port is free at once.
		_ = c.c.(*net.TCPConn).SetLinger(0)
		c.c.Close()
		if err != nil {
			t.Fatal(err)
		}
		x := r.Node
		if err := dp.Apply(ctx, svcConfig([]string{other(x)}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		var c2 *conn
		deadline := time.Now().Add(5 * time.Second)
		for {
			c2, err = tp.dial(t, port)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // the port may still be closing
		}
		if err != nil {
			t.Fatalf("redial from port %d: %v", port, err)
		}
		defer c2.c.Close()
		r2, err := c2.get(true)
		if err != nil {
			t.Fatal(err)
		}
		if r2.Node == x {
			t.Fatalf("new connection from the same port went to removed node %s", x)
		}
		t.Logf("port %d: first on %s, after %s left on %s", port, x, x, r2.Node)
	})

	t.Run("UDP: one source port stays on its node; when the node leaves, its flow moves", func(t *testing.T) {
		if err := dp.Apply(ctx, svcConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for i := 0; i < 20; i++ {
			n, err := tp.udpAsk(t, 0)
			if err != nil {
				t.Fatalf("datagram %d: %v", i+1, err)
			}
			seen[n]++
		}
		if seen["n1"] == 0 || seen["n2"] == 0 {
			t.Fatalf("20 UDP flows from new ports all on one node: %v", seen)
		}
		port := 30000 + os.Getpid()%10000
		x, err := tp.udpAsk(t, port)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if n, err := tp.udpAsk(t, port); err != nil || n != x {
				t.Fatalf("datagram %d of the flow from port %d: node %q, err %v; want %s", i+2, port, n, err, x)
			}
		}
		if err := dp.Apply(ctx, svcConfig([]string{other(x)}, nil, profiles.CloseReset)); err != nil {
			t.Fatal(err)
		}
		n, err := tp.udpAsk(t, port)
		if err != nil || n != other(x) {
			t.Fatalf("after %s left, the flow from port %d reached %q (err %v); want %s", x, port, n, err, other(x))
		}
		t.Logf("20 UDP flows: %v; port %d stayed on %s for 6 datagrams, then moved to %s when it left", seen, port, x, n)
	})

	t.Run("ClientIP affinity: every new connection of a client on one node", func(t *testing.T) {
		cfg := svcConfig([]string{"n1", "n2"}, nil, profiles.CloseReset)
		cfg.Services[0].ClientIP = true
		if err := dp.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		got := tp.spread(t, 20)
		if len(got) != 1 {
			t.Fatalf("20 connections of one client over several nodes: %v", got)
		}
		t.Logf("20 connections of %s with ClientIP affinity: %v", e2eClient, got)
	})

	t.Run("health checks remove a node after interval x unhealthyThreshold", func(t *testing.T) {
		hc := profiles.HealthCheck{Target: profiles.TargetKubeProxy, Interval: profiles.Duration(300 * time.Millisecond), Timeout: profiles.Duration(200 * time.Millisecond),
			HealthyThreshold: 1, UnhealthyThreshold: 3}
		var mu sync.Mutex
		active := map[string]bool{}
		removed := make(chan time.Time, 1)
		apply := func() error {
			var act []string
			for _, n := range []string{"n1", "n2"} {
				if active[n] {
					act = append(act, n)
				}
			}
			return dp.Apply(ctx, svcConfig(act, nil, profiles.CloseReset))
		}
		check := HTTPChecker(clock.RealClock{}, NetnsDialer(tp.ns("lb"), nil))
		mon := NewMonitor(clock.RealClock{}, check, func(tr Transition) {
			mu.Lock()
			defer mu.Unlock()
			active[tr.Key.Node] = tr.Healthy
			if err := apply(); err != nil {
				t.Errorf("apply after %s turned healthy=%v: %v", tr.Key.Node, tr.Healthy, err)
			}
			t.Logf("%s healthy=%v after %s", tr.Key.Node, tr.Healthy, tr.Result)
			if !tr.Healthy {
				removed <- time.Now()
			}
		})
		defer mon.Stop()
		var probes []Probe
		for n, a := range e2eNodes {
			probes = append(probes, Probe{Key: ProbeKey{"e2e/web", n}, URL: "http://" + a + ":10256/healthz", HealthCheck: hc})
		}
		mon.Set(ctx, probes)
		waitFor(t, "both nodes healthy", func() bool {
			return mon.Healthy(ProbeKey{"e2e/web", "n1"}) && mon.Healthy(ProbeKey{"e2e/web", "n2"})
		})
		failedAt := time.Now()
		tp.healthy["n2"].Store(false)
		var at time.Time
		select {
		case at = <-removed:
		case <-time.After(10 * time.Second):
			t.Fatal("n2 not marked unhealthy within 10s of failing its health check")
		}
		lag := at.Sub(failedAt)
		t.Logf("n2 removed %v after its healthz turned 503 (interval 300ms x threshold 3 = 900ms)", lag.Round(time.Millisecond))
		if lag < 2*hc.Interval.D() || lag > hc.DetectionTime()+hc.Interval.D()+500*time.Millisecond {
			t.Fatalf("removal lag %v outside [%v, %v]", lag, 2*hc.Interval.D(), hc.DetectionTime()+hc.Interval.D()+500*time.Millisecond)
		}
		if got := tp.spread(t, 20); got["n2"] != 0 {
			t.Fatalf("new connections still reach unhealthy n2: %v", got)
		}
	})
}
