package load

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

const sampleEcho = `{"pod":"echo-0","node":"node-0","namespace":"test","pod_ip":"10.0.0.1","client_ip":"127.0.0.1","client_port":45678,"x_forwarded_for":"","ready":true,"draining":false,"terminating":false,"keepalive":true,"conn_id":"a1b2c3d4-17","conn_request":42,"seq":123456,"time":"2025-11-21T23:36:39.123456789Z","request_id":"2fcb62ac95a3-214"}`

// reference is the meaning parseEcho must have: a JSON object that
// encoding/json accepts, decoded by encoding/json.
func reference(body []byte) (echoReply, bool) {
	var e echoReply
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return echoReply{}, false
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return echoReply{}, false
	}
	return e, true
}

func checkParse(t *testing.T, body []byte) {
	t.Helper()
	want, wantOK := reference(body)
	var got echoReply
	gotOK := parseEcho(body, &got)
	if gotOK != wantOK || (wantOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("parseEcho(%q) = %+v, %v; encoding/json gives %+v, %v", body, got, gotOK, want, wantOK)
	}
}

func TestParseEcho(t *testing.T) {
	for _, body := range []string{
		sampleEcho,
		`{}`, ` { } `, `{"pod":"a"}`, `{"pod":"a",}`, `{"pod":"a"} x`, `{"pod":"a"`, `[1]`, `null`, ``, `503 Service Unavailable`,
		`{"pod":"a\"b"}`, `{"pod":"\u00e9"}`, `{"POD":"a"}`, `{"Pod":"x","pod":"y"}`, `{"pod":"a","pod":"b"}`,
		`{"ready":null}`, `{"ready":true,"ready":null}`, `{"ready":"yes"}`, `{"ready":tru}`, `{"pod":1}`, `{"pod":null}`,
		`{"conn_request":1.5}`, `{"conn_request":-3}`, `{"conn_request":1e3}`, `{"conn_request":01}`, `{"conn_request":99999999999999999999}`,
		`{"x":{"pod":"nested"}}`, `{"x":[1,2]}`, `{"x":-}`, `{"x":1.}`, `{"x":1e}`, "{\"pod\":\"\xff\"}", "{\"x\":\"\xff\"}",
		"{\"pod\":\"a\tb\"}", `{"ready":false,"draining":true,"conn_id":"c","conn_request":7,"node":"n","client_ip":"::1"}`,
		`{"client_ip":"172.19.0.6","x_forwarded_for":"172.19.0.1"}`, `{"x_forwarded_for":"203.0.113.9, 172.19.0.1"}`,
		`{"x_forwarded_for":true}`, `{"x_forwarded_for":null}`, `{"x_forwarded_for":"a\u002cb"}`,
	} {
		checkParse(t, []byte(body))
	}
	var e echoReply
	if !parseEcho([]byte(sampleEcho), &e) || e.Pod != "echo-0" || e.ConnRequest != 42 || e.Ready == nil || !*e.Ready || e.Draining == nil || *e.Draining {
		t.Errorf("sample decoded to %+v", e)
	}
	if !parseEcho([]byte(`{"pod":"p","client_ip":"172.19.0.6","x_forwarded_for":"172.19.0.1"}`), &e) || e.ForwardedFor != "172.19.0.1" || e.ClientIP != "172.19.0.6" {
		t.Errorf("an answer behind a proxy decoded to %+v, want the proxy as client_ip and the client in ForwardedFor", e)
	}
}

func FuzzParseEcho(f *testing.F) {
	for _, s := range []string{sampleEcho, `{"pod":"a"}`, `{"ready":null,"conn_request":3}`, `{"x":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, body) })
}

func BenchmarkParseEcho(b *testing.B) {
	body := []byte(sampleEcho)
	b.Run("scan", func(b *testing.B) {
		for range b.N {
			var e echoReply
			if !parseEcho(body, &e) {
				b.Fatal("not parsed")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			var e echoReply
			if err := json.Unmarshal(body, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A front's answer: the client is the last hop the front appended to
// X-Forwarded-For, the hops before it stay; without the front's header the
// echo server's attribution stands.
func TestAttributeFront(t *testing.T) {
	ready := true
	for _, tc := range []struct {
		name, xff, pod, client, hops string
	}{
		{"one hop", "10.0.0.1", "traefik-a", "10.0.0.1", ""},
		{"hops before it", "192.0.2.7, 10.0.0.1,10.0.0.2", "traefik-a", "10.0.0.2", "192.0.2.7, 10.0.0.1"},
		{"no front", "10.0.0.1", "", "10.244.0.9", "10.0.0.1"},
	} {
		h := http.Header{}
		if tc.pod != "" {
			h.Set(contract.FrontPodHeader, tc.pod)
			h.Set(contract.FrontNodeHeader, "node-a")
		}
		res := zdv1.Result{Pod: "echo-1", Node: "node-b", ClientIP: "10.244.0.9", ForwardedFor: tc.xff, Ready: &ready, ConnID: "c1", ConnRequest: 3}
		attributeFront(&res, h)
		wantPod, known := tc.pod, tc.pod == ""
		if wantPod == "" {
			wantPod = "echo-1"
		}
		if res.Pod != wantPod || res.ClientIP != tc.client || res.ForwardedFor != tc.hops || (res.ConnID != "") != known || (res.Ready != nil) != known {
			t.Errorf("%s: %+v, want pod %s, client %s, hops %q", tc.name, res, wantPod, tc.client, tc.hops)
		}
	}
}
