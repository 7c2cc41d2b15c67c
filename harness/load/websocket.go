package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/echoproto"
)

// wsSender opens one WebSocket session (RFC 6455) per request on the echo
// server's route (internal/echoproto) and reads its messages to the
// server's close, as a client of a live feed does:
//
//   - a normal close (1000) after every message asked for is a success;
//   - a close with 1001, "going away" (RFC 6455, section 7.4.1), before
//     them is the server asking the client to go elsewhere: the session
//     opens again for the messages still due (at most wsMaxReconnects
//     times, each after a backoff, wsReconnectDelay), through the LB,
//     which sends it to a Pod that is not going away. The session
//     succeeds if every message came; the result counts the reconnects.
//     That reconnect is the client's own protocol, not a library's
//     hidden re-send: the server said so in a close frame;
//   - a connection that ends without the server's close frame, any other
//     close code, or a session short of its messages is dropped work, and
//     its result says how many messages came.
type wsSender struct {
	client   *http.Client
	targets  []*url.URL
	host     string
	timeout  time.Duration
	messages int
	interval time.Duration
	// event records a server's early close (zdv1.EventWSClose).
	event func(zdv1.Event)
}

// wsMaxReconnects bounds a session's reconnects: a server that keeps
// saying "going away" is not serving.
const wsMaxReconnects = 5

// wsReconnectDelay is the wait before a session's k-th reconnect (k from
// 0): 100 ms doubling, 3.1 s for all five. A client that reconnects at
// once can reach the Pod that said "going away" again while the node's
// kube-proxy has not yet taken its endpoint out (under load, seconds),
// and RFC 6455 has clients back off before they reconnect (section
// 7.2.3, for an abnormal closure).
func wsReconnectDelay(k int) time.Duration { return 100 * time.Millisecond << k }

// wsReconnectBudget is every reconnect's delay together.
func wsReconnectBudget() time.Duration {
	var d time.Duration
	for k := range wsMaxReconnects {
		d += wsReconnectDelay(k)
	}
	return d
}

func newWSSender(c *config, targets []*url.URL, event func(zdv1.Event)) *wsSender {
	// An HTTP/1.1 transport for the upgrade, its connections from the
	// port cycle as every other protocol's; an upgraded connection leaves
	// the pool, so there is no keep-alive to keep.
	tr := newTransport(c, nil)
	return &wsSender{client: &http.Client{Transport: tr}, targets: targets, host: c.host, timeout: c.timeout,
		messages: c.messages, interval: c.interval, event: event}
}

func (w *wsSender) close() { w.client.CloseIdleConnections() }

// errNoCloseFrame is a session's end without the server's close frame.
var errNoCloseFrame = errors.New("the connection ended without the server's close frame")

// do runs one session to its end (sender).
func (w *wsSender) do(parent context.Context, target int, id string) zdv1.Result {
	// The timeout bounds the wait for each message, as it bounds an HTTP
	// answer; the session's own length and its reconnects' delays come on
	// top.
	ctx, cancel := context.WithTimeoutCause(parent, w.timeout+time.Duration(w.messages)*w.interval+wsReconnectBudget(), errRequestTimeout)
	defer cancel()
	res := zdv1.Result{ID: id, Time: time.Now(), WantMessages: w.messages}
	h := http.Header{RequestIDHeader: []string{id}}
	var err error
	for {
		var first []byte
		var closed websocket.StatusCode
		var reason string
		first, closed, reason, err = w.session(ctx, target, h, w.messages-res.Messages, &res.Messages)
		if closed > 0 && closed != websocket.StatusNormalClosure {
			w.closeEvent(id, closed, reason, res.Messages)
		}
		if res.Pod == "" {
			attribute(&res, first)
		}
		if closed != websocket.StatusGoingAway || res.Messages >= w.messages || res.Reconnects >= wsMaxReconnects {
			break
		}
		t := time.NewTimer(wsReconnectDelay(res.Reconnects))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		res.Reconnects++
	}
	res.Latency = time.Since(res.Time)
	switch {
	case err != nil:
		res.Class = classifyAttempt(ctx, err)
		if wc := (*wsClosed)(nil); errors.As(err, &wc) {
			res.Class = wc.class()
		}
		if wa := (*wsAnswered)(nil); errors.As(err, &wa) {
			// Failure kind "http-503", as an HTTP answer's.
			res.Status, res.Class = wa.status, ""
		}
		res.Error = fmt.Sprintf("%v (after %d of %d messages", err, res.Messages, res.WantMessages)
		if res.Reconnects > 0 {
			res.Error += fmt.Sprintf(", %d reconnects", res.Reconnects)
		}
		res.Error += ")"
	case res.Messages < res.WantMessages:
		res.Class = zdv1.ClassStreamCut
		res.Error = fmt.Sprintf("the server closed the session after %d of %d messages (%d reconnects)", res.Messages, res.WantMessages, res.Reconnects)
	default:
		res.Status = http.StatusSwitchingProtocols
	}
	return res
}

