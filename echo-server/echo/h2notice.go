package echo

import (
	"context"
	"io"
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

// noticePingData is the opaque data of the notice's PING, so its answer
// is told from any other.
const noticePingData = "zd-notce"

func noticePing() (d [8]byte) {
	copy(d[:], noticePingData)
	return d
}

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
	return newNoticeConn(c), nil
}

// noticeConn is a traffic connection that can send an HTTP/2 shutdown
// notice. It tells HTTP/2 from HTTP/1.1 by the client preface (RFC 9113,
// section 3.4), which Go's server reads whole before it writes anything
// (net/http server.go, maybeServeUnencryptedHTTP2), and from then on
// follows the frames both ways: what the server writes, to find where a
// frame of its own may go, and what the client sends, to see the PING's
// answer. An HTTP/1.1 connection costs one atomic load per read and write.
type noticeConn struct {
	net.Conn
	proto atomic.Int32

	// Read side: only the server's reading goroutine touches these.
	prefaceSeen int
	in          h2frame.Scanner

	acked   chan struct{}
	ackOnce sync.Once

	// Write side, under wmu.
	wmu sync.Mutex
	out h2frame.Scanner
	// started: the server's first frame (its SETTINGS, which must come
	// first: RFC 9113, section 3.4) has gone; nothing of ours goes before.
	started bool
	// done: no notice may go any more: the server sent its own GOAWAY (a
	// notice after it would raise the last stream id, which section 6.8
	// forbids), or a write fell short and the frames are lost track of.
	done    bool
	pending []byte // the notice, waiting for a boundary between frames
	sent    bool
	// noticed: the notice was asked for (set under wmu; read without it
	// by a handler deciding whether to ask).
	noticed atomic.Bool
}

func newNoticeConn(c net.Conn) *noticeConn {
	nc := &noticeConn{Conn: c, acked: make(chan struct{})}
	nc.out.OnFrame = func(f h2frame.Frame) {
		nc.started = true
		if f.Type == h2frame.TypeGoAway {
			nc.done, nc.pending = true, nil
		}
	}
	return nc
}

// CloseWrite half-closes the connection where it can, as net/http does
// to an HTTP/1.1 connection it ends (server.go, closeWriteAndWait);
// embedding would hide it.
func (c *noticeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
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
		ping := noticePing()
		c.in = h2frame.Scanner{
			Keep: func(typ byte) int {
				if typ == h2frame.TypePing {
					return h2frame.PingKeep
				}
				return 0
			},
			OnFrame: func(f h2frame.Frame) {
				if h2frame.PingAck(f, ping) {
					c.ackOnce.Do(func() { close(c.acked) })
				}
			},
		}
		c.proto.Store(protoHTTP2)
	}
	c.in.Feed(b)
}

// Write passes the server's bytes on, and puts a pending notice at the
// first boundary between its frames.
func (c *noticeConn) Write(p []byte) (int, error) {
	if c.proto.Load() != protoHTTP2 {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		if c.pending != nil && c.canInsert() {
			c.flushNotice()
		}
		// Frame by frame while a notice waits, else all at once.
		k := len(p)
		if c.pending != nil {
			k = c.out.FeedFrame(p)
		} else {
			c.out.Feed(p)
		}
		n, err := c.Conn.Write(p[:k])
		written += n
		if err == nil && n < k {
			err = io.ErrShortWrite
		}
		if err != nil {
			// Bytes the scanner read did not all go: it no longer knows
			// where the frames on the wire end.
			c.done, c.pending = true, nil
			return written, err
		}
		p = p[k:]
	}
	if c.pending != nil && c.canInsert() {
		c.flushNotice()
	}
	return written, nil
}

// canInsert says whether a frame of ours may go now: after the server's
// first frame, between two frames, outside a header block.
func (c *noticeConn) canInsert() bool { return c.started && !c.done && c.out.Boundary() }

// flushNotice writes the pending notice; wmu is held and canInsert said
// yes. A failed write is the connection's end, which the server's own
// next write meets and reports.
func (c *noticeConn) flushNotice() {
	n, err := c.Conn.Write(c.pending)
	if err != nil || n < len(c.pending) {
		c.done = true
	} else {
		c.sent = true
	}
	c.pending = nil
}

// notice queues the shutdown notice on an HTTP/2 connection, once: a
// GOAWAY of 2^31-1 and a PING. It answers the channel closed when the
// client's answer to the PING arrives, after which the client has read
// the GOAWAY and opens no stream here; nil on any other connection, or
// one whose server has sent its own GOAWAY. With flush the frames go now
// if the server's frames stand at a boundary (an idle connection); else,
// and always without flush, with the server's next write.
func (c *noticeConn) notice(flush bool) <-chan struct{} {
	if c.proto.Load() != protoHTTP2 {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.noticed.Load() && !c.done {
		c.noticed.Store(true)
		c.pending = h2frame.AppendPing(h2frame.AppendGoAway(nil, h2frame.MaxStreamID, h2frame.CodeNoError, noticeDebug), noticePing())
	}
	if flush && c.pending != nil && c.canInsert() {
		c.flushNotice()
	}
	if c.done && !c.sent {
		return nil // it never went and never will: nothing to wait for
	}
	return c.acked
}

// noticeSettle is how long the drain waits after the last answer to a
// notice's PING. The wrapper sees the answer when the server's buffered
// reader takes it from the connection, which may be in the same read as a
// stream the client sent just before it, one the server has yet to
// process; Go's server names in its GOAWAY only the streams it has
// processed (h2_bundle.go, processHeaders: maxClientStreamID).
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
	// sends and waits on its own, so one cannot hold the others or the
	// drain. The channel holds every report, so none is left blocked.
	const (
		notHTTP2 = iota
		sent
		answeredOne
	)
	reports := make(chan int, 2*len(conns))
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range conns {
		go func() {
			ack := c.notice(true)
			if ack == nil {
				reports <- notHTTP2
				return
			}
			reports <- sent
			select {
			case <-ack:
				reports <- answeredOne
			case <-stop:
			}
		}()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for first := len(conns); first > 0 || answered < noticed; {
		select {
		case r := <-reports:
			switch r {
			case notHTTP2:
				first--
			case sent:
				first--
				noticed++
			case answeredOne:
				answered++
			}
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
