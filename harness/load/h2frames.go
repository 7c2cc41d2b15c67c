package load

import (
	"fmt"

	"zerodrop.dev/zerodrop/internal/h2frame"
)

// An HTTP/2 server ends a connection it wants gone with a GOAWAY frame
// (RFC 9113, section 6.8): the last stream it processed or may still
// process, an error code, and optional debug data. Streams above the last
// one were not processed and a client may send them again on another
// connection, which Go's transport does on its own (net/http
// h2_bundle.go, http2canRetryError). Go's client API does not say that
// it received one, so the load reads its connections' frames as they pass
// (an h2frame.Scanner on the trackedConn) and records each GOAWAY as an
// event: the evidence, next to a failure window, of whether a server said
// goodbye before its connections went.

// goAwayScanner is a Scanner that calls onGoAway for each GOAWAY.
func goAwayScanner(onGoAway func(h2frame.GoAway)) *h2frame.Scanner {
	return &h2frame.Scanner{
		Keep: func(typ byte) int {
			if typ == h2frame.TypeGoAway {
				return h2frame.GoAwayKeep
			}
			return 0
		},
		OnFrame: func(f h2frame.Frame) {
			if g, ok := h2frame.ParseGoAway(f); ok {
				onGoAway(g)
			}
		},
	}
}

// goAwayRefused is why an HTTP/2 request was sent again: its first
// connection's server sent GOAWAY, whose last stream was below the
// request's (Go's transport re-sends only such streams, REFUSED_STREAM
// ones and those it never wrote: net/http h2_bundle.go,
// http2canRetryError), so the server had not processed it.
type goAwayRefused struct{ g h2frame.GoAway }

func (e *goAwayRefused) Error() string {
	return fmt.Sprintf("the server's GOAWAY (last stream %d, %s) came before it read this request's stream, "+
		"so it did not process it (RFC 9113, section 6.8); the client sent it again on another connection",
		e.g.LastStreamID, h2frame.ErrorName(e.g.Code))
}
