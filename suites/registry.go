package suites

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
)

var (
	localPolicy   = corev1.ServiceExternalTrafficPolicyLocal
	clusterPolicy = corev1.ServiceExternalTrafficPolicyCluster
)

// matrix is every policy x profile with the usual roles: hardened asserts,
// naive documents.
func matrix(policies ...corev1.ServiceExternalTrafficPolicy) []Case {
	var out []Case
	for _, p := range policies {
		out = append(out,
			Case{Policy: p, Hardening: fixtures.Naive, KeepAlive: true, Role: zdv1.RoleDocumentation},
			Case{Policy: p, Hardening: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion})
	}
	return out
}

// gateCases take the Pod-targeted recipe apart on the LB models whose
// readiness gate a workload may leave out (optionalGate), beside naive
// (neither) and hardened (both): the gate alone and the termination alone,
// as documentation. The gate alone is expected to reproduce the scenario's
// hazard (it holds a rollout for the new targets but does not delay an old
// Pod's exit); the preStop alone reproduces preStopOnly where the
// disruption replaces Pods faster than the LB checks the new ones (a
// scenario whose preStop-only cells are spared says so in its Prevented).
// Cluster only: an LB that sends to Pods bypasses kube-proxy, so the
// Service's traffic policy changes nothing on its path and a Local pair
// would measure the same thing twice.
func gateCases(preStopOnly string) []Case {
	return []Case{
		{Policy: clusterPolicy, Hardening: fixtures.GateOnly, KeepAlive: true, Role: zdv1.RoleDocumentation, Only: optionalGate},
		{Policy: clusterPolicy, Hardening: fixtures.PreStopOnly, KeepAlive: true, Role: zdv1.RoleDocumentation, Only: optionalGate, Hazard: preStopOnly},
	}
}

// h2Cases are the protocol axis, on the scenarios that end Pods under
// load one by one (rolling-update, drain-node, scale-down): the Cluster
// pair again with the load speaking HTTP/2 over cleartext (h2c), whose
// requests are streams on a kept-alive connection and whose server ends a
// connection with GOAWAY (RFC 9113, section 6.8), recorded in the run file
// next to the windows. Cluster only: the traffic policy changes which node
// a connection enters by, not how the Pod ends it, so the pair measures the
// protocol at two witnesses per column rather than four.
//
// The hardened recipe is asserted over HTTP/2 too: its drain sends RFC
// 9113's shutdown notice first (a GOAWAY of 2^31-1 and a PING, the echo
// server's h2notice.go) and lets Go's server name the last stream only once
// the client has answered, so no stream the client sent in the meantime
// is refused. Without the notice Go's single GOAWAY refused such streams
// (2026-11-29: 5 in 160 ms on gcp-nlb, rolling-update).
func h2Cases() []Case {
	return []Case{
		{Policy: clusterPolicy, Hardening: fixtures.Naive, KeepAlive: true, Protocol: zdv1.ProtocolH2C, Role: zdv1.RoleDocumentation},
		{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Protocol: zdv1.ProtocolH2C, Role: zdv1.RoleAssertion},
	}
}

// grpcCases are the protocol axis's gRPC rows, on the same scenarios as
// h2Cases: the Cluster pair with the load calling the echo server's gRPC
// service with grpc-go's client, as the client of a service with both
// kinds of methods does on one connection: unary calls, and one request in
// five a server stream of ten messages a tenth of a second apart
// (load.MatrixShape; a stream cut before its last message is dropped
// work, and says how many it got). One pair for both kinds: the pair's witnesses share
// their disruptions with the other rows, and two pairs would cost three
// more disruptions of each scenario for no other connection behaviour.
// The echo server answers gRPC on its HTTP/2 server, so the hardened drain
// is grpc-go's GracefulStop (the shutdown notice, a PING, the real GOAWAY,
// streams let finish) and the naive one its Stop (every connection closed
// at once). Not on the L7 columns (gclb, gclb-neg, aws-alb-ip): the cloud
// LB's HTTP front reaches the Pods over HTTP/1.1, as those LBs do by
// default, and gRPC needs HTTP/2 to the backend (an ALB target group of
// protocol version gRPC; a backend service of protocol HTTP2), which the
// model does not have.
func grpcCases() []Case {
	return []Case{
		{Policy: clusterPolicy, Hardening: fixtures.Naive, KeepAlive: true, Protocol: zdv1.ProtocolGRPC, Role: zdv1.RoleDocumentation, Only: carriesGRPC},
		{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Protocol: zdv1.ProtocolGRPC, Role: zdv1.RoleAssertion, Only: carriesGRPC},
	}
}

