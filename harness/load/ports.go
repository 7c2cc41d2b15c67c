package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Ports hands out the local port of every new connection, per destination
// address in turn over the ephemeral range, so a client 4-tuple comes back
// only after every other port of the range has been used toward that
// destination.
//
// Why: left to itself, Linux picks the port of a connect() so that one
// client IP reuses the same 4-tuple toward one address within seconds
// (measured here: 3.4 s at 800 new connections/s; a server that closes
// first leaves the client no TIME_WAIT to hold it). A node's conntrack
// keeps a TCP entry whose SYN went unanswered — a SYN DNAT'd to a Pod that
// was just deleted — for nf_conntrack_tcp_timeout_syn_sent (120 s), with
// its NAT binding to the dead Pod, and every SYN of the same 4-tuple
// refreshes it: kube-proxy clears stale conntrack entries of UDP Services
// only (kubernetes v1.37.2 pkg/proxy/conntrack/cleanup.go,
// CleanStaleEntries). So the load generator's own port reuse turned one
// lost SYN into a blackhole of that 4-tuple, for the rest of the run and
// into the next Service given the same address, which no population of
// real clients does. A cycle over the range keeps a 4-tuple away for
// range/rate seconds (28,232 ports at 200 new connections/s: 141 s).
//
// One Ports is shared by every load of a process (scenario.Env), so a
// Service that gets an address an earlier one had continues the earlier
// one's cycle.
type Ports struct {
	low, high int

	mu   sync.Mutex
	next map[string]int // destination "ip:port" -> the next local port to try
}

// defaultPortRange is Linux's default net.ipv4.ip_local_port_range.
const defaultPortRange = "32768 60999"

// NewPorts returns a cycle over this host's ephemeral port range
// (/proc/sys/net/ipv4/ip_local_port_range, Linux's default where it
// cannot be read).
func NewPorts() (*Ports, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		b = []byte(defaultPortRange)
	}
	return ParsePorts(string(b))
}

// ParsePorts returns a cycle over the range "LOW HIGH" (the sysctl's form).
func ParsePorts(s string) (*Ports, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return nil, fmt.Errorf("local port range %q: want two ports, LOW HIGH", s)
	}
	low, err1 := strconv.Atoi(f[0])
	high, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || low < 1 || high > 65535 || high-low < 255 {
		return nil, fmt.Errorf("local port range %q: want 1 <= LOW, HIGH <= 65535 and at least 256 ports", s)
	}
	return &Ports{low: low, high: high, next: map[string]int{}}, nil
}

// Size is how many ports the cycle goes through.
func (p *Ports) Size() int { return p.high - p.low + 1 }

// String is the range, "32768-60999".
func (p *Ports) String() string { return fmt.Sprintf("%d-%d", p.low, p.high) }

// take returns the next local port toward dest and advances its cycle.
func (p *Ports) take(dest string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	port, ok := p.next[dest]
	if !ok {
		port = p.low
	}
	nxt := port + 1
	if nxt > p.high {
		nxt = p.low
	}
	p.next[dest] = nxt
	return port
}

// maxPortTries bounds the ports tried for one connection: a port another
// socket holds without SO_REUSEADDR (EADDRINUSE), or a 4-tuple still in
// this host's TIME_WAIT (EADDRNOTAVAIL), is skipped for the next one.
const maxPortTries = 64

// Dialer dials from the cycle's next port toward each address (base's
// LocalAddr and Control are replaced); it falls back to nothing: a
// connection whose ports were all taken fails and says so.
func (p *Ports) Dialer(base net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	base.Control = reuseAddr
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var last error
		for i := 0; i < maxPortTries; i++ {
			d := base
			d.LocalAddr = &net.TCPAddr{Port: p.take(addr)}
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				return c, nil
			}
			if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EADDRNOTAVAIL) {
				return nil, err
			}
			last = err
		}
		return nil, fmt.Errorf("no free local port toward %s in %d tries of the cycle %s: %w", addr, maxPortTries, p, last)
	}
}

// reuseAddr lets a connection bind a port other connections of this
// process use toward other destinations (their 4-tuples differ).
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}
	return serr
}
