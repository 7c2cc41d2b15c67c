package load

import (
	"encoding/binary"
	"fmt"
)

// An HTTP/2 server ends a connection it wants gone with a GOAWAY frame
// (RFC 9113, section 6.8): the last stream it processed or may still
// process, an error code, and optional debug data. Streams above the last
// one were not processed and a client may send them again on another
// connection, which Go's transport does on its own (net/http
// h2_bundle.go, http2canRetryError). Go's client API does not say that
// it received one, so the load reads its connections' frames as they pass
// (frameScanner on the trackedConn) and records each GOAWAY as an event:
// the evidence, next to a failure window, of whether a server said goodbye
// before its connections went.

// h2 frame types and sizes (RFC 9113, sections 4.1 and 6).
const (
	h2FrameHeaderLen = 9
	h2FrameGoAway    = 0x7
	// h2GoAwayFixed is a GOAWAY's last stream id and error code.
	h2GoAwayFixed = 8
	// h2DebugMax bounds the debug data kept from a GOAWAY.
	h2DebugMax = 120
)

// goAway is one GOAWAY frame a server sent.
type goAway struct {
	LastStreamID uint32
	Code         uint32
	Debug        string
}

// goAwayRefused is why an HTTP/2 request was sent again: its first
// connection's server sent GOAWAY, whose last stream was below the
// request's (Go's transport re-sends only such streams, REFUSED_STREAM
// ones and those it never wrote: net/http h2_bundle.go,
// http2canRetryError), so the server had not processed it.
type goAwayRefused struct{ g goAway }

func (e *goAwayRefused) Error() string {
	return fmt.Sprintf("the server's GOAWAY (last stream %d, %s) came before it read this request's stream, "+
		"so it did not process it (RFC 9113, section 6.8); the client sent it again on another connection",
		e.g.LastStreamID, h2ErrorName(e.g.Code))
}

// h2ErrorCodes are RFC 9113's names for error codes (section 7).
var h2ErrorCodes = []string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
	"STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR",
	"ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

// h2ErrorName is code's name, or its number where RFC 9113 names none.
func h2ErrorName(code uint32) string {
	if int(code) < len(h2ErrorCodes) {
		return h2ErrorCodes[code]
	}
	return fmt.Sprintf("0x%x", code)
}

// frameScanner follows the frames a server writes on one HTTP/2
// connection, fed the bytes as the client reads them, however they are
// cut, and calls onGoAway for each GOAWAY. It keeps a frame's header and at
// most a GOAWAY's first bytes, so its memory does not grow with the
// connection. A server's side of a connection is frames from its first
// byte (its preface is a SETTINGS frame, RFC 9113 section 3.4).
type frameScanner struct {
	hdr       [h2FrameHeaderLen]byte
	hn        int
	inPayload bool
	remain    uint32
	typ       byte
	payload   []byte
	onGoAway  func(goAway)
}

// feed reads b, the next bytes of the server's side of the connection.
func (s *frameScanner) feed(b []byte) {
	for len(b) > 0 {
		if !s.inPayload {
			k := copy(s.hdr[s.hn:], b)
			s.hn += k
			b = b[k:]
			if s.hn < h2FrameHeaderLen {
				return
			}
			s.remain = uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2])
			s.typ = s.hdr[3]
			s.payload = s.payload[:0]
			s.inPayload = true
			if s.remain == 0 {
				s.frameDone()
			}
			continue
		}
		k := uint32(len(b))
		if k > s.remain {
			k = s.remain
		}
		if s.typ == h2FrameGoAway {
			if room := h2GoAwayFixed + h2DebugMax - len(s.payload); room > 0 {
				s.payload = append(s.payload, b[:min(int(k), room)]...)
			}
		}
		s.remain -= k
		b = b[k:]
		if s.remain == 0 {
			s.frameDone()
		}
	}
}

func (s *frameScanner) frameDone() {
	if s.typ == h2FrameGoAway && len(s.payload) >= h2GoAwayFixed && s.onGoAway != nil {
		s.onGoAway(goAway{
			// The stream id's top bit is reserved (RFC 9113, section 6.8).
			LastStreamID: binary.BigEndian.Uint32(s.payload[0:4]) & 0x7fffffff,
			Code:         binary.BigEndian.Uint32(s.payload[4:8]),
			Debug:        firstLine(s.payload[h2GoAwayFixed:], h2DebugMax),
		})
	}
	s.hn, s.inPayload, s.remain = 0, false, 0
}
