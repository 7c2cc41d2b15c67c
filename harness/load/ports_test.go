package load

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in   string
		size int
		err  string
	}{
		{in: "32768\t60999\n", size: 28232},
		{in: "1024 1279", size: 256},
		{in: "1024 1278", err: "at least 256"},
		{in: "60999 32768", err: "at least 256"},
		{in: "0 1000", err: "LOW"},
		{in: "1024 70000", err: "65535"},
		{in: "1024", err: "two ports"},
		{in: "a b", err: "LOW"},
	}
	for _, tt := range tests {
		p, err := ParsePorts(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParsePorts(%q) = %v, want an error with %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParsePorts(%q): %v", tt.in, err)
		case tt.err == "" && p.Size() != tt.size:
			t.Errorf("ParsePorts(%q).Size() = %d, want %d", tt.in, p.Size(), tt.size)
		}
	}
}

// Each destination goes through the range in turn, on its own; wrapping
// starts over at the low end.
func TestPortsCycle(t *testing.T) {
	p, err := ParsePorts("40000 40255")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		want := 40000 + i%256
		if got := p.take("10.0.0.1:80"); got != want {
			t.Fatalf("take %d toward a: port %d, want %d", i, got, want)
		}
		if i%3 == 0 {
			if got := p.take("10.0.0.2:80"); got != 40000+(i/3)%256 {
				t.Fatalf("take %d toward b: port %d, want its own cycle", i, got)
			}
		}
	}
}

// Real connections on loopback: the server sees every connection come from
// the cycle's next port, a port another socket holds without SO_REUSEADDR
// is skipped, and two loads' cycles share ports toward different
// destinations.
func TestPortsDialLoopback(t *testing.T) {
	seen := make(chan int, 1024)
	serve := func() string {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, port, _ := net.SplitHostPort(c.RemoteAddr().String())
				n, _ := strconv.Atoi(port)
				seen <- n
				_ = c.Close() // the server closes first, as with Connection: close
			}
		}()
		return ln.Addr().String()
	}
	a, b := serve(), serve()

	// A socket bound to 61003 without SO_REUSEADDR: the cycle steps over it.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: 61003, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Skipf("cannot hold port 61003 for the test: %v", err)
	}

	p, err := ParsePorts("61000 61255")
	if err != nil {
		t.Fatal(err)
	}
	dial := p.Dialer(net.Dialer{Timeout: 2 * time.Second})
	ctx := context.Background()
	var got []int
	for i := 0; i < 6; i++ {
		for _, addr := range []string{a, b} {
			c, err := dial(ctx, "tcp4", addr)
			if err != nil {
				t.Fatalf("dial %s: %v", addr, err)
			}
			_ = c.Close()
			got = append(got, <-seen)
		}
	}
	// toward a and toward b alike: 61000, 61001, 61002, then 61004 (61003 is held).
	want := []int{61000, 61000, 61001, 61001, 61002, 61002, 61004, 61004, 61005, 61005, 61006, 61006}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("local ports %v, want %v", got, want)
		}
	}
}
