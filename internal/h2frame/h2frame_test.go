package h2frame

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// frame is one frame's bytes (RFC 9113, section 4.1).
func frame(typ, flags byte, stream uint32, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// cuts are the ways the tests cut a stream into reads: the kernel and TLS
// decide where a read ends, not the frames.
func cuts(n int) []int { return []int{1, 2, 7, 9, 10, 4096, n} }

func TestScannerGoAways(t *testing.T) {
	settings := frame(0x4, 0, 0, make([]byte, 18))
	ack := frame(0x4, FlagAck, 0, nil)
	data := frame(0x0, 0, 3, make([]byte, 40000))
	long := strings.Repeat("x", 500)
	for _, tc := range []struct {
		name   string
		stream []byte
		want   []GoAway
	}{
		{name: "no GOAWAY", stream: concat(settings, ack, data)},
		{name: "a graceful one after data",
			stream: concat(settings, data, AppendGoAway(nil, 37, 0, "graceful shutdown")),
			want:   []GoAway{{LastStreamID: 37, Code: 0, Debug: "graceful shutdown"}}},
		{name: "two, the reserved bit cleared",
			stream: concat(settings, AppendGoAway(nil, MaxStreamID, 0, ""), data, frame(TypeGoAway, 0, 0, []byte{0x80, 0, 0, 9, 0, 0, 0, 2})),
			want:   []GoAway{{LastStreamID: MaxStreamID}, {LastStreamID: 9, Code: 2}}},
		{name: "debug data kept to its bound", stream: AppendGoAway(nil, 5, 11, long),
			want: []GoAway{{LastStreamID: 5, Code: 11, Debug: long[:debugMax]}}},
		{name: "a GOAWAY too short to read is skipped", stream: concat(frame(TypeGoAway, 0, 0, []byte{0, 0, 1}), AppendGoAway(nil, 3, 0, "")),
			want: []GoAway{{LastStreamID: 3}}},
	} {
		for _, step := range cuts(len(tc.stream)) {
			var got []GoAway
			s := Scanner{
				Keep: func(typ byte) int {
					if typ == TypeGoAway {
						return GoAwayKeep
					}
					return 0
				},
				OnFrame: func(f Frame) {
					if g, ok := ParseGoAway(f); ok {
						got = append(got, g)
					}
				},
			}
			for i := 0; i < len(tc.stream); i += step {
				s.Feed(tc.stream[i:min(i+step, len(tc.stream))])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s, reads of %d bytes: got %+v, want %+v", tc.name, step, got, tc.want)
			}
		}
	}
}

// TestScannerBoundaries: a frame of one's own may go only between frames,
// and never inside a header block (RFC 9113, section 6.10).
func TestScannerBoundaries(t *testing.T) {
	headersOpen := frame(TypeHeaders, 0, 1, make([]byte, 30))
	cont := frame(TypeContinuation, 0, 1, make([]byte, 10))
	contEnd := frame(TypeContinuation, FlagEndHeaders, 1, make([]byte, 5))
	headers := frame(TypeHeaders, FlagEndHeaders, 3, make([]byte, 12))
	data := frame(0x0, 0, 3, make([]byte, 100))
	stream := concat(headersOpen, cont, contEnd, headers, data)
	// Offsets after which the scanner stands at a boundary.
	want := map[int]bool{
		0: true,
		len(headersOpen) + len(cont) + len(contEnd):                            true,
		len(headersOpen) + len(cont) + len(contEnd) + len(headers):             true,
		len(headersOpen) + len(cont) + len(contEnd) + len(headers) + len(data): true,
	}
	for _, step := range cuts(len(stream)) {
		var s Scanner
		got := map[int]bool{0: s.Boundary()}
		for i := 0; i < len(stream); {
			n := s.FeedFrame(stream[i:min(i+step, len(stream))])
			if n == 0 {
				t.Fatalf("reads of %d: FeedFrame read nothing at %d", step, i)
			}
			i += n
			if s.Boundary() {
				got[i] = true
			}
		}
		for off := range want {
			if !got[off] {
				t.Errorf("reads of %d: no boundary seen at %d", step, off)
			}
		}
		for off := range got {
			if !want[off] {
				t.Errorf("reads of %d: a boundary at %d, inside a frame or a header block", step, off)
			}
		}
	}
}

func TestFeedFrameStopsAtTheFrameEnd(t *testing.T) {
	a, b := frame(0x0, 0, 1, make([]byte, 4)), frame(0x0, 0, 1, make([]byte, 6))
	var s Scanner
	if n := s.FeedFrame(concat(a, b)); n != len(a) {
		t.Fatalf("FeedFrame read %d bytes of two frames, want the first frame's %d", n, len(a))
	}
	if !s.Boundary() {
		t.Fatal("not at a boundary after a whole frame")
	}
	if n := s.FeedFrame(b[:3]); n != 3 || s.Boundary() {
		t.Fatalf("FeedFrame of a frame's first 3 bytes read %d, boundary %t; want 3, false", n, s.Boundary())
	}
}

func TestPing(t *testing.T) {
	data := [8]byte{'z', 'd', 'n', 'o', 't', 'i', 'c', 'e'}
	var frames []Frame
	s := Scanner{Keep: func(byte) int { return PingKeep }, OnFrame: func(f Frame) {
		f.Payload = append([]byte(nil), f.Payload...)
		frames = append(frames, f)
	}}
	ping := AppendPing(nil, data)
	ack := frame(TypePing, FlagAck, 0, data[:])
	other := frame(TypePing, FlagAck, 0, []byte("someone."))
	s.Feed(concat(ping, other, ack))
	if len(frames) != 3 {
		t.Fatalf("got %d frames, want 3", len(frames))
	}
	for i, want := range []bool{false, false, true} {
		if got := PingAck(frames[i], data); got != want {
			t.Errorf("frame %d (%+v): PingAck %t, want %t", i, frames[i], got, want)
		}
	}
}

func TestErrorName(t *testing.T) {
	for code, want := range map[uint32]string{0: "NO_ERROR", 7: "REFUSED_STREAM", 0xd: "HTTP_1_1_REQUIRED", 0xe: "0xe"} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}
