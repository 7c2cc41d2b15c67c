package router

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// Monitor follows the router's routing table for any number of watchers
// at once: one `ip monitor route` in the router (a long-lived docker exec,
// no polling) while anyone watches, and one read of the pool's routes per
// burst of changes, handed to every watcher. Many Services' witnesses run
// together, and a route change is the moment the load matters most: one
// reader keeps the harness's own work then to one docker exec.
type Monitor struct {
	r *Router

	mu     sync.Mutex
	subs   map[int]*watcher
	next   int
	cancel context.CancelFunc // of the running loop, nil when none runs
	// gen numbers the loops, so one that ends on its own clears cancel
	// only while it is still the running one.
	gen int
}

type watcher struct {
	addr  netip.Addr
	f     func(time.Time, Route)
	last  Route
	first bool
	errc  chan error
}

// NewMonitor returns a monitor of r's routes; it starts reading when the
// first watcher comes and stops when the last goes.
func (r *Router) NewMonitor() *Monitor { return &Monitor{r: r, subs: map[int]*watcher{}} }

// Watch calls f with the router's route to addr now and after every change
// of it, with the time the change was seen, until ctx is done (nil) or the
// monitor fails (its error).
func (m *Monitor) Watch(ctx context.Context, addr netip.Addr, f func(time.Time, Route)) error {
	w := &watcher{addr: addr, f: f, first: true, errc: make(chan error, 1)}
	rs, err := m.r.Routes(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	id := m.next
	m.next++
	m.subs[id] = w
	w.deliver(time.Now(), rs)
	if m.cancel == nil {
		lctx, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		m.gen++
		go m.loop(lctx, m.gen)
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.subs, id)
		if len(m.subs) == 0 && m.cancel != nil {
			m.cancel()
			m.cancel = nil
		}
		m.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-w.errc:
		return err
	}
}

// deliver hands w its route in rs when it changed (or first); the caller
// holds m.mu.
func (w *watcher) deliver(at time.Time, rs []Route) {
	rt := routeTo(rs, w.addr)
	if w.first || !slices.Equal(rt.Nexthops, w.last.Nexthops) {
		w.f(at, rt)
		w.last, w.first = rt, false
	}
}

func (m *Monitor) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.subs {
		select {
		case w.errc <- err:
		default:
		}
	}
}

// loop runs `ip monitor route` in the router and, after each burst of its
// lines, reads the pool's routes once for every watcher.
func (m *Monitor) loop(ctx context.Context, gen int) {
	// A loop that fails lets the next watcher start another.
	defer func() {
		m.mu.Lock()
		if m.gen == gen && m.cancel != nil {
			m.cancel()
			m.cancel = nil
		}
		m.mu.Unlock()
	}()
	cmd := exec.CommandContext(ctx, "docker", "exec", m.r.Container, "ip", "monitor", "route")
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		m.fail(fmt.Errorf("router: monitor %s: %w", m.r.Container, err))
		return
	}
	defer func() { _ = cmd.Wait() }()
	changed := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case changed <- time.Now():
			default: // a read is already due
			}
		}
		close(changed)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case at, ok := <-changed:
			if !ok {
				if ctx.Err() == nil {
					m.fail(fmt.Errorf("router: ip monitor in %s ended", m.r.Container))
				}
				return
			}
			// A withdrawal or an addition is a few netlink messages
			// (the route replaced, its cache); read once they are in.
			time.Sleep(20 * time.Millisecond)
			rs, err := m.r.Routes(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.fail(err)
				}
				return
			}
			m.mu.Lock()
			for _, w := range m.subs {
				w.deliver(at, rs)
			}
			m.mu.Unlock()
		}
	}
}

// RouteTo is the router's route to addr (no nexthops when it has none).
func (r *Router) RouteTo(ctx context.Context, addr netip.Addr) (Route, error) {
	rs, err := r.Routes(ctx)
	if err != nil {
		return Route{}, err
	}
	return routeTo(rs, addr), nil
}

// routeTo is the route of rs that covers addr, as addr's own (no
// nexthops when none does).
func routeTo(rs []Route, addr netip.Addr) Route {
	rt := Route{Dst: netip.PrefixFrom(addr, addr.BitLen())}
	for _, x := range rs {
		if x.Dst.Contains(addr) {
			rt.Nexthops = x.Nexthops
			break
		}
	}
	return rt
}
