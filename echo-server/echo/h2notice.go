package echo

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"zerodrop.dev/zerodrop/internal/h2frame"
)

// An HTTP/2 connection carries many streams, and the client opens the
// next one whenever it likes. Go's server ends a connection gracefully
// with one GOAWAY naming the last stream it has read (net/http
// h2_bundle.go, http2serverConn.startGracefulShutdown and goAway:
// maxClientStreamID) and ignores the streams it reads after it; a client
// that sent a stream while that GOAWAY was on its way sees it refused and
// must send it elsewhere. RFC 9113 (section 6.8) has a server that shuts
// a connection down gracefully send a GOAWAY of 2^31-1 first, as notice,
// and the real one at least a round trip later; gRPC's servers wait for
// the answer to a PING sent with the notice (grpc/grpc-go pull request
// 1403, grpc/grpc pull request 29050), and nghttp2 offers the notice as
// nghttp2_submit_shutdown_notice. net/http has no such call, so the echo
// server puts the two frames between its HTTP/2 server's own frames
// (noticeConn) and waits for the PING's answer before its drain lets Go
// send the real GOAWAY.

// noticePing is the opaque data of the notice's PING, so its answer is
// told from any other.
var noticePing = [8]byte{'z', 'd', '-', 'n', 'o', 't', 'c', 'e'}

// noticeDebug is the notice's GOAWAY debug data (a client may log it).
const noticeDebug = "shutdown notice"

// Protocol of a connection, as its first bytes tell.
const (
	protoUnknown int32 = iota
	protoHTTP1
	protoHTTP2
)

// noticeListener hands out every accepted connection as a noticeConn.
type noticeListener struct{ net.Listener }

func (l noticeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &noticeConn{Conn: c, acked: make(chan struct{})}, nil
}

// noticeConn is a traffic connection that can send an HTTP/2 shutdown
// notice. It tells HTTP/2 from HTTP/1.1 by the client preface (RFC 9113,
// section 3.4), which Go's server reads whole before it writes anything,
// and from then on follows the frames both ways: what the server writes,
// to find where a frame of its own may go, and what the client sends, to
// see the PING's answer. An HTTP/1.1 connection costs one atomic load per
// read and write.
type noticeConn struct {
	net.Conn
	proto atomic.Int32

	// Read side: only the server's reading goroutine touches these.
	prefaceSeen int
	in          h2frame.Scanner

	acked   chan struct{}
	ackOnce sync.Once
	wmu     sync.Mutex
	out     h2frame.Scanner
	pending []byte // the notice, waiting for a boundary between frames
	noticed bool
}

func (c *noticeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.proto.Load() != protoHTTP1 {
		c.readBytes(b[:n])
	}
	return n, err
}

// readBytes follows what the client sent: the preface, then its frames.
func (c *noticeConn) readBytes(b []byte) {
	if c.proto.Load() == protoUnknown {
		k := min(len(b), len(h2frame.ClientPreface)-c.prefaceSeen)
		if string(b[:k]) != h2frame.ClientPreface[c.prefaceSeen:c.prefaceSeen+k] {
			c.proto.Store(protoHTTP1)
			return
		}
		c.prefaceSeen += k
		b = b[k:]
		if c.prefaceSeen < len(h2frame.ClientPreface) {
			return
		}
		c.in = h2frame.Scanner{
			Keep: func(typ byte) int {
				if typ == h2frame.TypePing {
					return h2frame.PingKeep
				}
				return 0
			},
			OnFrame: func(f h2frame.Frame) {
				if h2frame.PingAck(f, noticePing) {
					c.ackOnce.Do(func() { close(c.acked) })
				}
			},
		}
		c.proto.Store(protoHTTP2)
	}
	c.in.Feed(b)
}

func (c *noticeConn) Write(p []byte) (int, error) {
	if c.proto.Load() != protoHTTP2 {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	// The notice goes at the first boundary between the server's frames.
	for len(c.pending) > 0 && len(p) > 0 {
		if c.out.Boundary() {
			c.flushNotice()
			break
		}
		k := c.out.FeedFrame(p)
		n, err := c.Conn.Write(p[:k])
		written += n
		if err != nil {
			return written, err
		}
		p = p[k:]
	}
	if len(c.pending) > 0 && c.out.Boundary() {
		c.flushNotice()
	}
	if len(p) == 0 {
		return written, nil
	}
	c.out.Feed(p)
	n, err := c.Conn.Write(p)
	return written + n, err
}

// flushNotice writes the pending notice; wmu is held and the server's
// frames stand at a boundary. A failed write is the connection's end,
// which the server's own next write meets and reports.
func (c *noticeConn) flushNotice() {
	_, _ = c.Conn.Write(c.pending)
	c.pending = nil
}

// notice sends the shutdown notice on an HTTP/2 connection, once: a
// GOAWAY of 2^31-1 and a PING. It answers the channel closed when the
// client's answer to the PING arrives, after which the client has read
// the GOAWAY and opens no stream here; nil on any other connection. The
// frames go now if the server's frames stand at a boundary, else with its
// next write.
func (c *noticeConn) notice() <-chan struct{} {
	if c.proto.Load() != protoHTTP2 {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.noticed {
		c.noticed = true
		c.pending = h2frame.AppendPing(h2frame.AppendGoAway(nil, h2frame.MaxStreamID, h2frame.CodeNoError, noticeDebug), noticePing)
		if c.out.Boundary() {
			c.flushNotice()
		}
	}
	return c.acked
}

// noticeSettle is how long the drain waits after the last answer to a
// notice's PING: the reading goroutine hands the frames that came before
// the answer to the server's serving goroutine one at a time, so a stream
// sent just before it may still be on its way to being counted.
const noticeSettle = 50 * time.Millisecond

// noticeH2 sends the shutdown notice on every open HTTP/2 traffic
// connection and waits up to wait for every answer (then noticeSettle
// more). It says how many connections got the notice and how many
// answered; it returns early when ctx ends.
func (s *server) noticeH2(ctx context.Context, wait time.Duration) (noticed, answered int) {
	s.connsMu.Lock()
	conns := make([]*noticeConn, 0, len(s.conns))
	for c := range s.conns {
		if nc, ok := c.(*noticeConn); ok {
			conns = append(conns, nc)
		}
	}
	s.connsMu.Unlock()
	// Sending may block on a client that does not read; each connection
	// sends on its own so that one cannot hold the others or the drain.
	acks := make(chan (<-chan struct{}), len(conns))
	for _, c := range conns {
		go func() { acks <- c.notice() }()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var pending []<-chan struct{}
	for range conns {
		select {
		case ack := <-acks:
			if ack != nil {
				pending = append(pending, ack)
			}
		case <-deadline.C:
			return len(pending), 0
		case <-ctx.Done():
			return len(pending), 0
		}
	}
	noticed = len(pending)
	for _, ack := range pending {
		select {
		case <-ack:
			answered++
		case <-deadline.C:
			return noticed, answered
		case <-ctx.Done():
			return noticed, answered
		}
	}
	if noticed > 0 {
		t := time.NewTimer(noticeSettle)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return noticed, answered
}
