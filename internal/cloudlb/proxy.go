package cloudlb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// L7Service is one port of an L7 (gclb) Service: the proxy listens on
// VIP:Port and sends requests to the backends: nodeIP:nodePort of nodes
// (through kube-proxy), or podIP:targetPort of Pods (container-native).
type L7Service struct {
	Key      string
	VIP      netip.Addr
	Port     uint16
	Backends []netip.AddrPort // taking requests, in order
	// Draining are backends that take no new request but whose requests
	// in flight may finish until the time given (zero: for as long as they
	// last). A backend in neither list has its requests in flight cut.
	Draining map[netip.AddrPort]time.Time
	L7       profiles.L7
}

func (s L7Service) listenAddr() netip.AddrPort { return netip.AddrPortFrom(s.VIP, s.Port) }

// L7Proxy is the HTTP front end of L7 profiles. Like Google's front ends in
// incident keepalive-unready it keeps connections to nodeIP:nodePort open and reuses them, so a
// request on a reused connection reaches whatever pod kube-proxy NATed that
// connection to when it opened, ready or not.
type L7Proxy struct {
	log    *slog.Logger
	listen func(network, addr string) (net.Listener, error)

	mu        sync.Mutex
	listeners map[netip.AddrPort]*l7Listener
}

// frontProtocols are what the proxy speaks to clients: HTTP/1.1, and
// HTTP/2 as the vendors' L7 front ends do (cleartext here, h2c with prior
// knowledge, RFC 9113 section 3.3, where theirs negotiate it over TLS). To
// the backends it speaks HTTP/1.1, the vendors' default (an Application
// Load Balancer target group's protocol version HTTP1: AWS, "Target groups
// for your Application Load Balancers", Protocol version; a Google backend
// service's protocol HTTP, which GKE's Ingress sets unless a Service's
// cloud.google.com/app-protocols annotation asks for HTTPS or HTTP2:
// Compute Engine API BackendService.protocol), so an HTTP/2 client's streams reach a Pod as
// HTTP/1.1 requests and a Pod's drain never reaches the client as GOAWAY.
func frontProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// NewL7Proxy returns a proxy; listen may be nil (net.Listen).
func NewL7Proxy(log *slog.Logger, listen func(network, addr string) (net.Listener, error)) *L7Proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if listen == nil {
		listen = net.Listen
	}
	return &L7Proxy{log: log, listen: listen, listeners: map[netip.AddrPort]*l7Listener{}}
}

type l7Backends struct {
	svc   L7Service
	addrs []string // host:port
}

type l7Listener struct {
	srv     *http.Server
	ln      net.Listener
	state   atomic.Pointer[l7Backends]
	next    atomic.Uint64
	tmu     sync.Mutex
	perNode map[string]*http.Transport
	// life holds, per backend address, the context its requests in flight
	// run under: cancelled when its drain ends (connection draining: "After
	// the timeout duration is reached, the load balancer stops sending all
	// traffic to the removed VM or endpoint", GCP "Enable connection
	// draining"; ALB: in-flight requests are dropped when the
	// deregistration delay expires, AWS EKS Best Practices, load
	// balancing). A backend closed outright (no drain) keeps its requests
	// in flight: the cut GCP's wording implies for a draining timeout of 0
	// is not modelled (package doc).
	life map[string]*backendLife
}

type backendLife struct {
	ctx    context.Context
	cancel context.CancelFunc
	until  time.Time // the drain's end being enforced (zero: none)
	timer  *time.Timer
}

func (b *backendLife) stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.cancel()
}

// Apply makes the proxy serve exactly svcs. Listeners that stay keep their
// client and backend connections; a backend that leaves has its idle
// connections closed, and its requests in flight cut when its drain ends
// (L7Service.Draining).
func (p *L7Proxy) Apply(ctx context.Context, svcs []L7Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[netip.AddrPort]L7Service{}
	for _, s := range svcs {
		want[s.listenAddr()] = s
	}
	var errs []error
	for a, l := range p.listeners {
		if _, ok := want[a]; !ok {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = l.srv.Shutdown(sctx)
			cancel()
			l.closeTransports(nil)
			l.setLives(nil, nil)
			delete(p.listeners, a)
		}
	}
	for a, s := range want {
		l, ok := p.listeners[a]
		if !ok {
			ln, err := p.listen("tcp", a.String())
			if err != nil {
				errs = append(errs, fmt.Errorf("L7 proxy: listen on %s for %s: %w", a, s.Key, err))
				continue
			}
			l = &l7Listener{ln: ln, perNode: map[string]*http.Transport{}, life: map[string]*backendLife{}}
			l.srv = &http.Server{Handler: l.handler(p.log), ReadHeaderTimeout: 30 * time.Second, Protocols: frontProtocols()}
			p.listeners[a] = l
			go func() {
				if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					p.log.Error("L7 proxy stopped serving", "addr", a.String(), "err", err)
				}
			}()
		}
		b := &l7Backends{svc: s}
		for _, ap := range s.Backends {
			b.addrs = append(b.addrs, ap.String())
		}
		draining := map[string]time.Time{}
		for ap, until := range s.Draining {
			draining[ap.String()] = until
		}
		l.setLives(b.addrs, draining)
		l.state.Store(b)
		keep := map[string]bool{}
		for _, a := range b.addrs {
			keep[a] = true
		}
		l.closeTransports(keep)
	}
	return errors.Join(errs...)
}

