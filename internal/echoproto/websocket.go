package echoproto

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The WebSocket route (RFC 6455): a session opened on WSPath gets
// WSMessages echo answers as text messages, each after WSInterval, then a
// normal close (1000). A server that drains closes its sessions early with
// 1001, "going away" (RFC 6455, section 7.4.1: "an endpoint is going
// away, such as a server going down"), and WSReconnect as the reason: the
// client should open a new session for the rest, which the LB sends to a
// Pod that is not going away. A session cut without a close frame is the
// naive server's end.
const (
	WSPath      = "/ws"
	WSMessages  = "messages"
	WSInterval  = "interval"
	WSReconnect = "draining: reconnect"
)

// WSParams reads a session's length from its query (ParseStream).
func WSParams(q url.Values) (n int, every time.Duration, err error) {
	return ParseStream(WSMessages, q.Get(WSMessages), WSInterval, q.Get(WSInterval))
}

// WSURL is the session URL on base's host asking for n messages every
// apart: ws:// for http://, wss:// for https://.
func WSURL(base *url.URL, n int, every time.Duration) string {
	u := url.URL{Scheme: "ws", Host: base.Host, User: base.User, Path: WSPath,
		RawQuery: url.Values{WSMessages: {strconv.Itoa(n)}, WSInterval: {every.String()}}.Encode()}
	if base.Scheme == "https" {
		u.Scheme = "wss"
	}
	return u.String()
}

// IsWebSocket says whether r asks to open a WebSocket (RFC 6455, section
// 4.2.1: an HTTP/1.1 GET with Upgrade: websocket and Connection: Upgrade).
func IsWebSocket(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.Method == http.MethodGet && headerHas(r.Header, "Upgrade", "websocket") &&
		headerHas(r.Header, "Connection", "upgrade")
}

// headerHas says whether a comma-separated header lists token, in any case.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
