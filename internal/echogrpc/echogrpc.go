// Package echogrpc is the echo server's gRPC service, written once for the
// server that answers it (echo-server) and the load that calls it
// (harness/load): its name, its two methods, the metadata that shapes a
// stream, and its protobuf description for tools that need one (ghz).
//
// The service uses only protobuf's well-known types, so neither side needs
// generated code: a call sends google.protobuf.Empty and gets
// google.protobuf.BytesValue messages, each holding the echo server's JSON
// answer (the same one its HTTP routes give: pod, node, connection,
// readiness, draining). What a call carries besides, its request id and a
// stream's length, travels as metadata, as HTTP headers do for HTTP.
package echogrpc

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The service and its methods' full names (gRPC over HTTP/2: the request's
// :path is "/" service "/" method).
const (
	Service      = "zerodrop.echo.v1.Echo"
	UnaryMethod  = "/" + Service + "/Unary"
	StreamMethod = "/" + Service + "/Stream"
)

// Metadata keys (lower case, as HTTP/2 sends header names).
const (
	// MDRequestID carries the load's request id, as the X-Request-Id
	// header does over HTTP.
	MDRequestID = "x-request-id"
	// MDMessages is how many messages a stream asks for (default
	// DefaultMessages, 1 to MaxMessages).
	MDMessages = "zd-messages"
	// MDInterval is the server's pause before each message of a stream, a
	// Go duration (default DefaultInterval, 0 to MaxInterval).
	MDInterval = "zd-interval"
)

// A stream's bounds: nothing a client asks makes the server hold a stream
// longer than MaxMessages x MaxInterval, or send more than MaxMessages.
const (
	DefaultMessages = 10
	DefaultInterval = 100 * time.Millisecond
	MaxMessages     = 1000
	MaxInterval     = 10 * time.Second
)

// Proto is the service in protobuf's language, for tools that read one
// (ghz --proto); the server and the load build the same service from the
// well-known types directly.
const Proto = `syntax = "proto3";

package zerodrop.echo.v1;

import "google/protobuf/empty.proto";
import "google/protobuf/wrappers.proto";

// Echo answers with the echo server's JSON answer: who served the call and
// in what state. Metadata x-request-id names the call; zd-messages and
// zd-interval shape a stream.
service Echo {
  rpc Unary(google.protobuf.Empty) returns (google.protobuf.BytesValue);
  rpc Stream(google.protobuf.Empty) returns (stream google.protobuf.BytesValue);
}
`

// Handler answers the service's calls. ctx is the call's: it carries the
// incoming metadata, and whatever the server put in the request's context
// (grpc.Server.ServeHTTP serves a call in the HTTP request's context).
type Handler interface {
	// Unary answers one call with one JSON answer.
	Unary(ctx context.Context) ([]byte, error)
	// Stream sends n JSON answers, pausing every before each, and returns
	// when they are sent or ctx ends.
	Stream(ctx context.Context, n int, every time.Duration, send func([]byte) error) error
}

// ServiceDesc is the service, for grpc.Server.RegisterService with a
// Handler.
func ServiceDesc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: Service,
		HandlerType: (*Handler)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Unary",
			Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				b, err := srv.(Handler).Unary(ctx)
				if err != nil {
					return nil, err
				}
				return wrapperspb.Bytes(b), nil
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Stream",
			ServerStreams: true,
			Handler: func(srv any, ss grpc.ServerStream) error {
				if err := ss.RecvMsg(new(emptypb.Empty)); err != nil {
					return err
				}
				md, _ := metadata.FromIncomingContext(ss.Context())
				n, every, err := StreamParams(md)
				if err != nil {
					return status.Error(codes.InvalidArgument, err.Error())
				}
				return srv.(Handler).Stream(ss.Context(), n, every, func(b []byte) error {
					return ss.SendMsg(wrapperspb.Bytes(b))
				})
			},
		}},
	}
}

// StreamDesc is the Stream method's, for grpc.ClientConn.NewStream.
var StreamDesc = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true}

// StreamParams reads a stream's length from its metadata, with the
// defaults and bounds above.
func StreamParams(md metadata.MD) (n int, every time.Duration, err error) {
	n, every = DefaultMessages, DefaultInterval
	if v := md.Get(MDMessages); len(v) > 0 {
		n, err = strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxMessages {
			return 0, 0, fmt.Errorf("%s %q: want 1 to %d messages", MDMessages, v[0], MaxMessages)
		}
	}
	if v := md.Get(MDInterval); len(v) > 0 {
		every, err = time.ParseDuration(v[0])
		if err != nil || every < 0 || every > MaxInterval {
			return 0, 0, fmt.Errorf("%s %q: want a Go duration from 0 to %s, e.g. 100ms", MDInterval, v[0], MaxInterval)
		}
	}
	return n, every, nil
}

// StreamMD is the metadata that asks for a stream of n messages, every
// apart.
func StreamMD(n int, every time.Duration) []string {
	return []string{MDMessages, strconv.Itoa(n), MDInterval, every.String()}
}

// IsGRPC says whether an HTTP request's content type is gRPC's
// ("application/grpc", optionally "+proto" or "+json" and parameters: gRPC
// over HTTP/2, grpc/grpc doc/PROTOCOL-HTTP2.md, Requests).
func IsGRPC(contentType string) bool {
	const ct = "application/grpc"
	if len(contentType) < len(ct) || contentType[:len(ct)] != ct {
		return false
	}
	rest := contentType[len(ct):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}
