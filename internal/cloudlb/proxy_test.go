package cloudlb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// backend counts the TCP connections it accepted and answers with its name,
// the connection it was asked on, and the X-Forwarded-For it got.
type backend struct {
	name  string
	srv   *httptest.Server
	mu    sync.Mutex
	conns int
}

func newBackend(t *testing.T, name string, keepAlive bool) *backend {
	b := &backend{name: name}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s xff=%s", b.name, r.RemoteAddr, r.Header.Get("X-Forwarded-For"))
	}))
	b.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.mu.Lock()
			b.conns++
			b.mu.Unlock()
		}
	}
	b.srv.Config.SetKeepAlivesEnabled(keepAlive)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) addrPort() netip.AddrPort {
	return netip.MustParseAddrPort(b.srv.Listener.Addr().String())
}

func TestL7ProxyReusesBackendConnections(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		t.Run(fmt.Sprintf("backend keep-alive %v", keepAlive), func(t *testing.T) {
			be := newBackend(t, "pod-a", keepAlive)
			p := NewL7Proxy(nil, nil)
			defer p.Close()
			svc := L7Service{Key: "ns/web", VIP: netip.MustParseAddr("127.0.0.1"), Port: freePort(t),
				Backends: []netip.AddrPort{be.addrPort()}, L7: profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
			if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
				t.Fatal(err)
			}
			front := p.Serving()[0]
			for i := 0; i < 10; i++ {
				resp, err := http.Get("http://" + front + "/")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.HasPrefix(string(body), "pod-a") || !strings.Contains(string(body), "xff=127.0.0.1") {
					t.Fatalf("body %q: want pod-a with X-Forwarded-For of the client", body)
				}
			}
			be.mu.Lock()
			conns := be.conns
			be.mu.Unlock()
			if keepAlive && conns != 1 {
				t.Fatalf("10 requests used %d backend connections; with keep-alive the proxy must reuse one", conns)
			}
			if !keepAlive && conns != 10 {
				t.Fatalf("10 requests used %d backend connections; without keep-alive each needs its own", conns)
			}
		})
	}
}

func TestL7ProxyBackendChanges(t *testing.T) {
	a, b := newBackend(t, "a", true), newBackend(t, "b", true)
	p := NewL7Proxy(nil, nil)
	defer p.Close()
	ip := netip.MustParseAddr("127.0.0.1")
	svc := L7Service{Key: "ns/web", VIP: ip, Port: freePort(t), Backends: []netip.AddrPort{a.addrPort()},
		L7: profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
	if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
		t.Fatal(err)
	}
	front := p.Serving()[0]
	get := func() string {
		resp, err := http.Get("http://" + front + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Fields(string(body))[0]
	}
	if got := get(); got != "a" {
		t.Fatalf("got %s, want a", got)
	}
	svc.Backends = []netip.AddrPort{b.addrPort()}
	if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != "b" {
		t.Fatalf("after the change got %s, want b", got)
	}
	svc.Backends = nil
	if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + front + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("no backends: status %d, want 503", resp.StatusCode)
	}
	if err := p.Apply(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(p.Serving()) != 0 {
		t.Fatal("listener left after removal")
	}
}

func freePort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// A backend that closes a kept-alive connection after reading the request
// on it, without answering: Go's transport would send that GET again on a
// new connection and the client would see a 200. The proxy sends it once,
// and the client gets the 502 (sendOnce). The requests it does send go out
// as a client's GET would: no body, no Transfer-Encoding.
func TestL7ProxySendsARequestOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns int
	var heads []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns++
			mu.Unlock()
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					heads = append(heads, fmt.Sprintf("%s te=%v cl=%d", req.Method, req.TransferEncoding, req.ContentLength))
					mu.Unlock()
					if n == 2 {
						return // the pod went away with the request unanswered
					}
					fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}(c)
		}
	}()
	be := netip.MustParseAddrPort(ln.Addr().String())
	p := NewL7Proxy(nil, nil)
	defer p.Close()
	svc := L7Service{Key: "ns/web", VIP: netip.MustParseAddr("127.0.0.1"), Port: freePort(t),
		Backends: []netip.AddrPort{be}, L7: profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
	if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
		t.Fatal(err)
	}
	front := "http://" + p.Serving()[0] + "/"
	var got []int
	for range 2 {
		resp, err := http.Get(front)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0] != http.StatusOK || got[1] != http.StatusBadGateway {
		t.Errorf("statuses %v, want [200 502]: the second GET died with its backend connection and must not be sent again", got)
	}
	if conns != 1 || len(heads) != 2 {
		t.Errorf("backend saw %d connections and requests %v; want the two requests on one connection", conns, heads)
	}
	for _, h := range heads {
		if h != "GET te=[] cl=0" {
			t.Errorf("backend got %q, want a GET with no body and no Transfer-Encoding", h)
		}
	}
}

