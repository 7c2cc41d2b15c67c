package load

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// echoReply is the part of the echo server's answer used for attribution.
type echoReply struct {
	Pod      string `json:"pod"`
	Node     string `json:"node"`
	ClientIP string `json:"client_ip"`
	// ForwardedFor is the X-Forwarded-For header the server got.
	ForwardedFor string `json:"x_forwarded_for"`
	Ready        *bool  `json:"ready"`
	Draining     *bool  `json:"draining"`
	ConnID       string `json:"conn_id"`
	ConnRequest  int    `json:"conn_request"`
}

// attribute fills res with who answered, from body if it is an echo
// answer (parseEcho): pod, node, client address, readiness, draining,
// connection and its request number.
func attribute(res *zdv1.Result, body []byte) {
	if len(body) == 0 {
		return
	}
	var e echoReply
	if parseEcho(body, &e) {
		res.Pod, res.Node, res.ClientIP, res.ForwardedFor = e.Pod, e.Node, e.ClientIP, e.ForwardedFor
		res.Ready, res.Draining = e.Ready, e.Draining
		res.ConnID, res.ConnRequest = e.ConnID, e.ConnRequest
	}
}

// attributeFront gives an answer that came through a proxy standing as
// the workload's Pods (fixtures.Front) to that proxy's Pod and node, which
// it names in its response headers: the Service under test selects the
// proxy, not the echo server behind it. The echo answer's readiness,
// draining and connection then describe the proxy's connection to the
// echo server, not the client's, and are left out; the client address is
// the one the proxy saw, the last it appended to X-Forwarded-For (the echo
// server's own peer is the proxy).
func attributeFront(res *zdv1.Result, h http.Header) {
	pod := h.Get(contract.FrontPodHeader)
	if pod == "" {
		return
	}
	res.Pod, res.Node = pod, h.Get(contract.FrontNodeHeader)
	res.Ready, res.Draining = nil, nil
	res.ConnID, res.ConnRequest = "", 0
	hops := res.ForwardedFor
	i := strings.LastIndexByte(hops, ',') // -1: one hop, the whole header
	res.ClientIP, res.ForwardedFor = strings.TrimSpace(hops[i+1:]), ""
	if i >= 0 {
		res.ForwardedFor = strings.TrimSpace(hops[:i])
	}
}

// parseEcho decodes the echo server's answer into e and reports whether it
// was a JSON object of the expected shape. The echo reply is a flat object
// of plain strings, booleans and integers, which scanEcho reads an order of
// magnitude faster than encoding/json; anything it is not sure about
// (escapes, nesting, odd key case, invalid UTF-8) goes to json.Unmarshal,
// so the outcome is always the one json.Unmarshal gives.
func parseEcho(body []byte, e *echoReply) bool {
	// Only an object can be an echo reply; error pages go no further.
	if i := skipWS(body, 0); i >= len(body) || body[i] != '{' {
		return false
	}
	if ok, sure := scanEcho(body, e); sure {
		return ok
	}
	*e = echoReply{}
	return json.Unmarshal(body, e) == nil
}

// echoKey names key if it is one of ours. encoding/json matches keys
// case-insensitively (with Unicode folding), so a key with any upper-case or
// non-ASCII byte is left to it.
func echoKey(key []byte) (name string, known, sure bool) {
	for _, c := range key {
		if c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return "", false, false
		}
	}
	switch string(key) { // no allocation: a switch on a conversion
	case "pod":
		return "pod", true, true
	case "node":
		return "node", true, true
	case "client_ip":
		return "client_ip", true, true
	case "x_forwarded_for":
		return "x_forwarded_for", true, true
	case "ready":
		return "ready", true, true
	case "draining":
		return "draining", true, true
	case "conn_id":
		return "conn_id", true, true
	case "conn_request":
		return "conn_request", true, true
	}
	return "", false, true
}

// scanEcho returns sure=false whenever json.Unmarshal might decide
// differently from the fast path.
func scanEcho(b []byte, e *echoReply) (ok, sure bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b), false
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false, false
		}
		key, j, plain := scanString(b, i)
		if !plain {
			return false, false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return false, false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false, false
		}
		k, known, sure := echoKey(key)
		if !sure {
			return false, false
		}
		switch c := b[i]; {
		case c == '"':
			val, j, plain := scanString(b, i)
			if !plain || (known && !utf8.Valid(val)) {
				return false, false
			}
			i = j
			if known {
				switch k {
				case "pod":
					e.Pod = string(val)
				case "node":
					e.Node = string(val)
				case "client_ip":
					e.ClientIP = string(val)
				case "x_forwarded_for":
					e.ForwardedFor = string(val)
				case "conn_id":
					e.ConnID = string(val)
				default:
					return false, false // a string where a bool or number belongs
				}
			}
		case c == 't' || c == 'f' || c == 'n':
			var lit string
			switch c {
			case 't':
				lit = "true"
			case 'f':
				lit = "false"
			default:
				lit = "null"
			}
			if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
				return false, false
			}
			i += len(lit)
			if known {
				v := c == 't'
				var p *bool // null sets a pointer to nil, as json does
				if c != 'n' {
					p = &v
				}
				switch {
				case k == "ready":
					e.Ready = p
				case k == "draining":
					e.Draining = p
				case c == 'n':
					// null leaves a string or number as it is, as json does
				default:
					return false, false
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := scanNumber(b, i)
			if j < 0 {
				return false, false
			}
			if known {
				if k != "conn_request" {
					return false, false
				}
				n, err := strconv.Atoi(string(b[i:j]))
				if err != nil {
					return false, false // a fraction or out of range: json decides
				}
				e.ConnRequest = n
			}
			i = j
		default:
			return false, false // nested value
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return false, false
		}
		if b[i] == '}' {
			return true, skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false, false
		}
		i = skipWS(b, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the contents of the string starting at b[i] == '"'
// and the index after its closing quote; plain is false when it has escapes
// or control characters (or no end), which the fast path leaves to json.
func scanString(b []byte, i int) (val []byte, next int, plain bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// scanNumber returns the index after a valid JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	return i
}
