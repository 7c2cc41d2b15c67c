package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrAborted is returned by Run when a second signal cut the graceful
// shutdown short.
var ErrAborted = errors.New("shutdown aborted")

// adminShutdownBudget is how long admin calls (a final stats scrape) get
// to finish once the traffic port is done.
const adminShutdownBudget = time.Second

type options struct {
	log             *slog.Logger
	traffic, admin  net.Listener
	listenersCalled bool
}

// Option configures Run.
type Option func(*options)

// WithLogger sets the structured logger; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithListeners serves on listeners the caller opened (tests pick free
// ports this way) instead of Config.Listen and Config.AdminListen. Run
// closes them.
func WithListeners(traffic, admin net.Listener) Option {
	return func(o *options) { o.traffic, o.admin, o.listenersCalled = traffic, admin, true }
}

// Run serves until the first value on signals, then runs the termination
// sequence:
//
//  1. readiness fails at once if cfg.UnreadyOnTerm;
//  2. serving goes on unchanged for cfg.ShutdownDelay;
//  3. if the drain is graceful (cfg.DrainTimeout > 0), every open HTTP/2
//     connection gets the shutdown notice, and the drain waits up to
//     cfg.H2Notice for their answers (h2notice.go);
//  4. every answer from here on says "Connection: close" (over HTTP/2
//     with the notice on: the connection gets the notice, if it has not
//     had it, instead of Go's GOAWAY), and each open
//     connection gets up to half of cfg.DrainTimeout (5 s at most, or
//     cfg.CloseGrace) to carry one and be closed by its client; then the
//     traffic port stops accepting and the idle connections left are
//     closed;
//  5. in-flight requests get up to cfg.DrainTimeout, then are cut;
//  6. the admin port closes and Run returns nil.
//
// A second value on signals during 2-5 closes everything at once and
// returns an error wrapping ErrAborted. Cancelling ctx closes everything at
// once and returns nil: the caller asked for it. Main passes SIGTERM and
// SIGINT on signals; tests pass a channel of their own.
func Run(ctx context.Context, cfg Config, signals <-chan os.Signal, opts ...Option) error {
	o := options{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		closeAll(o.traffic, o.admin)
		return fmt.Errorf("echo server configuration: %w", err)
	}
	if o.listenersCalled && (o.traffic == nil || o.admin == nil) {
		closeAll(o.traffic, o.admin)
		return errors.New("echo server: WithListeners needs both a traffic and an admin listener")
	}
	s, err := newServer(cfg, o.log)
	if err != nil {
		closeAll(o.traffic, o.admin)
		return fmt.Errorf("echo server: %w", err)
	}
	var tls []net.Listener
	al := o.admin
	if o.traffic != nil {
		tls = []net.Listener{o.traffic}
	} else {
		for _, addr := range cfg.ListenAddrs() {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				closeAll(tls...)
				return fmt.Errorf("echo server: listening on the traffic address %q (--listen, ECHO_LISTEN): %w; choose a free address", addr, err)
			}
			tls = append(tls, l)
		}
		if al, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			closeAll(tls...)
			return fmt.Errorf("echo server: listening on the admin address %q (--admin-listen, ECHO_ADMIN_LISTEN): %w; choose a free address", cfg.AdminListen, err)
		}
	}
	return s.serve(ctx, tls, al, signals)
}

func closeAll(ls ...net.Listener) {
	for _, l := range ls {
		if l != nil {
			l.Close()
		}
	}
}

func (s *server) serve(ctx context.Context, tls []net.Listener, al net.Listener, signals <-chan os.Signal) error {
	traffic, admin := s.trafficServer(), s.adminServer()

	type listener struct {
		name string
		srv  *http.Server
		l    net.Listener
	}
	// One http.Server serves every traffic listener: Shutdown closes them
	// all and drains their connections together.
	ls := []listener{{"admin", admin, al}}
	trafficAddrs := make([]string, 0, len(tls))
	for _, l := range tls {
		ls = append(ls, listener{"traffic", traffic, noticeListener{l}})
		trafficAddrs = append(trafficAddrs, l.Addr().String())
	}
	serveErr := make(chan error, len(ls))
	var wg sync.WaitGroup
	for _, p := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.srv.Serve(p.l); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("echo server: %s port %s stopped serving: %w", p.name, p.l.Addr(), err)
			}
		}()
	}
	// Serve goroutines end soon after Close/Shutdown; waiting keeps Run from
	// leaking them into the caller.
	defer wg.Wait()

	cfg := s.cfg
	s.log.Info("serving",
		"traffic_addr", strings.Join(trafficAddrs, ","), "admin_addr", al.Addr().String(),
		"pod", cfg.Identity.Pod, "node", cfg.Identity.Node, "namespace", cfg.Identity.Namespace, "pod_ip", cfg.Identity.PodIP,
		"ready", cfg.Ready, "keepalive", cfg.KeepAlive,
		"shutdown_delay", cfg.ShutdownDelay.String(), "unready_on_term", cfg.UnreadyOnTerm, "drain_timeout", cfg.DrainTimeout.String())

	var sig os.Signal
	select {
	case <-ctx.Done():
		s.closeNow(traffic, admin, "context cancelled")
		return nil
	case err := <-serveErr:
		s.closeNow(traffic, admin, "a listener failed")
		return err
	case sig = <-signals:
	}
	return s.terminate(ctx, sig, signals, serveErr, traffic, admin)
}

