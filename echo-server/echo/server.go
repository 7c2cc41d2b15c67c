package echo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"zerodrop.dev/zerodrop/internal/echoproto"
	"zerodrop.dev/zerodrop/internal/jsonstr"
)

const (
	// keepAliveHeader is what the contract advertises on every traffic
	// answer while keep-alive is on.
	keepAliveHeader = "timeout=30"
	// idleTimeout is how long the server keeps an idle connection. It is
	// deliberately far above the advertised 30s and above GCLB's 600s
	// backend keep-alive: the server must never be the side that closes an
	// idle connection a client or LB is about to reuse, or the suite would
	// count the race as a drop the cluster did not cause.
	idleTimeout = 11 * time.Minute
	// closeGrace bounds how long a drain leaves idle keep-alive connections
	// open for their clients to close after a Connection: close answer (see
	// terminate); closePoll is how often it counts the ones still open.
	// A connection that carries no request in the grace is closed by a
	// client whose idle timeout is shorter (zerodrop's load: 3 s,
	// load.DefaultIdleTimeout); one left for Shutdown to close races the
	// client's next request on it.
	closeGrace = 5 * time.Second
	closePoll  = 20 * time.Millisecond
	// readHeaderTimeout bounds slow or stuck clients.
	readHeaderTimeout = 10 * time.Second
	// maxDelay caps ?delay= so a typo cannot pin a connection for hours.
	maxDelay = 10 * time.Minute
)

// server is one echo server's state: switches, counters and the pieces of
// the answer that never change. Everything is reachable from Run's stack
// frame; nothing is global.
type server struct {
	cfg Config
	log *slog.Logger

	readySwitch atomic.Bool // the admin/flag switch; see ready()
	keepAlive   atomic.Bool
	terminating atomic.Bool // a termination signal arrived
	draining    atomic.Bool // stopped accepting; graceful shutdown running

	served            atomic.Uint64
	servedUnready     atomic.Uint64
	servedDraining    atomic.Uint64
	servedTerminating atomic.Uint64
	openConns         atomic.Int64
	connsTotal        atomic.Uint64

	// conns is every open traffic connection, touched once per connection
	// (never per request), so a drain that runs out of time can say what
	// it cut: requests in flight, or connections that never sent one.
	connsMu sync.Mutex
	conns   map[net.Conn]*connInfo

	// connPrefix makes conn_id unique across restarts of a pod with the
	// same name, so the harness never merges two connections.
	connPrefix string

	identityJSON []byte // `{"pod":...,"pod_ip":"..."`
	hdrJSON      []string
	hdrPod       []string
	hdrKeepAlive []string
	hdrClose     []string

	bufs sync.Pool

	registry *prometheus.Registry

	// grpc answers the gRPC calls of the traffic port (grpc.go).
	grpc *grpc.Server
	// ws are the open WebSocket sessions (websocket.go).
	ws *wsSessions
}

type connKey struct{}

// connInfo is per TCP connection, created in ConnContext. The JSON
// fragments are encoded once per connection instead of once per request.
type connInfo struct {
	requests atomic.Uint64
	// inFlight counts the requests being answered on the connection:
	// one at a time over HTTP/1.1, any number of streams over HTTP/2.
	inFlight atomic.Int32
	peerJSON []byte // `,"client_ip":"...","client_port":N`
	idJSON   []byte // `,"conn_id":"..."`
	// nc is the connection, for its HTTP/2 shutdown notice (nil where the
	// listener is not the server's own, as in the benchmark).
	nc *noticeConn
}

