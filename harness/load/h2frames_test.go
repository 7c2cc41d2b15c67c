package load

import (
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/h2frame"
)

// A request Go's transport sent again after its connection's server said
// GOAWAY says so, and is classed apart from a broken connection's retry.
func TestRetryAfterGoAwaySaysSo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prev  func() *trackedConn
		class string
		text  string
	}{
		{"after a GOAWAY", func() *trackedConn {
			c := &trackedConn{}
			c.goAway.Store(&h2frame.GoAway{LastStreamID: 2397})
			return c
		}, zdv1.ClassGoAwayRefused, "last stream 2397, NO_ERROR"},
		{"after a shutdown notice, then a reset", func() *trackedConn {
			c := &trackedConn{}
			c.goAway.Store(&h2frame.GoAway{LastStreamID: h2frame.MaxStreamID})
			err := error(syscall.ECONNRESET)
			c.err.Store(&err)
			return c
		}, zdv1.ClassReset, "connection reset"},
		{"after a reset", func() *trackedConn {
			c := &trackedConn{}
			err := error(syscall.ECONNRESET)
			c.err.Store(&err)
			return c
		}, zdv1.ClassReset, "connection reset"},
	} {
		a := attempt{conns: 1, wrote: true, prev: tc.prev()}
		a.gotConn(httptrace.GotConnInfo{Conn: &trackedConn{}})
		if got := Classify(a.retryErr); got != tc.class || !strings.Contains(a.retryErr.Error(), tc.text) {
			t.Errorf("%s: retry error %q (%s), want class %s saying %q", tc.name, a.retryErr, got, tc.class, tc.text)
		}
	}
}

// A connection the transport dropped before it wrote the request (an
// HTTP/2 connection whose GOAWAY came between the pool's pick and the
// stream) did not carry it: the request was sent once, not re-sent.
func TestConnectionNeverWrittenIsNoRetry(t *testing.T) {
	gone := &trackedConn{}
	gone.goAway.Store(&h2frame.GoAway{LastStreamID: h2frame.MaxStreamID})
	for _, tc := range []struct {
		name        string
		wroteFirst  bool
		wantConns   int
		wantRetried bool
	}{
		{"moved before its headers were written", false, 1, false},
		{"written, then sent again", true, 2, true},
	} {
		var a attempt
		a.gotConn(httptrace.GotConnInfo{Conn: gone})
		if tc.wroteFirst {
			a.wroteHeaders()
		}
		a.gotConn(httptrace.GotConnInfo{Conn: &trackedConn{}})
		a.wroteHeaders()
		if a.conns != tc.wantConns || (a.retryErr != nil) != tc.wantRetried {
			t.Errorf("%s: %d connections carried it, retry error %v; want %d, retried %t",
				tc.name, a.conns, a.retryErr, tc.wantConns, tc.wantRetried)
		}
	}
}
