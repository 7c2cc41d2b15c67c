package echo

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// The traffic port speaks h2c with prior knowledge beside HTTP/1.1: the
// answer says which protocol the server read, and carries no HTTP/1.1
// connection header (RFC 9113, section 8.2.2).
func TestH2CServed(t *testing.T) {
	r := start(t, testConfig())
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: p}}
	defer c.CloseIdleConnections()
	var conn string
	for i := range 3 {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+r.traffic+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("Connection") != "" {
			t.Errorf("answer %d: %s with Keep-Alive %q, Connection %q; want HTTP/2 without either", i, resp.Proto,
				resp.Header.Get("Keep-Alive"), resp.Header.Get("Connection"))
		}
		rep := decodeReply(t, body)
		if rep.Proto != "HTTP/2.0" || rep.ConnRequest != uint64(i+1) || (conn != "" && rep.ConnID != conn) {
			t.Errorf("answer %d: proto %q, conn %s request %d; want HTTP/2.0, request %d on one connection", i, rep.Proto, rep.ConnID, rep.ConnRequest, i+1)
		}
		conn = rep.ConnID
	}
	// HTTP/1.1 is still served on the same port, and says so.
	_, body := get(t, "http://"+r.traffic+"/x")
	if rep := decodeReply(t, body); rep.Proto != "HTTP/1.1" {
		t.Errorf("HTTP/1.1 answer says proto %q", rep.Proto)
	}
}
