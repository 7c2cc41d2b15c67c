package echo

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"zerodrop.dev/zerodrop/internal/echoproto"
)

// The echo server's WebSocket route (internal/echoproto): a session gets
// the echo answers it asked for as text messages, then a normal close.
//
// A WebSocket outlives any request: once upgraded, its connection is no
// longer net/http's (hijacked), and http.Server.Shutdown neither waits for
// it nor closes it. So the drain ends sessions itself, the two ways a
// server can: the hardened drain (a drain budget above 0) closes each with
// 1001 "going away" and a reason asking the client to reconnect (RFC 6455,
// section 7.4.1), then waits for the closing handshakes within the budget;
// the naive end cuts them without a close frame, as a process that exits
// does. Sessions still open when the budget runs out are cut too.

// wsSessions are the open sessions and the drain's request to end them.
type wsSessions struct {
	mu    sync.Mutex
	open  map[*websocket.Conn]struct{}
	leave chan struct{} // closed: sessions close with 1001
	once  sync.Once
}

func newWSSessions() *wsSessions {
	return &wsSessions{open: map[*websocket.Conn]struct{}{}, leave: make(chan struct{})}
}

func (ws *wsSessions) add(c *websocket.Conn) {
	ws.mu.Lock()
	ws.open[c] = struct{}{}
	ws.mu.Unlock()
}

func (ws *wsSessions) remove(c *websocket.Conn) {
	ws.mu.Lock()
	delete(ws.open, c)
	ws.mu.Unlock()
}

func (ws *wsSessions) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.open)
}

// goAway asks every session, open or still to come, to close with 1001.
func (ws *wsSessions) goAway() { ws.once.Do(func() { close(ws.leave) }) }

// await waits until no session is open or ctx ends, and says how many are
// left.
func (ws *wsSessions) await(ctx context.Context) int {
	t := time.NewTicker(closePoll)
	defer t.Stop()
	for {
		n := ws.count()
		if n == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
	}
}

// cut closes every open session's connection without a close frame and
// says how many it cut.
func (ws *wsSessions) cut() int {
	ws.mu.Lock()
	conns := make([]*websocket.Conn, 0, len(ws.open))
	for c := range ws.open {
		conns = append(conns, c)
	}
	ws.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
	return len(conns)
}

// wsWriteTimeout bounds one message's write: a client that stops reading
// does not hold a session past it.
const wsWriteTimeout = 10 * time.Second

// serveWS runs one session.
func (s *server) serveWS(w http.ResponseWriter, r *http.Request, ci *connInfo, nreq uint64) {
	n, every, err := echoproto.WSParams(r.URL.Query())
	if err != nil {
		plain(w, http.StatusBadRequest, "400 bad request: "+err.Error()+"\n")
		return
	}
	// The upgrade's answer is no keep-alive answer.
	delete(w.Header(), "Keep-Alive")
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the client with what was wrong
	}
	s.ws.add(c)
	defer s.ws.remove(c)
	// The client sends nothing but control frames; reading them is what
	// answers its pings and its close.
	ctx := c.CloseRead(r.Context())
	a := answer{ci: ci, remote: r.RemoteAddr, xff: headerJoined(r.Header, "X-Forwarded-For"), proto: "websocket", nreq: nreq}
	if rid := r.Header["X-Request-Id"]; len(rid) > 0 {
		a.requestID = rid[0]
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for i := range n {
		if i > 0 {
			t.Reset(every)
		}
		select {
		case <-s.ws.leave:
			_ = c.Close(websocket.StatusGoingAway, echoproto.WSReconnect)
			return
		case <-ctx.Done():
			_ = c.CloseNow()
			return
		case <-t.C:
		}
		a.sample(s)
		wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		err := c.Write(wctx, websocket.MessageText, s.appendAnswer(make([]byte, 0, 512), &a))
		cancel()
		if err != nil {
			_ = c.CloseNow()
			return
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}
