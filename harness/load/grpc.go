package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/echoproto"
	"zerodrop.dev/zerodrop/internal/h2frame"
)

// grpcSender calls the echo server's gRPC service (internal/echoproto) over
// h2c with grpc-go's own client, as a gRPC user's program does: one
// ClientConn per target (or per lane, WithRotation), each holding one
// HTTP/2 connection at a time (pick_first), every call a stream on it.
//
// What grpc-go does on its own is measured, as net/http's retries are:
//
//   - Its transparent retry (gRFC A6, "Transparent retry"; grpc-go
//     stream.go, csAttempt.shouldRetry): a call whose first stream the
//     server did not process (REFUSED_STREAM, or above a GOAWAY's last
//     stream) is sent again at once, on whatever connection is ready. A
//     call is counted as carried by a connection once its headers were
//     handed to it (the stats handler's OutHeader), so a call grpc-go
//     moved before it ever made a stream (the transport already draining:
//     http2_client.go NewStream, errStreamDrain) was sent once. A call
//     carried twice is a retry, and counts as dropped.
//   - Configured retries (service config retryPolicy) are off
//     (grpc.WithDisableRetry): a user's policy is theirs to add, and the
//     instrument measures what the server and the LB did.
//
// Every connection's frames pass the same GOAWAY scanner as h2c's, so the
// run file holds each GOAWAY, and a transparent retry's cause names it.
type grpcSender struct {
	// conns are per target, one or more (rotation) each.
	conns   [][]*grpc.ClientConn
	next    atomic.Uint64
	timeout time.Duration
	// streamEvery, when above 0, makes one request in streamEvery a
	// server stream of messages, interval apart, and the rest unary calls
	// (WithStreamEvery; 1 for zdv1.ProtocolGRPCStream: every request).
	streamEvery int
	calls       atomic.Uint64
	messages    int
	interval    time.Duration
	// open is every connection open now, by its local address, so a
	// call's stats can say which connection carried it.
	open sync.Map // string -> *grpcConn
}

// grpcConn is a tracked connection of a ClientConn.
type grpcConn struct {
	*trackedConn
	calls atomic.Int64
	open  *sync.Map
	key   string
}

func (c *grpcConn) Close() error {
	c.open.CompareAndDelete(c.key, c)
	return c.trackedConn.Close()
}

// grpcReconnect is how soon grpc-go dials again after a connection
// attempt failed: its defaults (grpc-go backoff.DefaultConfig: 1 s, x1.6,
// jitter 0.2, at most 120 s) but at most 5 s apart, so one refused dial
// during a disruption does not leave the load failing fast for minutes
// after the target is back. A client with the defaults would see that
// longer tail; this one measures the cluster. A dial may take the load's
// timeout.
func grpcReconnect(timeout time.Duration) grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
		MinConnectTimeout: timeout,
	}
}

func newGRPCSender(c *config, targets []*url.URL, onGoAway func(net.Conn, h2frame.GoAway)) (*grpcSender, error) {
	g := &grpcSender{timeout: c.timeout, streamEvery: c.streamEvery, messages: c.messages, interval: c.interval}
	if c.protocol == zdv1.ProtocolGRPCStream {
		g.streamEvery = 1
	}
	dialer := net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}
	dial := c.ports.Dialer(dialer)
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := dial(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			tc := &trackedConn{Conn: conn}
			tc.frames = goAwayScanner(func(ga h2frame.GoAway) {
				tc.goAway.Store(&ga)
				onGoAway(conn, ga)
			})
			gc := &grpcConn{trackedConn: tc, open: &g.open, key: conn.LocalAddr().String()}
			g.open.Store(gc.key, gc)
			return gc, nil
		}),
		grpc.WithDisableRetry(),
		grpc.WithStatsHandler(grpcStats{g}),
		grpc.WithConnectParams(grpcReconnect(c.timeout)),
		grpc.WithUserAgent("zerodrop-load"),
	}
	if c.host != "" {
		opts = append(opts, grpc.WithAuthority(c.host))
	}
	lanes := max(c.rotate, 1)
	for _, u := range targets {
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
		var ccs []*grpc.ClientConn
		for range lanes {
			// passthrough: the target is an address, not a name for
			// grpc-go's resolver to look up again.
			cc, err := grpc.NewClient("passthrough:///"+host, opts...)
			if err != nil {
				g.close()
				return nil, fmt.Errorf("gRPC client for %s: %w", zdv1.RedactString(u.String()), err)
			}
			ccs = append(ccs, cc)
		}
		g.conns = append(g.conns, ccs)
	}
	return g, nil
}

func (g *grpcSender) close() {
	for _, ccs := range g.conns {
		for _, cc := range ccs {
			_ = cc.Close()
		}
	}
}

func (g *grpcSender) conn(target int) *grpc.ClientConn {
	ccs := g.conns[target]
	if len(ccs) == 1 {
		return ccs[0]
	}
	return ccs[(g.next.Add(1)-1)%uint64(len(ccs))]
}

