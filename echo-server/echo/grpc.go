package echo

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"zerodrop.dev/zerodrop/internal/echoproto"
)

// The echo server answers gRPC (internal/echoproto: a unary method and a
// server-streaming one) on its traffic port, on the same net/http HTTP/2
// server that answers h2c, through grpc-go's Server.ServeHTTP. So a gRPC
// call drains exactly as an HTTP/2 request does: the hardened drain's
// shutdown notice (h2notice.go) and "Connection: close" (Go's GOAWAY), the
// naive recipe's immediate close. Those are the two ways grpc-go's own
// server ends: GracefulStop sends every connection a GOAWAY, waits for a
// PING's answer, sends the real GOAWAY and waits for the streams to finish
// (grpc/grpc-go server.go, GracefulStop; internal/transport http2_server.go,
// drain and outgoingGoAwayHandler: the first GOAWAY names 2^31-1), while
// Stop closes every connection at once, cutting the streams in flight.

// grpcCall is what ServeHTTP knows of a gRPC call that its handler needs
// for the answer: grpc-go serves the call in the HTTP request's context.
type grpcCall struct {
	ci            *connInfo
	nreq          uint64
	remote, proto string
}

type grpcCallKey struct{}

// newGRPC is the gRPC service of s.
func (s *server) newGRPC() *grpc.Server {
	g := grpc.NewServer()
	g.RegisterService(echoproto.ServiceDesc(), grpcEcho{s})
	return g
}

// serveGRPC answers a gRPC call that came in on the traffic port.
func (s *server) serveGRPC(w http.ResponseWriter, r *http.Request, ci *connInfo, nreq uint64) {
	ctx := context.WithValue(r.Context(), grpcCallKey{}, &grpcCall{ci: ci, nreq: nreq, remote: r.RemoteAddr, proto: r.Proto})
	s.grpc.ServeHTTP(w, r.WithContext(ctx))
}

// grpcEcho answers the echo service's calls with the echo answer.
type grpcEcho struct{ s *server }

func (g grpcEcho) Unary(ctx context.Context) ([]byte, error) { return g.s.grpcAnswer(ctx), nil }

// Stream sends its messages on time whatever the server's state: a drain
// ends a stream only by ending its connection (the naive recipe at once,
// the hardened one after its drain budget), as a server that streams a
// bounded answer does.
func (g grpcEcho) Stream(ctx context.Context, n int, every time.Duration, send func([]byte) error) error {
	t := time.NewTimer(every)
	defer t.Stop()
	for i := range n {
		if every > 0 {
			if i > 0 {
				t.Reset(every)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		if err := send(g.s.grpcAnswer(ctx)); err != nil {
			return err
		}
	}
	return nil
}

// grpcAnswer is the echo answer to a gRPC call, in the server's state now.
func (s *server) grpcAnswer(ctx context.Context) []byte {
	var a answer
	a.sample(s)
	if c, ok := ctx.Value(grpcCallKey{}).(*grpcCall); ok {
		a.ci, a.nreq, a.remote, a.proto = c.ci, c.nreq, c.remote, c.proto
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(echoproto.MDRequestID); len(v) > 0 {
			a.requestID = v[0]
		}
		a.xff = joined(md.Get("x-forwarded-for"))
	}
	return s.appendAnswer(make([]byte, 0, 512), &a)
}