func newServer(cfg Config, log *slog.Logger) (*server, error) {
	var nonce [4]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("reading a random conn_id prefix: %w", err)
	}
	s := &server{
		cfg:          cfg,
		log:          log,
		connPrefix:   hex.EncodeToString(nonce[:]),
		hdrJSON:      []string{"application/json"},
		hdrPod:       []string{cfg.Identity.Pod},
		hdrKeepAlive: []string{keepAliveHeader},
		hdrClose:     []string{"close"},
		conns:        map[net.Conn]*connInfo{},
	}
	s.readySwitch.Store(cfg.Ready)
	s.keepAlive.Store(cfg.KeepAlive)
	s.bufs.New = func() any { b := make([]byte, 0, 512); return &b }

	b := append([]byte(nil), `{"pod":`...)
	b = jsonstr.Append(b, cfg.Identity.Pod)
	b = append(b, `,"node":`...)
	b = jsonstr.Append(b, cfg.Identity.Node)
	b = append(b, `,"namespace":`...)
	b = jsonstr.Append(b, cfg.Identity.Namespace)
	b = append(b, `,"pod_ip":`...)
	b = jsonstr.Append(b, cfg.Identity.PodIP)
	s.identityJSON = b

	reg, err := s.newRegistry()
	if err != nil {
		return nil, err
	}
	s.registry = reg
	s.grpc = s.newGRPC()
	s.ws = newWSSessions()
	return s, nil
}

// ready is what /readyz answers: the switch is on and the server is not
// draining. The echo answer's "ready" is the same value, so a request
// counted in served_while_unready is one a readiness probe at the same
// instant would have failed.
func (s *server) ready() bool {
	return s.readySwitch.Load() && !s.draining.Load()
}

// connContext gives every accepted connection its identity.
func (s *server) connContext(ctx context.Context, c net.Conn) context.Context {
	n := s.connsTotal.Add(1)
	ci := &connInfo{}
	ci.idJSON = append(ci.idJSON, `,"conn_id":"`...)
	ci.idJSON = append(ci.idJSON, s.connPrefix...)
	ci.idJSON = append(ci.idJSON, '-')
	ci.idJSON = strconv.AppendUint(ci.idJSON, n, 10)
	ci.idJSON = append(ci.idJSON, '"')
	ci.peerJSON = appendPeer(nil, c.RemoteAddr().String())
	ci.nc, _ = c.(*noticeConn)
	s.connsMu.Lock()
	s.conns[c] = ci
	s.connsMu.Unlock()
	return context.WithValue(ctx, connKey{}, ci)
}

// connState keeps open_connections; hijacked connections leave our
// accounting because net/http no longer reports on them.
func (s *server) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.openConns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.openConns.Add(-1)
		s.connsMu.Lock()
		delete(s.conns, c)
		s.connsMu.Unlock()
	}
}

// openConnCensus counts open connections with a request in flight and
// those that have not sent a request yet (net/http's Shutdown waits up to
// 5s for the latter: a first request may be on its way).
func (s *server) openConnCensus() (inFlight, noRequest int) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for _, ci := range s.conns {
		switch {
		case ci.inFlight.Load() > 0:
			inFlight++
		case ci.requests.Load() == 0:
			noRequest++
		}
	}
	return inFlight, noRequest
}

// appendPeer encodes the client address fields from a "host:port" string.
func appendPeer(b []byte, remote string) []byte {
	ip, port := remote, 0
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		ip, port = ap.Addr().Unmap().WithZone("").String(), int(ap.Port())
	} else if h, p, err := net.SplitHostPort(remote); err == nil {
		ip = h
		port, _ = strconv.Atoi(p)
	}
	b = append(b, `,"client_ip":`...)
	b = jsonstr.Append(b, ip)
	b = append(b, `,"client_port":`...)
	return strconv.AppendInt(b, int64(port), 10)
}

