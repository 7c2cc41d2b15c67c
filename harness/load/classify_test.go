package load_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

func TestClassifyChains(t *testing.T) {
	opErr := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}}
	}
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{opErr(syscall.ECONNREFUSED), zdv1.ClassRefused},
		{opErr(syscall.ECONNRESET), zdv1.ClassReset},
		{opErr(syscall.EPIPE), zdv1.ClassReset},
		{opErr(syscall.ETIMEDOUT), zdv1.ClassTimeout},
		{opErr(syscall.EHOSTUNREACH), zdv1.ClassOther},
		{&url.Error{Op: "Get", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}}, zdv1.ClassDNS},
		{&url.Error{Op: "Get", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "timeout", Name: "x.invalid", IsTimeout: true}}}, zdv1.ClassDNS},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), zdv1.ClassReset},
		{&url.Error{Op: "Get", Err: io.EOF}, zdv1.ClassReset},
		{fmt.Errorf("x: %w", os.ErrDeadlineExceeded), zdv1.ClassTimeout},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), zdv1.ClassTimeout},
		{errors.New("http: server closed idle connection"), zdv1.ClassReset},
		{errors.New("tls: bad certificate"), zdv1.ClassOther},
	}
	for _, tc := range tests {
		if got := load.Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// misbehave serves raw TCP on loopback with a given misbehaviour per
// connection and returns its address.
func misbehave(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

func readRequest(c net.Conn) {
	_, _ = http.ReadRequest(bufio.NewReader(c))
}

func rst(c net.Conn) {
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
}

// Real failures on loopback, through the whole load path, land in the
// right class.
func TestClassifyOnLoopback(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := closed.Addr().String()
	_ = closed.Close()

	tests := []struct {
		name string
		addr func(t *testing.T) string
		want string
	}{
		{"refused", func(*testing.T) string { return refusedAddr }, zdv1.ClassRefused},
		{"reset after request", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) { readRequest(c); rst(c) })
		}, zdv1.ClassReset},
		{"closed without answer", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) { readRequest(c); _ = c.Close() })
		}, zdv1.ClassReset},
		{"reset mid-body", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) {
				readRequest(c)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"pod\":")
				time.Sleep(20 * time.Millisecond)
				rst(c)
			})
		}, zdv1.ClassReset},
		{"held: timeout", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) { readRequest(c); _, _ = io.Copy(io.Discard, c); _ = c.Close() })
		}, zdv1.ClassTimeout},
		{"headers then stall: timeout", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) {
				readRequest(c)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
			})
		}, zdv1.ClassTimeout},
		{"garbage: other", func(t *testing.T) string {
			return misbehave(t, func(c net.Conn) { readRequest(c); _, _ = io.WriteString(c, "SSH-2.0-nope\r\n\r\n"); _ = c.Close() })
		}, zdv1.ClassOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(40), load.WithDuration(250*time.Millisecond),
				load.WithTimeout(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			sum, err := l.Run(context.Background(), sink)
			if err != nil {
				t.Fatal(err)
			}
			results, _ := sink.snapshot()
			if len(results) < 5 {
				t.Fatalf("only %d results", len(results))
			}
			for _, r := range results {
				if r.Status != 0 || r.Class != tc.want || r.Error == "" {
					t.Errorf("result %s: status %d class %q error %q, want class %q", r.ID, r.Status, r.Class, r.Error, tc.want)
				}
			}
			if sum.Dropped != sum.Results || sum.ErrorClasses[tc.want] != sum.Results {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}