// wsCases are the protocol axis's WebSocket rows, on the same scenarios
// as h2Cases: the Cluster pair with the load opening a WebSocket session
// per request (RFC 6455), ten echo answers 300 ms apart on one connection
// (load.MatrixShape), as a live feed's client does. A session lives
// longer than a request, and no HTTP/1.1 drain reaches it: the hardened
// echo server closes its sessions with 1001 "going away" when its drain
// begins, and the client opens the session again for the rest, through
// the LB, which has moved by then; the naive one ends without a close
// frame. On every column: the L7 ones proxy the upgrade (Go's
// httputil.ReverseProxy), as the LBs they model do (AWS, "Listeners for
// your Application Load Balancers", WebSockets: an upgraded connection
// becomes a persistent one between client and target through the LB;
// Google Cloud, "External Application Load Balancer overview", WebSocket
// support).
func wsCases() []Case {
	return []Case{
		{Policy: clusterPolicy, Hardening: fixtures.Naive, KeepAlive: true, Protocol: zdv1.ProtocolWebSocket, Role: zdv1.RoleDocumentation},
		{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Protocol: zdv1.ProtocolWebSocket, Role: zdv1.RoleAssertion},
	}
}

// frontCases are the rows where a real proxy stands as the Pods behind
// the LB, fronting the echo server (fixtures.Front), as an ingress or
// gateway data plane does behind most LoadBalancer Services: Traefik and
// HAProxy, each naive (its defaults: Traefik closes its listeners at its
// signal, HAProxy's SIGTERM is its hard stop) and hardened (the recipe's
// preStop, then Traefik's accept grace with its ping failing and its
// connections aged out, HAProxy's soft stop), HTTP/1.1 with keep-alive,
// Cluster. Their rollout is the proxy's own: the echo server behind
// stays.
func frontCases() []Case {
	var out []Case
	for _, f := range fixtures.Fronts() {
		out = append(out,
			Case{Policy: clusterPolicy, Hardening: fixtures.Naive, KeepAlive: true, Role: zdv1.RoleDocumentation, Front: f, Hazard: naiveFront[f]},
			Case{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion, Front: f})
	}
	return out
}

// naiveFront is what each naive front does to a rollout under load: a
// race, since what it loses depends on which requests and connections meet
// its exit (docs/proxies.md).
var naiveFront = map[fixtures.Front]string{
	fixtures.FrontTraefik: "Traefik on its defaults closes its listeners at SIGTERM (requestAcceptGraceTimeout 0) and, with " +
		"net/http's Shutdown, every idle keep-alive connection, while kube-proxy and the LB may still send it new " +
		"connections; requests it had not answered get up to graceTimeOut (10 s) (traefik/traefik v3.6.2 " +
		"pkg/server/server_entrypoint_tcp.go TCPEntryPoint.Shutdown). What it loses depends on which connections and " +
		"requests meet that moment: at 10 requests/s, 39-86 requests on 9-13 of 15 columns in three runs, mostly " +
		"refused, most behind Pod targets, whose LB the rollout outruns (2026-12-06)",
	fixtures.FrontHAProxy: "SIGTERM is HAProxy's hard stop in master-worker mode, as Debian's systemd unit runs it (-Ws; " +
		"the package sets no other stop signal): it exits at once, cutting what is in flight and every open connection, " +
		"while the endpoint's removal may still be on its way; over kept-alive connections the moment rarely meets a " +
		"request: at 10 requests/s, 27 requests on 13 of 15 columns, 1-5 each (refused, 502 from the L7 fronts, " +
		"re-sent GETs, resets; 2026-12-06). Behind Pod targets the rollout also outruns the LB (docs/proxies.md)",
}

// wsCutRace is why the naive WebSocket cells document a race.
const wsCutRace = "a WebSocket session holds one connection to one Pod for its life, so a disruption loses the sessions " +
	"open on the Pods it ends, cut without a close frame when the naive Pod exits, and none where no session was open " +
	"on them at that moment"

// documented makes every case of cases documentation, expecting why: a
// race one run may or may not show, measured where the same cases assert
// elsewhere.
func documented(cases []Case, why string) []Case {
	out := slices.Clone(cases)
	for i := range out {
		out[i].Role, out[i].Hazard = zdv1.RoleDocumentation, why
	}
	return out
}

// streamsStallOnDrain is why drain-node's gRPC and WebSocket cells
// document rather than assert: what they lose there is this bench's, not
// the workload's.
const streamsStallOnDrain = "a drain on this 2-core bench stalls the Pods that stay for seconds while the drained node's " +
	"Pods start again elsewhere, and a stream or a session open across the stall times out: in two runs of the 54 gRPC " +
	"and WebSocket cells (2026-12-06) 8 and 14 of the 27 hardened ones lost 1-15 streams and sessions each, all " +
	"timeouts on Pods the drain did not touch, in 2-4 s windows while a replacement took 9 s from creation to Ready; " +
	"the same hardened cells lost nothing in rolling-update and scale-down (54 of 54), and the naive ones lose what " +
	"the evicted Pod's exit cuts"

