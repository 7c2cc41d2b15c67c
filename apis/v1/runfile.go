package v1

import (
	"strconv"
	"time"
)

// RunFileSchema identifies the run file's line format (see the package
// comment).
const RunFileSchema = "zerodrop.dev/runfile/v1"

// Line kinds.
const (
	KindMeta   = "meta"
	KindResult = "result"
	KindEvent  = "event"
	KindEnd    = "end"
)

// Error classes of a result without an HTTP response.
const (
	// ClassRefused: the connection was refused (ECONNREFUSED).
	ClassRefused = "refused"
	// ClassReset: the peer reset or closed the connection before a complete
	// response (ECONNRESET, EPIPE, ECONNABORTED, unexpected EOF).
	ClassReset = "reset"
	// ClassTimeout: no complete response within the per-request timeout.
	ClassTimeout = "timeout"
	// ClassDNS: the target host name did not resolve.
	ClassDNS = "dns"
	// ClassOther: anything else (TLS, malformed response, ...).
	ClassOther = "other"
	// ClassRetried: the HTTP client re-sent the request on its own after
	// an attempt failed (Go's transport re-sends an idempotent request when
	// a reused connection breaks). Whatever the last attempt got, a client
	// without that retry saw the failure, so the request counts as dropped;
	// retry_error says what the failed attempt met.
	ClassRetried = "retried"
	// ClassGoAwayRefused (in retry_error) is why an HTTP/2 client re-sent a
	// request: the server's GOAWAY named a last stream below the request's,
	// so the server had not processed it (RFC 9113, section 6.8) and the
	// client sent it again on another connection.
	ClassGoAwayRefused = "goaway-refused"
	// ClassStreamCut: a gRPC stream ended with status OK, or a WebSocket
	// session with a normal close, before the messages it asked for
	// (Result.Messages < Result.WantMessages): the server stopped short,
	// and its client did not get the work.
	ClassStreamCut = "stream-cut"
	// ClassGRPCPrefix prefixes the class of a gRPC call that failed
	// with a status no transport error explains, by its code's name in
	// lower case: "grpc-unavailable", "grpc-internal".
	ClassGRPCPrefix = "grpc-"
)

// Header is the run file's first line: what the run is, so the file can be analysed on
// its own.
type Header struct {
	Schema      string        `json:"schema"`
	RunID       string        `json:"run_id"`
	Created     time.Time     `json:"created"`
	ToolVersion string        `json:"tool_version,omitempty"`
	Scenario    ScenarioSpec  `json:"scenario"`
	Load        *LoadSettings `json:"load,omitempty"`
	// SigningKey is the ID of the key that signs the run file when it is
	// closed (KeyID); "" for an unsigned run file.
	SigningKey string `json:"signing_key,omitempty"`
}

// Result is one request's outcome. See the package comment for the fields.
type Result struct {
	Seq      uint64        `json:"seq"`
	ID       string        `json:"id"`
	Target   int           `json:"target,omitempty"`
	Time     time.Time     `json:"time"`
	Latency  time.Duration `json:"latency_ns"`
	Status   int           `json:"status"`
	Class    string        `json:"class,omitempty"`
	Error    string        `json:"error,omitempty"`
	Reused   bool          `json:"reused,omitempty"`
	Pod      string        `json:"pod,omitempty"`
	Node     string        `json:"node,omitempty"`
	ClientIP string        `json:"client_ip,omitempty"`
	// ForwardedFor is the X-Forwarded-For header the echo server got: an
	// HTTP proxy in front of the Pod (an L7 LB) carries the client's
	// address there, since the Pod's peer is the proxy.
	ForwardedFor string `json:"forwarded_for,omitempty"`
	Ready        *bool  `json:"ready,omitempty"`
	Draining     *bool  `json:"draining,omitempty"`
	ConnID       string `json:"conn_id,omitempty"`
	ConnRequest  int    `json:"conn_request,omitempty"`
	// Lag is how long after its scheduled (due) time the request was sent:
	// due = Time - Lag. A constant-rate load that sends late was not
	// measuring during the delay.
	Lag time.Duration `json:"lag_ns,omitempty"`
	// Retries counts the attempts the HTTP client made on its own after
	// the first one failed; RetryError is what the first failed attempt
	// met.
	Retries    int    `json:"retries,omitempty"`
	RetryError string `json:"retry_error,omitempty"`
	// GRPCCode is a gRPC call's status code by name ("OK",
	// "UNAVAILABLE"); "" for HTTP. A call whose code is OK has Status 200,
	// any other Status 0 and a Class.
	GRPCCode string `json:"grpc_code,omitempty"`
	// Messages and WantMessages are a gRPC stream's: the messages it got
	// and the ones it asked for. A stream short of them is dropped, as one
	// request, whatever its status said; the messages it lost are
	// WantMessages - Messages.
	Messages     int `json:"messages,omitempty"`
	WantMessages int `json:"want_messages,omitempty"`
	// Reconnects counts the times a WebSocket session opened again after
	// the server closed it with 1001, "going away" (RFC 6455, section
	// 7.4.1), before its last message: the server's own request, so a
	// session that got every message that way is a success (Status 101).
	Reconnects int `json:"reconnects,omitempty"`
}

// OK reports whether the request got a 2xx response (or a whole WebSocket
// session) on its first attempt.
// A 2xx that needed a hidden retry is not OK: see ClassRetried.
func (r *Result) OK() bool { return r.answered() && r.Retries == 0 }

// answered says whether the request got what it asked for: a 2xx answer,
// or a WebSocket session (status 101, Switching Protocols) that got every
// message it asked for.
func (r *Result) answered() bool {
	return (r.Status >= 200 && r.Status <= 299) || (r.Status == 101 && r.WantMessages > 0 && r.Messages >= r.WantMessages)
}

// Due is when the load generator was scheduled to send the request.
func (r *Result) Due() time.Time { return r.Time.Add(-r.Lag) }

// FailureKind is "" for a 2xx result, the error class for a request without
// a response, and "http-NNN" for any other status.
func (r *Result) FailureKind() string {
	switch {
	case r.OK():
		return ""
	case r.Retries > 0 && r.answered():
		return ClassRetried
	case r.Status == 0:
		if r.Class == "" {
			return ClassOther
		}
		return r.Class
	default:
		return "http-" + strconv.Itoa(r.Status)
	}
}

// End is the last line of a run file that was closed properly.
type End struct {
	Time    time.Time `json:"time"`
	Results int64     `json:"results"`
	Events  int64     `json:"events"`
	// Error says why the run broke; empty for a clean run.
	Error string `json:"error,omitempty"`
	// Chain is the head of the hash chain over every line before this one
	// (Chain, from NewChain), hex: a line removed, added, reordered or
	// changed shows as a different head. "" in run files from before it.
	Chain string `json:"chain_sha256,omitempty"`
}