// setLives gives every active backend a live context, cancels a draining
// one's when its drain ends (its requests in flight are cut and answered
// 502), and forgets the others, whose requests in flight finish.
func (l *l7Listener) setLives(active []string, draining map[string]time.Time) {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	for _, a := range active {
		if b, ok := l.life[a]; ok {
			if b.timer != nil {
				b.timer.Stop()
				b.timer, b.until = nil, time.Time{}
			}
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		l.life[a] = &backendLife{ctx: ctx, cancel: cancel}
	}
	for a, b := range l.life {
		if slices.Contains(active, a) {
			continue
		}
		until, ok := draining[a]
		switch {
		case !ok:
			if b.timer != nil {
				b.timer.Stop()
			}
			delete(l.life, a)
		case until.IsZero() || until.Equal(b.until):
		default:
			if b.timer != nil {
				b.timer.Stop()
			}
			b.until = until
			b.timer = time.AfterFunc(time.Until(until), b.cancel)
		}
	}
}

// lifeOf is the context requests to addr run under (one that never ends
// for a backend the proxy forgot: a request picked it just before it left).
func (l *l7Listener) lifeOf(addr string) context.Context {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	if b, ok := l.life[addr]; ok {
		return b.ctx
	}
	return context.Background()
}

// Close stops every listener.
func (p *L7Proxy) Close() error { return p.Apply(context.Background(), nil) }

func (l *l7Listener) transport(addr string, cfg profiles.L7) *http.Transport {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	t, ok := l.perNode[addr]
	if !ok {
		t = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			DisableKeepAlives:   !cfg.KeepAlive,
			MaxIdleConnsPerHost: max(cfg.MaxIdleConnsPerNode, 1),
			IdleConnTimeout:     cfg.IdleConnTimeout.D(),
		}
		l.perNode[addr] = t
	}
	return t
}

// closeTransports drops the connection pools of backends not in keep (nil: all).
func (l *l7Listener) closeTransports(keep map[string]bool) {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	for a, t := range l.perNode {
		if keep == nil || !keep[a] {
			t.CloseIdleConnections()
			delete(l.perNode, a)
		}
	}
}

type backendKey struct{}

func (l *l7Listener) handler(log *slog.Logger) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr := pr.In.Context().Value(backendKey{}).(string)
			pr.SetURL(&url.URL{Scheme: "http", Host: addr})
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			sendOnce(pr.Out)
		},
		Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			st := l.state.Load()
			return l.transport(r.URL.Host, st.svc.L7).RoundTrip(r)
		}),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("L7 proxy: backend failed", "backend", r.URL.Host, "err", err)
			http.Error(w, "zerodrop-lb: backend "+r.URL.Host+": "+err.Error()+" (not sent again)", http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := l.state.Load()
		if st == nil || len(st.addrs) == 0 {
			http.Error(w, "zerodrop-lb: no healthy backend", http.StatusServiceUnavailable)
			return
		}
		// Round robin over backends per request, as GFE spreads requests.
		addr := st.addrs[int(l.next.Add(1)-1)%len(st.addrs)]
		// The request lives as long as the client waits and its backend
		// takes traffic (setLives).
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), backendKey{}, addr))
		defer cancel()
		defer context.AfterFunc(l.lifeOf(addr), cancel)()
		rp.ServeHTTP(w, r.WithContext(ctx))
	})
}

// sendOnce keeps Go's http.Transport from sending a body-less request a
// second time, on a new connection, when the pooled connection it went out
// on closes before the response (net/http persistConn.shouldRetryRequest
// re-sends what Request.isReplayable calls replayable: a GET, HEAD, OPTIONS
// or TRACE whose Body is nil or NoBody). That re-send would hide, from the
// client and from every verdict, the race this proxy exists to show: a
// backend closing a kept-alive connection while the front end reuses it.
// Google documents that race as the front end's, not as one it absorbs
// (External Application Load Balancer overview, "Backend HTTP keepalive
// timeout": backends must keep connections open longer than the LB's 600 s
// so their OS does not close them under it); nothing we could read says a
// front end re-sends such a request, so the stand-in does not: the client
// gets the 502. A Body that is neither nil nor NoBody and has no GetBody is
// not replayable; the transport finds it empty before writing the request
// (transferWriter.probeRequestBody), so the request goes out as before,
// with no body and no Transfer-Encoding (TestL7ProxySendsARequestOnce).
func sendOnce(out *http.Request) {
	if out.Body == nil || out.Body == http.NoBody {
		out.Body, out.GetBody, out.ContentLength = emptyBody{}, nil, 0
	}
}

// emptyBody is an empty request body that is not http.NoBody.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Serving lists the addresses the proxy listens on, sorted.
func (p *L7Proxy) Serving() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.listeners {
		out = append(out, l.ln.Addr().String())
	}
	sort.Strings(out)
	return out
}