// grpcPinnedRace is why the naive gRPC cells document a race.
const grpcPinnedRace = "gRPC's calls are streams on the one connection each ClientConn holds, which enters one node and " +
	"reaches one Pod for its life (kube-proxy picks a Pod per connection), so a disruption that does not end that Pod " +
	"is not seen by the cell, and one that does loses the calls and streams its close cuts, or that a GOAWAY refused " +
	"and grpc-go sent again on its own"

// h2PinnedRace is why the naive HTTP/2 cells document a race.
const h2PinnedRace = "over HTTP/2 the load's one or two connections each enter one node and reach one Pod for their " +
	"life (kube-proxy picks a Pod per connection), so a disruption that does not end that Pod is not seen by the cell, " +
	"and one that does loses what Go's GOAWAY refuses or, when the naive Pod's close beats its GOAWAY, what the close " +
	"cuts (2026-11-29: drain-node 0 on metallb, aws-nlb and gcp-nlb, 1-4 on the others; rolling-update 1-27)"

// Scenarios is the registry, in the order the suite runs them: the order is
// a decision (the control first, so every later cell is judged against its
// column's; nodepool-replacement last, since it re-pools the cluster), so
// it is written here and nowhere else; everything else about a scenario is
// in its own file.
func Scenarios() []Scenario {
	return []Scenario{
		control(),
		rollingUpdate(),
		sourceIP(),
		distribution(),
		unreadyKeepalive(),
		drainNode(),
		scaleDown(),
		nodeShutdown(),
		spotInterruption(),
		spotInterruptionHandled(),
		consolidation(),
		consolidationAutoscaler(),
		drainPoolWithPDB(),
		nodepoolReplacement(),
	}
}

// Timing is every wait and settle time of the scenario bodies, in one
// place.
type Timing struct {
	// Baseline is how long load runs before a disruption, so the run shows
	// the steady state first; a run needs at least Baseline x rate results.
	Baseline time.Duration
	// Observe is how long a scenario without a disruption (or after a
	// readiness flip) watches; ObserveShares is longer, for per-pod shares.
	Observe, ObserveShares time.Duration
	// SettleMargin is added to the LB's removal lag after a disruption, so a
	// late blackhole is measured too.
	SettleMargin time.Duration
	// NodeDrain bounds the drain of one node; PoolDrain that of a pool whose
	// PodDisruptionBudget may block it on purpose.
	NodeDrain, PoolDrain time.Duration
	// EndpointRemoval bounds the wait for an unready pod's endpoint to go.
	EndpointRemoval time.Duration
	// KubeProxyGrace is how long after an endpoint's removal a pod may still
	// be sent new requests: kube-proxy applies the change on every node
	// within about a second (its sync period).
	KubeProxyGrace time.Duration
	// Control is how long each control cell's load runs with nothing
	// disrupted (Settings.Control overrides).
	Control time.Duration
	// PowerOff bounds a machine's power-off beyond its kubelet's shutdown
	// grace: systemd stopping its services and what is left.
	PowerOff time.Duration
	// NodeDeletion is how long after a machine is gone its Node is
	// deleted: the cloud node lifecycle controller's pass.
	NodeDeletion time.Duration
	// HazardWatch bounds how long a documentation cell waits for its LB
	// after the disruption: its hazard (a drop) shows within seconds of
	// the disruption, and an LB slower than this (gclb's default check,
	// 10 x 60 s) would otherwise hold its whole batch for the rest of its
	// lag. Assertion cells always wait their LB's whole lag, since a
	// late blackhole is exactly what they must not miss.
	HazardWatch time.Duration
}

// tmNodeDeletion is the cloud node lifecycle controller's period: it
// deletes the Node of an instance that no longer exists on its next pass
// (k8s.io/cloud-provider controllers/nodelifecycle, --node-monitor-period,
// 5 s by default).
const tmNodeDeletion = 5 * time.Second

// DefaultTiming is the suite's timing.
func DefaultTiming() Timing {
	return Timing{
		Baseline: 5 * time.Second, Observe: 15 * time.Second, ObserveShares: 20 * time.Second,
		SettleMargin: 5 * time.Second, NodeDrain: 3 * time.Minute, PoolDrain: 60 * time.Second,
		EndpointRemoval: time.Minute, KubeProxyGrace: 2 * time.Second,
		Control: time.Minute, HazardWatch: 2 * time.Minute, PowerOff: 2 * time.Minute, NodeDeletion: tmNodeDeletion,
	}
}