// ServeHTTP is the traffic port. A switch instead of a ServeMux: this is
// the hot path and there are three routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ci, _ := r.Context().Value(connKey{}).(*connInfo)
	var nreq uint64
	if ci != nil {
		nreq = ci.requests.Add(1)
		ci.inFlight.Add(1)
		defer ci.inFlight.Add(-1)
	}
	h := w.Header()
	// Decided per answer, not per server, so the admin switch takes effect
	// on the next answer of every open connection; net/http honours a
	// handler's "Connection: close" by closing after the answer (HTTP/2:
	// by a GOAWAY, then closing once its streams are done). Keep-Alive is
	// an HTTP/1.1 header (RFC 9113, section 8.2.2 forbids it in HTTP/2).
	if s.closeAfter(r, ci) {
		h["Connection"] = s.hdrClose
	} else if r.ProtoMajor < 2 {
		h["Keep-Alive"] = s.hdrKeepAlive
	}
	h["X-Echo-Pod"] = s.hdrPod

	switch p := r.URL.Path; {
	case echoproto.IsWebSocket(r):
		s.serveWS(w, r, ci, nreq)
	case r.ProtoMajor == 2 && echoproto.IsGRPC(r.Header.Get("Content-Type")):
		s.serveGRPC(w, r, ci, nreq)
	case slices.Contains(s.cfg.ReadyPaths, p):
		switch {
		case s.draining.Load():
			plain(w, http.StatusServiceUnavailable, "not ready: draining\n")
		case !s.readySwitch.Load():
			plain(w, http.StatusServiceUnavailable, "not ready: readiness is switched off\n")
		default:
			plain(w, http.StatusOK, "ready\n")
		}
	case slices.Contains(s.cfg.LivePaths, p):
		plain(w, http.StatusOK, "ok\n")
	case p == "/metrics" || p == "/admin" || strings.HasPrefix(p, "/admin/"):
		plain(w, http.StatusNotFound, "404 not found: admin endpoints and metrics are on the admin port only\n")
	default:
		s.echo(w, r, ci, nreq)
	}
	if s.cfg.LogRequests {
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "conn_request", nreq)
	}
}

// closeAfter says whether the answer asks the client to close its
// connection: keep-alive is off, or the server drains. A draining server
// that gives HTTP/2 clients the shutdown notice (Config.H2Notice) sends it
// instead, on a connection that has not had it yet (one opened during the
// drain): the "Connection: close" would have Go's server send its own
// GOAWAY at once, which refuses the streams the client sends meanwhile
// (h2notice.go). Shutdown's GOAWAY ends such a connection, if its client
// has not closed it first.
func (s *server) closeAfter(r *http.Request, ci *connInfo) bool {
	draining := s.draining.Load()
	if draining && r.ProtoMajor == 2 && s.noticeOn() && ci != nil && ci.nc != nil {
		// On its own goroutine: a handler never waits on a client that
		// does not read. Once per connection, not per answer: the drain
		// or an earlier answer may have asked already.
		if !ci.nc.noticed.Load() {
			go ci.nc.notice(true)
		}
		return !s.keepAlive.Load()
	}
	return draining || !s.keepAlive.Load()
}

// noticeOn says whether the drain gives HTTP/2 clients the shutdown notice.
func (s *server) noticeOn() bool { return s.cfg.DrainTimeout > 0 && s.cfg.H2Notice > 0 }

