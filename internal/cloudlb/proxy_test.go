package cloudlb

import (
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

	"zerodrop/clusters/lb/profiles"
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
			svc := L7Service{Key: "ns/web", VIP: netip.MustParseAddr("127.0.0.1"), Port: freePort(t), NodePort: be.addrPort().Port(),
				Backends: []netip.Addr{be.addrPort().Addr()}, L7: profiles.L7{KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 10}}
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
	if a.addrPort().Port() == b.addrPort().Port() {
		t.Skip("both test backends got the same port")
	}
	p := NewL7Proxy(nil, nil)
	defer p.Close()
	ip := netip.MustParseAddr("127.0.0.1")
	// Both backends live on 127.0.0.1: switching the NodePort switches backend.
	svc := L7Service{Key: "ns/web", VIP: ip, Port: freePort(t), NodePort: a.addrPort().Port(), Backends: []netip.Addr{ip},
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
	svc.NodePort = b.addrPort().Port()
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
