package load

import (
	"encoding/binary"
	"net/http/httptrace"
	"reflect"
	"strings"
	"syscall"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// frame is one HTTP/2 frame's bytes (RFC 9113, section 4.1).
func frame(typ byte, stream uint32, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

func goAwayFrame(last, code uint32, debug string) []byte {
	p := make([]byte, 8, 8+len(debug))
	binary.BigEndian.PutUint32(p, last)
	binary.BigEndian.PutUint32(p[4:], code)
	return frame(h2FrameGoAway, 0, append(p, debug...))
}

func TestFrameScanner(t *testing.T) {
	settings := frame(0x4, 0, make([]byte, 18))
	ack := frame(0x4, 0, nil)
	data := frame(0x0, 3, make([]byte, 40000))
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		want   []goAway
	}{
		{name: "no GOAWAY", stream: concat(settings, ack, data)},
		{name: "a graceful one after data",
			stream: concat(settings, data, goAwayFrame(37, 0, "graceful shutdown")),
			want:   []goAway{{LastStreamID: 37, Code: 0, Debug: "graceful shutdown"}}},
		{name: "two, the reserved bit cleared",
			stream: concat(settings, goAwayFrame(1<<31-1, 0, ""), data, goAwayFrame(1<<31|9, 2, "")),
			want:   []goAway{{LastStreamID: 1<<31 - 1}, {LastStreamID: 9, Code: 2}}},
		{name: "debug data kept to its bound", stream: concat(goAwayFrame(5, 11, string(long))),
			want: []goAway{{LastStreamID: 5, Code: 11, Debug: string(long[:h2DebugMax])}}},
		{name: "a GOAWAY too short to read is skipped", stream: concat(frame(h2FrameGoAway, 0, []byte{0, 0, 1}), goAwayFrame(3, 0, "")),
			want: []goAway{{LastStreamID: 3}}},
	} {
		// Every cut of the stream into reads gives the same frames: the
		// kernel and TLS decide where a read ends, not the frames.
		for _, step := range []int{1, 2, 7, 9, 10, 4096, len(tc.stream)} {
			var got []goAway
			s := frameScanner{onGoAway: func(g goAway) { got = append(got, g) }}
			for i := 0; i < len(tc.stream); i += step {
				s.feed(tc.stream[i:min(i+step, len(tc.stream))])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s, reads of %d bytes: got %+v, want %+v", tc.name, step, got, tc.want)
			}
		}
	}
}

func TestH2ErrorName(t *testing.T) {
	for code, want := range map[uint32]string{0: "NO_ERROR", 7: "REFUSED_STREAM", 0xd: "HTTP_1_1_REQUIRED", 0xe: "0xe"} {
		if got := h2ErrorName(code); got != want {
			t.Errorf("h2ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

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
			c.goAway.Store(&goAway{LastStreamID: 2397})
			return c
		}, zdv1.ClassGoAwayRefused, "last stream 2397, NO_ERROR"},
		{"after a reset", func() *trackedConn {
			c := &trackedConn{}
			err := error(syscall.ECONNRESET)
			c.err.Store(&err)
			return c
		}, zdv1.ClassReset, "connection reset"},
	} {
		a := attempt{conns: 1, prev: tc.prev()}
		a.gotConn(httptrace.GotConnInfo{Conn: &trackedConn{}})
		if got := Classify(a.retryErr); got != tc.class || !strings.Contains(a.retryErr.Error(), tc.text) {
			t.Errorf("%s: retry error %q (%s), want class %s saying %q", tc.name, a.retryErr, got, tc.class, tc.text)
		}
	}
}
