package echo

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"zerodrop.dev/zerodrop/internal/h2frame"
)

// h2Client speaks HTTP/2 frame by frame, so a test decides exactly when
// each stream leaves and when a PING is answered.
type h2Client struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

func dialH2(t *testing.T, addr string) *h2Client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hc := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c)}
	hc.enc = hpack.NewEncoder(&hc.hb)
	if _, err := c.Write([]byte(h2frame.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := hc.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return hc
}

// get opens stream id with a GET of /x.
func (hc *h2Client) get(id uint32, addr string) {
	hc.t.Helper()
	hc.hb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", addr}, {":path", "/x"}} {
		if err := hc.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			hc.t.Fatal(err)
		}
	}
	if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hc.hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		hc.t.Fatalf("stream %d: %v", id, err)
	}
}

// read reads frames until want says yes, answering the server's SETTINGS
// on the way; it returns the read error (a timeout, the connection's end)
// if that comes first.
func (hc *h2Client) read(timeout time.Duration, want func(http2.Frame) bool) (http2.Frame, error) {
	hc.t.Helper()
	if err := hc.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		hc.t.Fatal(err)
	}
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if err := hc.fr.WriteSettingsAck(); err != nil {
				hc.t.Fatal(err)
			}
		}
		if want(f) {
			return f, nil
		}
	}
}

// next is read's frame; it fails the test when none came.
func (hc *h2Client) next(timeout time.Duration, what string, want func(http2.Frame) bool) http2.Frame {
	hc.t.Helper()
	f, err := hc.read(timeout, want)
	if err != nil {
		hc.t.Fatalf("waiting for %s: %v", what, err)
	}
	return f
}

// answered says whether stream id's response headers came within timeout,
// before the server's connection ended.
func (hc *h2Client) answered(id uint32, timeout time.Duration) bool {
	hc.t.Helper()
	_, err := hc.read(timeout, func(f http2.Frame) bool {
		h, ok := f.(*http2.HeadersFrame)
		return ok && h.StreamID == id
	})
	return err == nil
}

func goAwayFrom(f http2.Frame) (*http2.GoAwayFrame, bool) {
	g, ok := f.(*http2.GoAwayFrame)
	return g, ok
}

// TestH2ShutdownNotice: a stream a client sends while the drain's first
// GOAWAY is on its way is still served with the notice (RFC 9113, section
// 6.8), and refused without it, as Go's server alone does.
func TestH2ShutdownNotice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		notice time.Duration
		served bool
	}{
		{"notice, then the real GOAWAY", 5 * time.Second, true},
		{"Go's single GOAWAY", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.DrainTimeout = 5 * time.Second
			zero := time.Duration(0)
			cfg.CloseGrace = &zero
			cfg.H2Notice = tc.notice
			r := start(t, cfg)
			hc := dialH2(t, r.traffic)
			hc.get(1, r.traffic)
			if !hc.answered(1, 5*time.Second) {
				t.Fatal("stream 1 was not answered before the drain")
			}

			r.signals <- syscall.SIGTERM
			first := hc.next(5*time.Second, "the drain's first GOAWAY", func(f http2.Frame) bool { _, ok := goAwayFrom(f); return ok })
			g, _ := goAwayFrom(first)
			if tc.notice > 0 && (g.LastStreamID != h2frame.MaxStreamID || g.ErrCode != http2.ErrCodeNo) {
				t.Fatalf("first GOAWAY: last stream %d, %s; want the notice, %d NO_ERROR", g.LastStreamID, g.ErrCode, h2frame.MaxStreamID)
			}
			if tc.notice == 0 && g.LastStreamID != 1 {
				t.Fatalf("first GOAWAY without a notice: last stream %d, want 1", g.LastStreamID)
			}
			// A stream the client sent before it read that GOAWAY.
			hc.get(3, r.traffic)
			if tc.notice > 0 {
				hc.next(5*time.Second, "the notice's PING", func(f http2.Frame) bool {
					p, ok := f.(*http2.PingFrame)
					return ok && !p.IsAck() && p.Data == noticePing()
				})
				if err := hc.fr.WritePing(true, noticePing()); err != nil {
					t.Fatal(err)
				}
			}
			if got := hc.answered(3, 3*time.Second); got != tc.served {
				t.Fatalf("stream 3 sent in the GOAWAY's flight: answered %t, want %t", got, tc.served)
			}
			if tc.notice > 0 {
				final := hc.next(5*time.Second, "the real GOAWAY", func(f http2.Frame) bool { _, ok := goAwayFrom(f); return ok })
				if g, _ := goAwayFrom(final); g.LastStreamID != 3 {
					t.Errorf("real GOAWAY: last stream %d, want 3", g.LastStreamID)
				}
				r.logs.find(t, "HTTP/2 shutdown notice sent")
			}
			if err := r.wait(t, 15*time.Second); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

// TestH2NoticeWaitIsBounded: a client that never answers the PING holds
// the drain no longer than H2Notice.
func TestH2NoticeWaitIsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.DrainTimeout = 5 * time.Second
	zero := time.Duration(0)
	cfg.CloseGrace = &zero
	cfg.H2Notice = 300 * time.Millisecond
	r := start(t, cfg)
	hc := dialH2(t, r.traffic)
	hc.get(1, r.traffic)
	if !hc.answered(1, 5*time.Second) {
		t.Fatal("stream 1 was not answered before the drain")
	}
	began := time.Now()
	r.signals <- syscall.SIGTERM
	hc.next(5*time.Second, "the final GOAWAY", func(f http2.Frame) bool {
		g, ok := goAwayFrom(f)
		return ok && g.LastStreamID != h2frame.MaxStreamID
	})
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the real GOAWAY came %s after SIGTERM; the notice's wait is bounded by 300ms", took)
	}
	e := r.logs.find(t, "HTTP/2 shutdown notice sent")
	if e["answered"] != float64(0) || e["connections"] != float64(1) {
		t.Errorf("notice log: %v; want 1 connection, 0 answered", e)
	}
}

