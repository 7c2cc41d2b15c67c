package suites

import (
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// nodeShutdownGrace is the kubelet's graceful node shutdown the scenario
// gives its nodes: GKE's on the nodes it shuts down for a preemption (see
// docs/incidents.md, node-shutdown).
var nodeShutdownGrace = recipe.ShutdownGrace{Period: 30 * time.Second, CriticalPods: 15 * time.Second}

// shutdownKeepsEndpoints is why no workload recipe makes a node's shutdown
// drop-free behind any LB: the Pods leave the endpoints only once their
// exit is reported.
var shutdownKeepsEndpoints = Mechanism{Opens: []string{zdv1.EventNodeShutdown, zdv1.EventNodeOff}, Text: "The kubelet's graceful " +
	"node shutdown kills the node's Pods without deleting them (kubernetes pkg/kubelet/nodeshutdown " +
	"nodeshutdown_manager_linux.go), so no endpoint turns terminating, and the EndpointSlices followed nothing but each " +
	"container's exit: measured on this suite's kind cluster (Kubernetes v1.37.2, shutdownGracePeriod 30 s, 15 s of it for " +
	"critical Pods, 2026-11-28), the node reported NotReady 2 s after the shutdown began and no Pod's Ready condition " +
	"changed before its container exited, not even where the app failed its readiness probe on SIGTERM and kept " +
	"accepting for 8-32 s; each Pod turned unready 1-3 s after its exit. What kube-proxy and the LB send the Pod in " +
	"those seconds is refused, a Pod still accepting when the 15 s for regular Pods end is killed as a ready endpoint " +
	"(and with Local the node's check fails only after that, then the LB's lag), and the connections the LB keeps " +
	"through the node end with its machine (off 19 s after the shutdown began; the Node deleted 5 s later). No " +
	"Deployment setting moves traffic away first: drain the node before its machine shuts down (a termination handler " +
	"on the cloud's notice: spot-interruption-handled; kubectl drain before a planned reboot). Measured, hardened cells: " +
	"gcp-nlb 1 and 1 (Cluster: a reused connection timed out at the power-off; Local: refused at the end of the 15 s), " +
	"aws-nlb Local 1 refused at 15.8 s, gclb 50 and 76 (502 from 15.5 s and timeouts after the power-off), 0 on " +
	"metallb, azure-lb, aws-nlb-ip and aws-nlb Cluster; naive cells 4-11 refused in the 2 s before their exit was " +
	"reported, gclb 105 and 404"}

// nodeShutdown shuts the machine of a node that holds endpoints down under
// load, the way its kubelet sees a real shutdown, and the node goes (the
// node-shutdown incident).
func nodeShutdown() Scenario {
	d := departure{What: "graceful node shutdown", Grace: nodeShutdownGrace, By: "the machine's shutdown"}
	return d.scenario(Scenario{
		Name: "node-shutdown",
		Description: "The machine of a node that holds endpoints shuts down (systemd-logind tells the kubelet, whose graceful " +
			"node shutdown gives its Pods " + nodeShutdownGrace.String() + "), then the node is deleted, under load.",
		Seeds: []string{incident.GracefulNodeShutdown},
		Hazard: "the kubelet ends the node's Pods on shutdown while their endpoints are still ready (no API " +
			"eviction, no deletion first): Pods that exit at once refuse what is still sent to them; then the machine " +
			"is gone while the LB still counts the node",
		Prevented: []Prevention{{Hardening: fixtures.Naive, Race: true,
			Why: "whether a naive Pod killed on the shutdown is sent a connection in the 1-3 s before its exit is " +
				"reported, or a kept-alive connection through the node is in use when the machine goes, is a race the " +
				"run does not control (2026-11-28, v1.37.2: 4-11 refused on every LB but metallb with Local, 0 there; " +
				"gclb 105 and 404)"}},
		Limits: []Limit{
			{On: anyModel, Policy: clusterPolicy, Reason: shutdownKeepsEndpoints},
			{On: anyModel, Policy: localPolicy, Reason: shutdownKeepsEndpoints},
		},
	})
}
