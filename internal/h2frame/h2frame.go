// Package h2frame follows HTTP/2 frames (RFC 9113, section 4.1) in a byte
// stream as it passes, however reads or writes cut it, and encodes the two
// control frames zerodrop sends itself. The load reads the GOAWAYs a
// server sends with it; the echo server finds, in what its HTTP/2 server
// writes, the boundaries where a frame of its own may go, and, in what it
// reads, a client's acknowledgement of its PING.
package h2frame

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Frame types, flags and limits of RFC 9113 (sections 4.1, 6 and 6.8).
const (
	HeaderLen = 9

	TypeHeaders      = 0x1
	TypePushPromise  = 0x5
	TypePing         = 0x6
	TypeGoAway       = 0x7
	TypeContinuation = 0x9

	// FlagAck marks a PING's answer.
	FlagAck = 0x1
	// FlagEndHeaders ends a header block (HEADERS, PUSH_PROMISE,
	// CONTINUATION).
	FlagEndHeaders = 0x4

	// MaxStreamID is the highest stream identifier, 2^31-1. A GOAWAY
	// naming it refuses no stream: RFC 9113 section 6.8 has a server
	// that shuts a connection down gracefully send it first, as notice.
	MaxStreamID = 1<<31 - 1

	// CodeNoError is a graceful GOAWAY's error code.
	CodeNoError = 0x0

	// ClientPreface is what an HTTP/2 client sends first (section 3.4).
	ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

	// goAwayFixed is a GOAWAY's last stream id and error code.
	goAwayFixed = 8
	// pingLen is a PING's payload, its opaque data.
	pingLen = 8
)

// Frame is one frame's header and its first payload bytes.
type Frame struct {
	Type     byte
	Flags    byte
	StreamID uint32
	Length   uint32
	// Payload is the payload's first bytes, as many as Scanner.Keep
	// asked for the frame's type.
	Payload []byte
}

// Scanner follows the frames of one direction of a connection, fed its
// bytes in order, and hands each complete frame to OnFrame. It keeps one
// frame header and at most Keep bytes of a payload, so its memory does not
// grow with the connection.
type Scanner struct {
	// Keep is how many payload bytes of a frame of type typ OnFrame
	// gets; nil keeps none.
	Keep func(typ byte) int
	// OnFrame, if set, is called at the end of every frame. Its Payload
	// is only valid during the call.
	OnFrame func(Frame)

	hdr       [HeaderLen]byte
	hn        int
	inPayload bool
	remain    uint32
	keep      int
	payload   []byte
	// inBlock: a header block is open, its CONTINUATIONs still to come;
	// no other frame may come between them (section 6.10).
	inBlock bool
}

// Boundary says whether the bytes fed so far end a frame and no header
// block is open: where another frame may go.
func (s *Scanner) Boundary() bool { return s.hn == 0 && !s.inPayload && !s.inBlock }

// Feed reads b, the next bytes of the stream.
func (s *Scanner) Feed(b []byte) {
	for len(b) > 0 {
		b = b[s.step(b):]
	}
}

// FeedFrame reads b up to the end of the frame under way (or the next
// frame, at a boundary) and says how many bytes of b it read: all of b if
// that frame does not end in it.
func (s *Scanner) FeedFrame(b []byte) int {
	n := 0
	for n < len(b) {
		n += s.step(b[n:])
		if s.hn == 0 && !s.inPayload {
			break
		}
	}
	return n
}

// step reads the header's missing bytes, or the payload's, from b and says
// how many it read.
func (s *Scanner) step(b []byte) int {
	if !s.inPayload {
		k := copy(s.hdr[s.hn:], b)
		s.hn += k
		if s.hn < HeaderLen {
			return k
		}
		s.remain = uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2])
		s.keep = 0
		if s.Keep != nil {
			s.keep = s.Keep(s.hdr[3])
		}
		s.payload = s.payload[:0]
		s.inPayload = true
		if s.remain == 0 {
			s.frameDone()
		}
		return k
	}
	k := min(uint32(len(b)), s.remain)
	if room := s.keep - len(s.payload); room > 0 {
		s.payload = append(s.payload, b[:min(int(k), room)]...)
	}
	s.remain -= k
	if s.remain == 0 {
		s.frameDone()
	}
	return int(k)
}

func (s *Scanner) frameDone() {
	typ, flags := s.hdr[3], s.hdr[4]
	switch typ {
	case TypeHeaders, TypePushPromise, TypeContinuation:
		s.inBlock = flags&FlagEndHeaders == 0
	}
	if s.OnFrame != nil {
		s.OnFrame(Frame{
			Type: typ, Flags: flags,
			// The stream id's top bit is reserved (section 4.1).
			StreamID: binary.BigEndian.Uint32(s.hdr[5:9]) & MaxStreamID,
			Length:   uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2]),
			Payload:  s.payload,
		})
	}
	s.hn, s.inPayload, s.remain = 0, false, 0
}

// GoAway is a GOAWAY frame's content (section 6.8).
type GoAway struct {
	LastStreamID uint32
	Code         uint32
	// Debug is the debug data's first bytes (at most 120), as sent: the
	// caller makes it text.
	Debug string
}

// GoAwayKeep is how many payload bytes ParseGoAway reads: the fixed part
// and debugMax bytes of debug data.
const GoAwayKeep = goAwayFixed + debugMax

// debugMax bounds the debug data kept from a GOAWAY.
const debugMax = 120

// ParseGoAway reads a GOAWAY from f, kept with at least its first 8
// payload bytes; it says false for any other frame, or one too short.
func ParseGoAway(f Frame) (GoAway, bool) {
	if f.Type != TypeGoAway || len(f.Payload) < goAwayFixed {
		return GoAway{}, false
	}
	return GoAway{
		LastStreamID: binary.BigEndian.Uint32(f.Payload[0:4]) & MaxStreamID,
		Code:         binary.BigEndian.Uint32(f.Payload[4:8]),
		Debug:        string(f.Payload[goAwayFixed:min(len(f.Payload), GoAwayKeep)]),
	}, true
}

// PingAck says whether f answers a PING whose opaque data was data.
func PingAck(f Frame, data [8]byte) bool {
	return f.Type == TypePing && f.Flags&FlagAck != 0 && bytes.Equal(f.Payload, data[:])
}

// PingKeep is how many payload bytes PingAck reads.
const PingKeep = pingLen

// AppendGoAway appends a GOAWAY frame to dst.
func AppendGoAway(dst []byte, last, code uint32, debug string) []byte {
	dst = appendHeader(dst, goAwayFixed+len(debug), TypeGoAway, 0)
	dst = binary.BigEndian.AppendUint32(dst, last&MaxStreamID)
	dst = binary.BigEndian.AppendUint32(dst, code)
	return append(dst, debug...)
}

// AppendPing appends a PING frame (not an answer) to dst.
func AppendPing(dst []byte, data [8]byte) []byte {
	return append(appendHeader(dst, pingLen, TypePing, 0), data[:]...)
}

// appendHeader appends a frame header on stream 0, the connection's.
func appendHeader(dst []byte, length int, typ, flags byte) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags, 0, 0, 0, 0)
}

// errorCodes are RFC 9113's names for error codes (section 7).
var errorCodes = [...]string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
	"STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR",
	"ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

// ErrorName is code's name, or its number where RFC 9113 names none.
func ErrorName(code uint32) string {
	if int(code) < len(errorCodes) {
		return errorCodes[code]
	}
	return fmt.Sprintf("0x%x", code)
}