// do makes one call (sender): a unary call, or a stream read to its end.
func (g *grpcSender) do(parent context.Context, target int, id string) zdv1.Result {
	a := &grpcAttempt{}
	timeout := g.timeout
	md := []string{echoproto.MDRequestID, id}
	stream := g.streamEvery > 0 && (g.calls.Add(1)-1)%uint64(g.streamEvery) == 0
	if stream {
		// The timeout bounds the wait for each message, as it bounds an
		// HTTP answer: the stream's own length comes on top.
		timeout += time.Duration(g.messages) * g.interval
		md = append(md, echoproto.StreamMD(g.messages, g.interval)...)
	}
	ctx, cancel := context.WithTimeoutCause(parent, timeout, errRequestTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(context.WithValue(ctx, grpcAttemptKey{}, a), md...)
	cc := g.conn(target)

	res := zdv1.Result{ID: id, Time: time.Now()}
	var first []byte
	var err error
	if stream {
		res.WantMessages = g.messages
		first, res.Messages, err = recvStream(ctx, cc)
	} else {
		rep := new(wrapperspb.BytesValue)
		err = cc.Invoke(ctx, echoproto.UnaryMethod, &emptypb.Empty{}, rep)
		first = rep.GetValue()
	}
	res.Latency = time.Since(res.Time)

	a.mu.Lock()
	res.Reused = a.reused
	setRetries(&res, a.carried, a.retryErr)
	a.mu.Unlock()

	attribute(&res, first)
	st := status.Convert(err)
	res.GRPCCode = grpcCodeName(st.Code())
	switch {
	case err != nil:
		res.Class = classifyGRPC(ctx, st)
		res.Error = "gRPC " + res.GRPCCode + ": " + st.Message()
		if stream {
			res.Error += fmt.Sprintf(" (after %d of %d messages)", res.Messages, res.WantMessages)
		}
	case stream && res.Messages < res.WantMessages:
		res.Class = zdv1.ClassStreamCut
		res.Error = fmt.Sprintf("the stream ended with status OK after %d of %d messages", res.Messages, res.WantMessages)
	default:
		// gRPC answers every call with HTTP 200 (grpc/grpc
		// doc/PROTOCOL-HTTP2.md, Responses); the call's own outcome is
		// its status, OK here.
		res.Status = 200
	}
	return res
}

// recvStream opens a stream, reads it to its end and returns its first
// message, how many came, and its end (nil: status OK).
func recvStream(ctx context.Context, cc *grpc.ClientConn) ([]byte, int, error) {
	st, err := cc.NewStream(ctx, &echoproto.StreamDesc, echoproto.StreamMethod)
	if err != nil {
		return nil, 0, err
	}
	// A send that fails ends the stream; its status comes from RecvMsg.
	if err := st.SendMsg(&emptypb.Empty{}); err == nil {
		_ = st.CloseSend()
	}
	var first []byte
	n := 0
	for {
		m := new(wrapperspb.BytesValue)
		err := st.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			return first, n, nil
		}
		if err != nil {
			return first, n, err
		}
		if n == 0 {
			first = m.GetValue()
		}
		n++
	}
}

// grpcAttempt follows one call through grpc-go: the connections that
// carried it (more than one: a transparent retry) and why the first one
// did not answer it.
type grpcAttempt struct {
	mu       sync.Mutex
	carried  int
	reused   bool
	prev     *grpcConn
	retryErr error
}

type grpcAttemptKey struct{}

// errGRPCUnprocessed is a transparent retry's cause when no GOAWAY names
// it: the server refused the stream (RST_STREAM REFUSED_STREAM) or the
// connection ended before the server read it.
var errGRPCUnprocessed = errors.New("the server did not process the call's first stream (refused, or its connection " +
	"ended before the server read it); grpc-go sent it again on its own (transparent retry, gRFC A6)")

// carriedBy records that conn (nil: not tracked) took the call's headers.
func (a *grpcAttempt) carriedBy(conn *grpcConn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.carried++
	if a.carried > 1 && a.retryErr == nil {
		a.retryErr = errGRPCUnprocessed
		if a.prev != nil {
			var refused *goAwayRefused
			switch err := a.prev.whyLeft(); {
			case errors.As(err, &refused):
				a.retryErr = err
			case err != nil:
				a.retryErr = fmt.Errorf("%w: %w", errGRPCUnprocessed, err)
			}
		}
	}
	a.reused = conn != nil && conn.calls.Add(1) > 1
	a.prev = conn
}

// grpcStats tells each call's grpcAttempt which connection carried it.
type grpcStats struct{ g *grpcSender }

func (grpcStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (grpcStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (grpcStats) HandleConn(context.Context, stats.ConnStats)                       {}

func (h grpcStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	oh, ok := s.(*stats.OutHeader)
	if !ok || !oh.Client {
		return
	}
	a, _ := ctx.Value(grpcAttemptKey{}).(*grpcAttempt)
	if a == nil {
		return
	}
	var conn *grpcConn
	if oh.LocalAddr != nil {
		if v, ok := h.g.open.Load(oh.LocalAddr.String()); ok {
			conn, _ = v.(*grpcConn)
		}
	}
	a.carriedBy(conn)
}

// classifyGRPC is a failed call's class. grpc-go's status carries the
// transport's error only as text ("connection error: desc = ... connect:
// connection refused"), so the transport's classes are told by the
// system's own error strings; a status with none of them is classed by
// its code ("grpc-unavailable").
func classifyGRPC(ctx context.Context, st *status.Status) string {
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, errRequestTimeout) {
		return zdv1.ClassTimeout
	}
	msg := st.Message()
	switch {
	case st.Code() == codes.DeadlineExceeded, strings.Contains(msg, "i/o timeout"):
		return zdv1.ClassTimeout
	case strings.Contains(msg, "connection refused"):
		return zdv1.ClassRefused
	case strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"),
		strings.Contains(msg, "EOF"), strings.Contains(msg, "transport is closing"):
		// The peer closed or reset the connection under the call.
		return zdv1.ClassReset
	}
	return zdv1.ClassGRPCPrefix + strings.ToLower(grpcCodeName(st.Code()))
}

// grpcCodeName is a status code's canonical name (grpc/grpc
// doc/statuscodes.md): "OK", "UNAVAILABLE", "DEADLINE_EXCEEDED".
func grpcCodeName(c codes.Code) string {
	if n, ok := grpcCodeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

var grpcCodeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}
