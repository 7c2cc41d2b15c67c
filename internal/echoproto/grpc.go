package echoproto

import (
	"context"
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

// GRPCProto is the service in protobuf's language, for tools that read one
// (ghz --proto); the server and the load build the same service from the
// well-known types directly.
const GRPCProto = `syntax = "proto3";

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

// GRPCHandler answers the service's calls. ctx is the call's: it carries the
// incoming metadata, and whatever the server put in the request's context
// (grpc.Server.ServeHTTP serves a call in the HTTP request's context).
type GRPCHandler interface {
	// Unary answers one call with one JSON answer.
	Unary(ctx context.Context) ([]byte, error)
	// Stream sends n JSON answers, pausing every before each, and returns
	// when they are sent or ctx ends.
	Stream(ctx context.Context, n int, every time.Duration, send func([]byte) error) error
}

// ServiceDesc is the service, for grpc.Server.RegisterService with a
// GRPCHandler.
func ServiceDesc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: Service,
		HandlerType: (*GRPCHandler)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Unary",
			Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				b, err := srv.(GRPCHandler).Unary(ctx)
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
				return srv.(GRPCHandler).Stream(ss.Context(), n, every, func(b []byte) error {
					return ss.SendMsg(wrapperspb.Bytes(b))
				})
			},
		}},
	}
}

// StreamDesc is the Stream method's, for grpc.ClientConn.NewStream.
var StreamDesc = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true}

// StreamParams reads a stream's length from its metadata (ParseStream).
func StreamParams(md metadata.MD) (n int, every time.Duration, err error) {
	return ParseStream(MDMessages, first(md.Get(MDMessages)), MDInterval, first(md.Get(MDInterval)))
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
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