// trafficServer is the traffic port's http.Server; the benchmark serves
// through the same one. It speaks HTTP/1.1 and, on the same port, HTTP/2
// over cleartext TCP with prior knowledge (h2c, RFC 9113 section 3.3), so
// an HTTP/2 load measures the same Pods. Go's HTTP/2 server ends a
// connection gracefully with GOAWAY on Shutdown and on an answer that
// carries "Connection: close" (net/http h2_bundle.go, startGracefulShutdown
// and writeChunk), so the termination sequence drains both alike.
func (s *server) trafficServer() *http.Server {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           s,
		ConnContext:       s.connContext,
		ConnState:         s.connState,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		Protocols:         protocols,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

func (s *server) adminServer() *http.Server {
	return &http.Server{
		Handler:           s.adminHandler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// awaitClientsClose waits until no traffic connection is open or grace has
// passed; it returns early with a second signal, or cancelled when ctx ends.
func (s *server) awaitClientsClose(ctx context.Context, grace time.Duration, signals <-chan os.Signal) (sig os.Signal, cancelled bool) {
	tick := time.NewTicker(closePoll)
	defer tick.Stop()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for s.openConns.Load() > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			return nil, false
		case sig := <-signals:
			return sig, false
		case <-ctx.Done():
			return nil, true
		}
	}
	return nil, false
}

// terminate is the sequence Run documents, from the first signal on.
func (s *server) terminate(ctx context.Context, sig os.Signal, signals <-chan os.Signal, serveErr <-chan error, traffic, admin *http.Server) error {
	cfg := s.cfg
	start := time.Now()
	s.terminating.Store(true)
	s.log.Info("termination signal received", "signal", sigName(sig),
		"shutdown_delay", cfg.ShutdownDelay.String(), "unready_on_term", cfg.UnreadyOnTerm, "drain_timeout", cfg.DrainTimeout.String())
	if cfg.UnreadyOnTerm {
		s.setReady(false, "unready-on-term")
	}

	abort := func(sig os.Signal, phase string) error {
		open := s.openConns.Load()
		s.closeNow(traffic, admin, "second signal "+sigName(sig))
		return fmt.Errorf("echo server: %w by a second signal (%s) during the %s after %s: closed %d open traffic connections at once",
			ErrAborted, sigName(sig), phase, time.Since(start).Round(time.Millisecond), open)
	}

	if cfg.ShutdownDelay > 0 {
		t := time.NewTimer(cfg.ShutdownDelay)
		select {
		case <-t.C:
		case sig2 := <-signals:
			t.Stop()
			return abort(sig2, "shutdown delay")
		case <-ctx.Done():
			t.Stop()
			s.closeNow(traffic, admin, "context cancelled")
			return nil
		case err := <-serveErr:
			t.Stop()
			s.closeNow(traffic, admin, "a listener failed")
			return err
		}
	}

	if s.noticeOn() {
		nctx, ncancel := context.WithCancel(ctx)
		type counts struct{ noticed, answered int }
		done := make(chan counts, 1)
		began := time.Now()
		go func() {
			n, a := s.noticeH2(nctx, cfg.H2Notice)
			done <- counts{n, a}
		}()
		select {
		case c := <-done:
			ncancel()
			if c.noticed > 0 {
				s.log.Info("HTTP/2 shutdown notice sent", "connections", c.noticed, "answered", c.answered,
					"waited", time.Since(began).Round(time.Millisecond).String(), "wait_bound", cfg.H2Notice.String())
			}
		case sig2 := <-signals:
			ncancel()
			<-done
			return abort(sig2, "HTTP/2 shutdown notice")
		case <-ctx.Done():
			ncancel()
			<-done
			s.closeNow(traffic, admin, "context cancelled")
			return nil
		case err := <-serveErr:
			ncancel()
			<-done
			s.closeNow(traffic, admin, "a listener failed")
			return err
		}
	}

	// Draining before Shutdown: answers written from here on carry
	// Connection: close even if they race Shutdown's own switch.
	s.draining.Store(true)
	if cfg.DrainTimeout > 0 {
		// WebSocket sessions are told to go elsewhere now, while the drain
		// budget still covers their closing handshakes (websocket.go).
		s.ws.goAway()
	}
	s.log.Info("draining: asking keep-alive clients to close",
		"after", time.Since(start).Round(time.Millisecond).String(),
		"open_connections", s.openConns.Load(), "drain_timeout", cfg.DrainTimeout.String())

	// http.Server.Shutdown closes idle keep-alive connections at once, and
	// closing one races a client writing its next request on it: the client
	// sees the close mid-write and has to re-send (RFC 9112, section 9.3.1;
	// Go's Transport does so silently for a GET, which zerodrop's load counts
	// as a drop). So each open connection first gets up to closeGrace (half
	// the drain budget at most) to carry one more request, whose answer says
	// Connection: close and has the client close it; the wait ends early
	// once none is open.
	grace := min(cfg.DrainTimeout/2, closeGrace)
	if cfg.CloseGrace != nil {
		grace = *cfg.CloseGrace
	}
	if grace > 0 {
		switch sig2, cancelled := s.awaitClientsClose(ctx, grace, signals); {
		case sig2 != nil:
			return abort(sig2, "drain")
		case cancelled:
			s.closeNow(traffic, admin, "context cancelled")
			return nil
		}
		s.log.Info("draining: stopped accepting, closing idle connections",
			"after", time.Since(start).Round(time.Millisecond).String(), "open_connections", s.openConns.Load())
	}

	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- traffic.Shutdown(dctx) }()
	select {
	case err := <-drained:
		if err != nil {
			open := s.openConns.Load()
			inFlight, noRequest := s.openConnCensus()
			traffic.Close()
			s.log.Warn("drain timeout: closed the connections still open",
				"drain_timeout", cfg.DrainTimeout.String(), "closed_connections", open,
				"with_request_in_flight", inFlight, "without_a_request_yet", noRequest)
		} else {
			s.log.Info("drained: every traffic connection closed",
				"since_signal", time.Since(start).Round(time.Millisecond).String())
		}
	case sig2 := <-signals:
		cancel()
		<-drained
		return abort(sig2, "drain")
	case <-ctx.Done():
		cancel()
		<-drained
		s.closeNow(traffic, admin, "context cancelled")
		return nil
	}

	s.endWebSockets(dctx)

	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), adminShutdownBudget)
	defer acancel()
	if err := admin.Shutdown(actx); err != nil {
		admin.Close()
	}
	st := s.stats()
	s.log.Info("stopped",
		"since_signal", time.Since(start).Round(time.Millisecond).String(),
		"served_total", st.ServedTotal, "served_while_unready", st.ServedWhileUnready,
		"served_while_draining", st.ServedWhileDraining, "served_while_terminating", st.ServedWhileTerminating,
		"connections_total", st.ConnectionsTotal)
	return nil
}

// closeNow drops both ports and every connection at once.
func (s *server) closeNow(traffic, admin *http.Server, why string) {
	s.draining.Store(true)
	open := s.openConns.Load()
	traffic.Close()
	admin.Close()
	cut := s.ws.cut()
	s.log.Warn("stopped at once", "why", why, "closed_connections", open, "cut_websockets", cut)
}

// endWebSockets ends the sessions net/http's Shutdown does not see: those
// a graceful drain told to go away get until ctx ends to close; the rest
// are cut without a close frame.
func (s *server) endWebSockets(ctx context.Context) {
	left := s.ws.count()
	if left == 0 {
		return
	}
	if s.cfg.DrainTimeout > 0 {
		left = s.ws.await(ctx)
	}
	if left > 0 {
		cut := s.ws.cut()
		s.log.Warn("WebSocket sessions cut without a close frame", "sessions", cut, "drain_timeout", s.cfg.DrainTimeout.String())
	} else {
		s.log.Info("WebSocket sessions closed")
	}
}

// sigName is the conventional name ("SIGTERM"), which is what operators
// grep for, rather than Go's description ("terminated").
func sigName(sig os.Signal) string {
	switch sig {
	case nil:
		return "<nil>"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