func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// echo writes the JSON answer. It samples the state after any requested
// delay, so "ready" and "draining" describe the moment of answering.
func (s *server) echo(w http.ResponseWriter, r *http.Request, ci *connInfo, nreq uint64) {
	if r.URL.RawQuery != "" {
		if d := r.URL.Query().Get("delay"); d != "" {
			delay, err := time.ParseDuration(d)
			if err != nil || delay < 0 || delay > maxDelay {
				plain(w, http.StatusBadRequest, fmt.Sprintf("400 bad request: delay=%q: want a Go duration between 0 and %s, e.g. delay=250ms\n", d, maxDelay))
				return
			}
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return // the client or a forced close ended it; nothing to answer
			}
		}
	}

	a := answer{ci: ci, remote: r.RemoteAddr, xff: headerJoined(r.Header, "X-Forwarded-For"), proto: r.Proto, nreq: nreq}
	a.sample(s)
	// ServeHTTP chose keep-alive when the request came in; a drain (or the
	// admin switch) that began during a requested delay asks this client to
	// close too, or the drain would have to close the connection under it.
	if h := w.Header(); (a.draining || !a.keepAlive) && h["Connection"] == nil && s.closeAfter(r, ci) {
		delete(h, "Keep-Alive")
		h["Connection"] = s.hdrClose
	}
	rid := r.Header["X-Request-Id"]
	if len(rid) > 0 {
		a.requestID = rid[0]
	}
	bp := s.bufs.Get().(*[]byte)
	b := s.appendAnswer((*bp)[:0], &a)

	h := w.Header()
	h["Content-Type"] = s.hdrJSON
	if len(rid) > 0 {
		// Capped slice of the request's own: no copy, and an append by
		// anyone downstream cannot write into the request header.
		h["X-Request-Id"] = rid[:1:1]
	}
	// No explicit Content-Length or WriteHeader: for a body written in one
	// go below net/http's 2KB buffer, net/http sets the length itself
	// without allocating, which keeps HTTP/1.0 keep-alive working too.
	_, _ = w.Write(b)

	if cap(b) <= 64<<10 { // do not keep a buffer a huge header grew
		*bp = b
		s.bufs.Put(bp)
	}
}

// headerJoined is the header's values as one list, the way proxies that
// send X-Forwarded-For on several lines mean it.
func headerJoined(h http.Header, key string) string { return joined(h[key]) }

// joined is a header's or a metadata key's values as one list.
func joined(v []string) string {
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	return strings.Join(v, ", ")
}

// answer is what one echo answer says besides the server's identity: who
// asked, on which connection, and the server's state when it answered.
type answer struct {
	ci                                      *connInfo
	remote, xff, proto, requestID           string
	nreq                                    uint64
	ready, draining, terminating, keepAlive bool
}

// sample takes the server's state now into the answer: an answer says
// what the server was when it answered.
func (a *answer) sample(s *server) {
	a.ready, a.draining, a.terminating, a.keepAlive = s.ready(), s.draining.Load(), s.terminating.Load(), s.keepAlive.Load()
}

// appendAnswer appends the JSON answer to b and counts it as served. Every
// route that answers (HTTP, gRPC unary, each message of a gRPC stream or
// a WebSocket session) says the same fields the same way.
func (s *server) appendAnswer(b []byte, a *answer) []byte {
	seq := s.served.Add(1)
	if !a.ready {
		s.servedUnready.Add(1)
	}
	if a.draining {
		s.servedDraining.Add(1)
	}
	if a.terminating {
		s.servedTerminating.Add(1)
	}
	now := time.Now().UTC()

	b = append(b, s.identityJSON...)
	if a.ci != nil {
		b = append(b, a.ci.peerJSON...)
	} else {
		b = appendPeer(b, a.remote)
	}
	b = append(b, `,"x_forwarded_for":`...)
	b = jsonstr.Append(b, a.xff)
	b = append(b, `,"ready":`...)
	b = appendJSONBool(b, a.ready)
	b = append(b, `,"draining":`...)
	b = appendJSONBool(b, a.draining)
	b = append(b, `,"terminating":`...)
	b = appendJSONBool(b, a.terminating)
	b = append(b, `,"keepalive":`...)
	b = appendJSONBool(b, a.keepAlive)
	b = append(b, `,"proto":`...)
	b = jsonstr.Append(b, a.proto)
	if a.ci != nil {
		b = append(b, a.ci.idJSON...)
	} else {
		b = append(b, `,"conn_id":""`...)
	}
	b = append(b, `,"conn_request":`...)
	b = strconv.AppendUint(b, a.nreq, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"time":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","request_id":`...)
	b = jsonstr.Append(b, a.requestID)
	return append(b, "}\n"...)
}
