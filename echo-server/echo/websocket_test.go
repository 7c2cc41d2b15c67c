package echo

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"zerodrop.dev/zerodrop/internal/echoproto"
)

// wsRead opens a session on addr asking for n messages every apart and
// reads it to its end: the answers, and the close code (-1: none).
func wsRead(ctx context.Context, t *testing.T, addr string, n int, every time.Duration) ([]Reply, websocket.StatusCode, string) {
	t.Helper()
	u := echoproto.WSURL(mustURL(t, "http://"+addr+"/"), n, every)
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"X-Request-Id": {"ws-1"}}})
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer c.CloseNow()
	var got []Reply
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			reason := ""
			if ok := asClose(err, &ce); ok {
				reason = ce.Reason
			}
			return got, websocket.CloseStatus(err), reason
		}
		got = append(got, decodeReply(t, b))
	}
}

// The traffic port opens WebSocket sessions: the answers asked for, each
// an echo answer naming the session's request, then a normal close; a
// session asked beyond the bounds is refused with 400.
func TestWebSocketServed(t *testing.T) {
	r := start(t, testConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, code, _ := wsRead(ctx, t, r.traffic, 3, 10*time.Millisecond)
	if len(got) != 3 || code != websocket.StatusNormalClosure {
		t.Fatalf("session of 3: %d messages, close %d; want 3 and 1000", len(got), code)
	}
	if a := got[0]; a.Proto != "websocket" || a.RequestID != "ws-1" || a.Pod != testIdentity.Pod || got[2].Seq <= a.Seq {
		t.Errorf("answers %+v", got)
	}
	// The upgrade asks for a session, not the path: a plain GET there is
	// an echo answer like any other.
	if resp, _ := get(t, "http://"+r.traffic+echoproto.WSPath+"?messages=0"); resp.StatusCode != http.StatusOK {
		t.Errorf("a plain GET of %s: %s, want 200", echoproto.WSPath, resp.Status)
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+r.traffic+echoproto.WSPath+"?interval=soon", nil)
	if err == nil {
		c.CloseNow()
	}
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("interval=soon: %v, %v; want 400", resp, err)
	}
}

// A graceful drain closes a session with 1001 and the reconnect reason;
// the naive end cuts it without a close frame.
func TestWebSocketDrain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		drain  time.Duration
		code   websocket.StatusCode
		reason string
	}{
		{"graceful", 3 * time.Second, websocket.StatusGoingAway, echoproto.WSReconnect},
		{"hard", 0, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.DrainTimeout, cfg.ShutdownDelay = tc.drain, 0
			r := start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			type end struct {
				got    []Reply
				code   websocket.StatusCode
				reason string
			}
			done := make(chan end, 1)
			go func() {
				got, code, reason := wsRead(ctx, t, r.traffic, 100, 20*time.Millisecond)
				done <- end{got, code, reason}
			}()
			eventually(t, 5*time.Second, "the session's first answers", func() bool { return r.stats(t).ServedTotal >= 2 })
			r.signals <- syscall.SIGTERM
			e := <-done
			if e.code != tc.code || e.reason != tc.reason || len(e.got) == 0 || len(e.got) >= 100 {
				t.Errorf("session across a %s stop: %d messages, close %d %q; want some, then %d %q", tc.name, len(e.got), e.code, e.reason, tc.code, tc.reason)
			}
			if err := r.wait(t, 5*time.Second); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func asClose(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }
