// Package echo is the zerodrop echo server: the suite's eye inside the
// cluster. Every answer on the traffic port says which pod and node served
// it, which client address the server saw, whether the pod was ready and
// draining at that instant and whether the TCP connection was reused, so a
// load generator outside the cluster can attribute every request.
//
// Two listeners: the traffic port (HTTP/1.1 and h2c; echo, /healthz, /readyz; reached through
// the Service; several addresses serve it when Listen names several, as a
// stand-in for an app with several ports does, and the probe paths are
// ReadyPaths and LivePaths) and the admin port (readiness and keep-alive switches, stats,
// Prometheus metrics; never exposed by a Service). Run drives both and the
// termination sequence; it owns no global state, so several servers can run
// in one process (tests do).
//
// # Traffic port
//
// Any path other than the probe paths (default /healthz and /readyz) answers 200 with a JSON object:
//
//	pod, node, namespace, pod_ip    identity (downward API, hostname otherwise)
//	client_ip, client_port          the TCP peer as the server saw it (port is a number)
//	x_forwarded_for                 the X-Forwarded-For request header, "" if absent
//	ready                           what /readyz would have answered at that instant
//	draining                        the server has stopped accepting (shutdown in progress)
//	terminating                     a termination signal has arrived (delay or drain)
//	keepalive                       the keep-alive switch at that instant
//	proto                           the request's protocol as the server read it ("HTTP/1.1", "HTTP/2.0": h2c)
//	conn_id, conn_request           connection identity and 1-based request number on it
//	seq                             server-wide 1-based counter of echo answers
//	time                            RFC3339Nano, UTC
//	request_id                      the X-Request-Id request header, "" if absent
//
// The optional query parameter delay=<duration> (at most 10m) holds the
// answer that long, to model long polls and to have requests in flight
// during a drain. /admin/... and /metrics answer 404 on the traffic port.
//
// Probes (/healthz, /readyz) count towards conn_request but not towards
// seq or the served_* counters: kubelet probes would otherwise swamp
// served_while_unready, the number the suite looks at.
package echo