// TestL7ProxyDrainsRemovedBackends: a backend that leaves keeps its
// requests in flight while it drains and loses them when the drain ends
// (502, not sent again); one closed outright keeps them (the cut of a
// draining timeout of 0 is not modelled).
func TestL7ProxyDrainsRemovedBackends(t *testing.T) {
	started := make(chan struct{}, 4)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		d, _ := time.ParseDuration(r.URL.Query().Get("delay"))
		select {
		case <-time.After(d):
			fmt.Fprint(w, "done")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	be := netip.MustParseAddrPort(slow.Listener.Addr().String())
	for _, c := range []struct {
		name     string
		delay    time.Duration
		draining map[netip.AddrPort]time.Duration // drain left after the backend leaves
		want     int
	}{
		{"drain longer than the request", 400 * time.Millisecond, map[netip.AddrPort]time.Duration{be: 3 * time.Second}, http.StatusOK},
		{"drain ends first", 3 * time.Second, map[netip.AddrPort]time.Duration{be: 300 * time.Millisecond}, http.StatusBadGateway},
		{"drain with no end", 400 * time.Millisecond, map[netip.AddrPort]time.Duration{be: 0}, http.StatusOK},
		{"closed", 400 * time.Millisecond, nil, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewL7Proxy(nil, nil)
			defer p.Close()
			svc := L7Service{Key: "ns/web", VIP: netip.MustParseAddr("127.0.0.1"), Port: freePort(t), Backends: []netip.AddrPort{be},
				L7: profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
			if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
				t.Fatal(err)
			}
			got := make(chan int, 1)
			start := time.Now()
			go func() {
				resp, err := http.Get(fmt.Sprintf("http://%s/?delay=%s", p.Serving()[0], c.delay))
				if err != nil {
					got <- 0
					return
				}
				resp.Body.Close()
				got <- resp.StatusCode
			}()
			<-started
			svc.Backends = nil
			svc.Draining = map[netip.AddrPort]time.Time{}
			for ap, left := range c.draining {
				until := time.Time{}
				if left > 0 {
					until = time.Now().Add(left)
				}
				svc.Draining[ap] = until
			}
			if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
				t.Fatal(err)
			}
			if code := <-got; code != c.want {
				t.Fatalf("request in flight got %d after %v; want %d", code, time.Since(start).Round(time.Millisecond), c.want)
			}
			if c.want == http.StatusBadGateway && time.Since(start) > 2*time.Second {
				t.Fatalf("the cut came %v after the start; want it at the drain's end", time.Since(start))
			}
		})
	}
}

// An HTTP/2 client (h2c) is served as the vendors' front ends serve one,
// and its streams reach the backend as HTTP/1.1 requests.
func TestL7ProxyServesH2CToHTTP1Backends(t *testing.T) {
	var protos []string
	var mu sync.Mutex
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		fmt.Fprint(w, "pod-a")
	}))
	t.Cleanup(be.Close)
	p := NewL7Proxy(nil, nil)
	defer p.Close()
	svc := L7Service{Key: "ns/web", VIP: netip.MustParseAddr("127.0.0.1"), Port: freePort(t),
		Backends: []netip.AddrPort{netip.MustParseAddrPort(be.Listener.Addr().String())},
		L7:       profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
	if err := p.Apply(context.Background(), []L7Service{svc}); err != nil {
		t.Fatal(err)
	}
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: h2c}}
	defer c.CloseIdleConnections()
	for range 3 {
		resp, err := c.Get("http://" + p.Serving()[0] + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || string(body) != "pod-a" {
			t.Fatalf("%s %q: want HTTP/2 and the backend's answer", resp.Proto, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range protos {
		if p != "HTTP/1.1" {
			t.Errorf("the backend got %s; want HTTP/1.1, the vendors' default to backends", p)
		}
	}
}
