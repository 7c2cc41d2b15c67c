package echo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// testIdentity is what every test server calls itself.
var testIdentity = Identity{Pod: "echo-0", Node: "node-a", Namespace: "zd", PodIP: "10.244.1.7"}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Identity = testIdentity
	return cfg
}

// logBuffer collects JSON log lines from concurrent goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// entries is every log line decoded.
func (l *logBuffer) entries(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// messages is the msg of every log line, in order.
func (l *logBuffer) messages(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, e := range l.entries(t) {
		out = append(out, fmt.Sprint(e["msg"]))
	}
	return out
}

// find returns the first log line with this message.
func (l *logBuffer) find(t *testing.T, msg string) map[string]any {
	t.Helper()
	for _, e := range l.entries(t) {
		if e["msg"] == msg {
			return e
		}
	}
	t.Fatalf("no log line %q in:\n%s", msg, strings.Join(l.messages(t), "\n"))
	return nil
}

// freeAddr is a loopback address no listener holds (for a moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// running is one echo server driven by Run on real loopback listeners.
type running struct {
	traffic, admin string
	signals        chan os.Signal
	cancel         context.CancelFunc
	done           chan error
	logs           *logBuffer
}

// start runs an echo server until the test ends.
func start(t *testing.T, cfg Config) *running {
	t.Helper()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("traffic listener: %v", err)
	}
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("admin listener: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{
		traffic: tl.Addr().String(),
		admin:   al.Addr().String(),
		signals: make(chan os.Signal, 2),
		cancel:  cancel,
		done:    make(chan error, 1),
		logs:    &logBuffer{},
	}
	log := slog.New(slog.NewJSONHandler(r.logs, nil))
	go func() { r.done <- Run(ctx, cfg, r.signals, WithLogger(log), WithListeners(tl, al)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Errorf("echo server did not stop within 10s of its context being cancelled")
		}
	})
	return r
}

// wait is Run's result, failing the test after timeout.
func (r *running) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // keep it for Cleanup
		return err
	case <-time.After(timeout):
		t.Fatalf("Run did not return within %s", timeout)
		return nil
	}
}

// rawConn is one client TCP connection speaking HTTP/1.x by hand, so a
// test sees exactly what the server put on the wire and when it closed.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	br   *bufio.Reader
	wire bytes.Buffer // every byte read since the last request was sent
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{t: t, c: c}
	rc.br = bufio.NewReader(io.TeeReader(c, &rc.wire))
	return rc
}

// wireHeader is the values of the named header exactly as the last answer
// carried them on the wire (http.ReadResponse hides Connection: close).
func (rc *rawConn) wireHeader(name string) []string {
	head, _, _ := strings.Cut(rc.wire.String(), "\r\n\r\n")
	var out []string
	for _, line := range strings.Split(head, "\r\n")[1:] {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(k, name) {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// do sends one request and reads the answer with its body.
func (rc *rawConn) do(method, target, proto string, headers ...string) (*http.Response, []byte) {
	rc.t.Helper()
	resp, body, err := rc.try(method, target, proto, headers...)
	if err != nil {
		rc.t.Fatalf("%s %s on %s: %v", method, target, rc.c.LocalAddr(), err)
	}
	return resp, body
}

func (rc *rawConn) try(method, target, proto string, headers ...string) (*http.Response, []byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\nHost: echo.test\r\n", method, target, proto)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if err := rc.c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, nil, err
	}
	rc.wire.Reset()
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		return nil, nil, fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the body: %w", err)
	}
	return resp, body, nil
}

// closedByServer reports whether the server closed the connection (EOF or
// reset) within d; false means it is still open and silent.
func (rc *rawConn) closedByServer(d time.Duration) bool {
	rc.t.Helper()
	if err := rc.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		rc.t.Fatalf("set read deadline: %v", err)
	}
	var one [1]byte
	n, err := rc.br.Read(one[:])
	if n > 0 {
		rc.t.Fatalf("server sent unexpected bytes on an idle connection: %q", one[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// get is a one-shot GET with a fresh client; used where the connection
// does not matter.
func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	return request(t, http.MethodGet, url)
}

func request(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp, body
}

func decodeReply(t *testing.T, body []byte) Reply {
	t.Helper()
	var r Reply
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("echo body does not decode into Reply: %v\n%s", err, body)
	}
	return r
}

func (r *running) stats(t *testing.T) Stats {
	t.Helper()
	resp, body := get(t, "http://"+r.admin+"/admin/stats")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/stats: %s: %s", resp.Status, body)
	}
	var s Stats
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("decoding stats %s: %v", body, err)
	}
	return s
}

// eventually polls cond every 5ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}