// closeEvent records that the server closed session id with code before
// its last message.
func (w *wsSender) closeEvent(id string, code websocket.StatusCode, reason string, got int) {
	if w.event == nil {
		return
	}
	f := map[string]string{"request": id, "code": strconv.Itoa(int(code)), "messages": strconv.Itoa(got),
		"want_messages": strconv.Itoa(w.messages)}
	msg := fmt.Sprintf("the server closed WebSocket session %s with %d (%s) after %d of %d messages", id, int(code), code, got, w.messages)
	if reason != "" {
		f["reason"] = firstLine([]byte(reason), 120)
		msg += ": " + f["reason"]
	}
	w.event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceLoad, Type: zdv1.EventWSClose, Object: "request/" + id, Message: msg, Fields: f})
}

// session opens one connection asking for n messages and reads it to its
// end: its first message, the server's close code (-1 without one) and
// reason, and the error of an end that is not the server's close after its
// messages. got counts the messages as they come.
func (w *wsSender) session(ctx context.Context, target int, h http.Header, n int, got *int) ([]byte, websocket.StatusCode, string, error) {
	u := echoproto.WSURL(w.targets[target], n, w.interval)
	// net/http sends no Host from a request's header map: the dial's own
	// Host option sets it (coder/websocket DialOptions.Host).
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: w.client, HTTPHeader: h, Host: w.host})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, -1, "", &wsAnswered{status: resp.StatusCode}
		}
		return nil, -1, "", err
	}
	defer c.CloseNow()
	var first []byte
	for i := 0; ; i++ {
		_, b, err := c.Read(ctx)
		if err == nil {
			if i == 0 {
				first = b
			}
			*got++
			continue
		}
		code := websocket.CloseStatus(err)
		var ce websocket.CloseError
		reason := ""
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		switch {
		case code == websocket.StatusNormalClosure, code == websocket.StatusGoingAway:
			return first, code, reason, nil
		case code != -1:
			return first, code, reason, &wsClosed{code: code}
		case ctx.Err() != nil:
			return first, -1, "", context.Cause(ctx)
		}
		// The error says how the connection ended (EOF, a reset): the
		// class comes from it.
		return first, -1, "", fmt.Errorf("%w: %w", errNoCloseFrame, err)
	}
}

// wsAnswered is an upgrade the server (or a proxy before it) answered
// with an HTTP status instead of opening the session: the result carries
// the status, as an HTTP request's does.
type wsAnswered struct{ status int }

func (e *wsAnswered) Error() string {
	return fmt.Sprintf("answered: the upgrade got HTTP %d, not 101", e.status)
}

// wsClosed is a session the server closed with a code other than a
// normal close or "going away".
type wsClosed struct{ code websocket.StatusCode }

func (e *wsClosed) Error() string {
	return fmt.Sprintf("the server closed the session with %d (%s)", int(e.code), e.code)
}

// class is "ws-close-" and the code: "ws-close-1011".
func (e *wsClosed) class() string { return "ws-close-" + strconv.Itoa(int(e.code)) }
