package echo

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"zerodrop.dev/zerodrop/internal/echoproto"
)

func grpcClient(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// recvStream asks for a stream of n messages every apart and reads it to
// its end: the answers it got, and its end's error (nil: status OK).
func recvStream(ctx context.Context, t *testing.T, cc *grpc.ClientConn, n int, every time.Duration) ([]Reply, error) {
	t.Helper()
	ctx = metadata.AppendToOutgoingContext(ctx, echoproto.StreamMD(n, every)...)
	st, err := cc.NewStream(ctx, &echoproto.StreamDesc, echoproto.StreamMethod)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(&emptypb.Empty{}); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	var got []Reply
	for {
		var m wrapperspb.BytesValue
		err := st.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, decodeReply(t, m.Value))
	}
}

// The traffic port answers gRPC beside HTTP: a unary call gets the echo
// answer (its request id, its connection and the call's number on it), a
// stream gets the messages it asked for, and a stream asked beyond the
// bounds is refused with INVALID_ARGUMENT.
func TestGRPCServed(t *testing.T) {
	r := start(t, testConfig())
	cc := grpcClient(t, r.traffic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var conn string
	for i := range 3 {
		var rep wrapperspb.BytesValue
		cctx := metadata.AppendToOutgoingContext(ctx, echoproto.MDRequestID, "id-"+string(rune('a'+i)))
		if err := cc.Invoke(cctx, echoproto.UnaryMethod, &emptypb.Empty{}, &rep); err != nil {
			t.Fatalf("unary call %d: %v", i, err)
		}
		a := decodeReply(t, rep.Value)
		if a.Pod != testIdentity.Pod || a.RequestID != "id-"+string(rune('a'+i)) || a.Proto != "HTTP/2.0" ||
			a.ConnRequest != uint64(i+1) || (conn != "" && a.ConnID != conn) {
			t.Errorf("unary answer %d: %+v; want pod %s, request id id-%c, HTTP/2.0, call %d on one connection", i, a, testIdentity.Pod, 'a'+i, i+1)
		}
		conn = a.ConnID
	}
	got, err := recvStream(ctx, t, cc, 3, 10*time.Millisecond)
	if err != nil || len(got) != 3 {
		t.Fatalf("stream of 3: got %d messages, end %v; want 3 and OK", len(got), err)
	}
	if got[0].Seq >= got[2].Seq || got[0].ConnID != conn {
		t.Errorf("stream answers: seq %d..%d on %s; want rising seq on %s", got[0].Seq, got[2].Seq, got[0].ConnID, conn)
	}
	for _, md := range [][]string{{echoproto.MDMessages, "0"}, {echoproto.MDMessages, "1001"}, {echoproto.MDInterval, "11s"}, {echoproto.MDInterval, "soon"}} {
		sctx := metadata.AppendToOutgoingContext(ctx, md...)
		st, err := cc.NewStream(sctx, &echoproto.StreamDesc, echoproto.StreamMethod)
		if err != nil {
			t.Fatal(err)
		}
		_ = st.SendMsg(&emptypb.Empty{})
		_ = st.CloseSend()
		if err := st.RecvMsg(new(wrapperspb.BytesValue)); status.Code(err) != codes.InvalidArgument {
			t.Errorf("stream with %s=%s: %v; want INVALID_ARGUMENT", md[0], md[1], err)
		}
	}
}

// A graceful drain lets a stream in flight finish; the naive one (no drain
// budget: grpc-go's Stop) cuts it.
func TestGRPCStreamDrain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		whole bool
	}{
		{"graceful", 3 * time.Second, true},
		{"hard", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.DrainTimeout, cfg.ShutdownDelay = tc.drain, 0
			r := start(t, cfg)
			cc := grpcClient(t, r.traffic)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			type end struct {
				got []Reply
				err error
			}
			done := make(chan end, 1)
			go func() {
				got, err := recvStream(ctx, t, cc, 10, 50*time.Millisecond)
				done <- end{got, err}
			}()
			eventually(t, 5*time.Second, "the stream's first answers", func() bool { return r.stats(t).ServedTotal >= 2 })
			r.signals <- syscall.SIGTERM
			e := <-done
			if whole := e.err == nil && len(e.got) == 10; whole != tc.whole {
				t.Errorf("stream of 10 across a %s stop: %d messages, end %v; want whole %v", tc.name, len(e.got), e.err, tc.whole)
			}
		})
	}
}