// HTTP/1.1 connections pass untouched and get no notice.
func TestNoticeConnHTTP1(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	nc := newNoticeConn(a)
	go func() { _, _ = b.Write([]byte("GET / HTTP/1.1\r\n\r\n")) }()
	buf := make([]byte, 64)
	if _, err := nc.Read(buf); err != nil {
		t.Fatal(err)
	}
	if nc.proto.Load() != protoHTTP1 {
		t.Fatalf("proto %d after an HTTP/1.1 request, want HTTP/1.1", nc.proto.Load())
	}
	if ch := nc.notice(true); ch != nil {
		t.Fatal("an HTTP/1.1 connection got a notice")
	}
}

// wireConn is a connection whose client sent the HTTP/2 preface and
// which keeps what the server writes.
type wireConn struct {
	net.Conn // nil: only Read and Write are used
	in       *bytes.Reader
	out      bytes.Buffer
}

func (w *wireConn) Read(b []byte) (int, error)  { return w.in.Read(b) }
func (w *wireConn) Write(b []byte) (int, error) { return w.out.Write(b) }

// h2Frame is one frame's bytes (RFC 9113, section 4.1).
func h2Frame(typ, flags byte, stream uint32, n int) []byte {
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, 0, 0, 0, byte(stream)}
	return append(b, make([]byte, n)...)
}

// TestNoticeBetweenFrames: wherever the server's writes are cut and
// whenever the notice is asked for, it goes whole between two of the
// server's frames: after its SETTINGS, outside a header block, never after
// its own GOAWAY; and the server's bytes pass unchanged around it.
func TestNoticeBetweenFrames(t *testing.T) {
	settings := h2Frame(0x4, 0, 0, 18)
	block := append(h2Frame(h2frame.TypeHeaders, 0, 1, 40), h2Frame(h2frame.TypeContinuation, h2frame.FlagEndHeaders, 1, 7)...)
	data := h2Frame(0x0, 0x1, 1, 300)
	headers := h2Frame(h2frame.TypeHeaders, h2frame.FlagEndHeaders, 3, 20)
	goAway := h2frame.AppendGoAway(nil, 3, h2frame.CodeNoError, "")
	notice := h2frame.AppendPing(h2frame.AppendGoAway(nil, h2frame.MaxStreamID, h2frame.CodeNoError, noticeDebug), noticePing())
	var stream []byte
	for _, f := range [][]byte{settings, block, data, headers, data, goAway} {
		stream = append(stream, f...)
	}
	goAwayAt := len(stream) - len(goAway)
	for _, cut := range []int{1, 2, 5, 9, 10, 64, len(stream)} {
		for at := 0; at <= len(stream); at += max(1, cut/2) {
			w := &wireConn{in: bytes.NewReader([]byte(h2frame.ClientPreface))}
			nc := newNoticeConn(w)
			if _, err := io.ReadFull(nc, make([]byte, len(h2frame.ClientPreface))); err != nil {
				t.Fatal(err)
			}
			askedAt := -1
			for i := 0; i < len(stream); i += cut {
				if askedAt < 0 && i >= at {
					nc.notice(true)
					askedAt = i
				}
				chunk := stream[i:min(i+cut, len(stream))]
				if n, err := nc.Write(chunk); n != len(chunk) || err != nil {
					t.Fatalf("Write of %d bytes: %d, %v", len(chunk), n, err)
				}
			}
			got := w.out.Bytes()
			where := bytes.Index(got, notice)
			// It goes at the first boundary from where it was asked; the
			// server's GOAWAY stands at one, so it goes if asked by then.
			wantNotice := askedAt >= 0 && askedAt <= goAwayAt
			ctx := fmt.Sprintf("writes of %d, notice asked at byte %d", cut, askedAt)
			switch {
			case wantNotice && where < 0:
				t.Errorf("%s: no notice on the wire", ctx)
				continue
			case !wantNotice && where >= 0:
				t.Errorf("%s: a notice after the server's own GOAWAY", ctx)
				continue
			case !wantNotice:
				if !bytes.Equal(got, stream) {
					t.Errorf("%s: the server's bytes changed", ctx)
				}
				continue
			}
			if rest := append(append([]byte(nil), got[:where]...), got[where+len(notice):]...); !bytes.Equal(rest, stream) {
				t.Errorf("%s: the server's bytes around the notice changed", ctx)
			}
			// The notice stands at a boundary a scanner of the server's
			// own bytes agrees with, after the first frame.
			var s h2frame.Scanner
			s.Feed(stream[:where])
			if where < len(settings) || !s.Boundary() {
				t.Errorf("%s: the notice went at byte %d, not between two frames after SETTINGS", ctx, where)
			}
			if where > len(settings) && where < len(settings)+len(block) {
				t.Errorf("%s: the notice went inside the header block, between HEADERS and CONTINUATION", ctx)
			}
			if where > goAwayAt {
				t.Errorf("%s: the notice went after the server's GOAWAY", ctx)
			}
		}
	}
}
