package suites

import (
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
)

// spotNotice is the EC2 Spot interruption notice: two minutes (see
// docs/incidents.md, spot-interruption).
const spotNotice = 2 * time.Minute

// unhandledInterruption is why no workload recipe makes an interruption
// nothing acts on drop-free.
var unhandledInterruption = Mechanism{Opens: []string{zdv1.EventNodeShutdown, zdv1.EventNodeOff}, Text: "Nothing acts on the " +
	"interruption notice, so when the machine shuts down its Pods are still ready endpoints and the node is in every LB. " +
	"With graceful node shutdown off (the kubelet's default, shutdownGracePeriod 0) the kubelet is stopped with the " +
	"machine's services: no preStop runs and no Pod's end is reported, and the Pods' processes die with the machine. " +
	"The EndpointSlices change only when the node lifecycle controller, node-monitor-grace-period after the kubelet's " +
	"last status (50 s from Kubernetes 1.32, kubernetes PR 126287), marks the node NotReady and its Pods not ready " +
	"(pkg/controller/nodelifecycle MarkPodsNotReady), or when the Node is deleted; the LB drops the node when its check " +
	"fails (kube-proxy is gone) or at that deletion. Measured on this suite's kind cluster (v1.37.2, 2026-11-28): the " +
	"machine was off 91 s after its shutdown began, the node NotReady after 46 s; hardened cells dropped 1-2 requests " +
	"on metallb, gcp-nlb, aws-nlb and azure-lb with Cluster (connections through the node refused or cut, \"no route to " +
	"host\" once the Pod's network was gone), 2 on metallb Local, 68 and 72 on gclb (502 at the shutdown, timeouts " +
	"after the power-off), 0 on aws-nlb-ip and with Local on gcp-nlb, aws-nlb and azure-lb. No Deployment setting acts " +
	"before the machine goes: a termination handler that drains on the notice does (spot-interruption-handled)."}

// spotInterruption takes a spot machine after its notice with nothing on
// the cluster acting on the notice (the spot-interruption incident): the
// machine shuts down without the kubelet's graceful node shutdown, its
// default.
func spotInterruption() Scenario {
	d := departure{What: "spot interruption, no handler", Notice: spotNotice, By: "the cloud"}
	return d.scenario(Scenario{
		Name: "spot-interruption",
		Description: "A spot interruption notice for a node that holds endpoints, nothing acting on it; " +
			"two minutes later the machine shuts down (no graceful node shutdown) and the node is deleted, under load.",
		Seeds: []string{incident.SpotInterruption},
		Hazard: "the machine stops with its Pods' endpoints ready and the node in the LB: what the LB and kube-proxy " +
			"still send there is lost until they notice",
		Prevented: []Prevention{{Hardening: fixtures.Naive, Race: true,
			Why: "whether a connection is sent through the leaving node while its machine shuts down is a race the run " +
				"does not control (2026-11-28: naive 1-9 on most LBs, 142 and 1,649 on gclb; 0 on aws-nlb-ip, and with " +
				"Local on metallb and azure-lb)"}},
		Limits: []Limit{
			{On: anyModel, Policy: clusterPolicy, Reason: unhandledInterruption},
			{On: anyModel, Policy: localPolicy, Reason: unhandledInterruption},
		},
	})
}

// spotInterruptionHandled is the same interruption with a termination
// handler acting on the notice (aws-node-termination-handler): the node is
// labelled out of the LBs, cordoned and drained before the machine goes.
func spotInterruptionHandled() Scenario {
	d := departure{What: "spot interruption, handled", Notice: spotNotice, Exclude: "aws-node-termination-handler", Drain: true,
		By: "the node termination handler on the interruption notice"}
	return d.scenario(Scenario{
		Name: "spot-interruption-handled",
		Description: "A spot interruption notice for a node that holds endpoints; a termination handler " +
			"(aws-node-termination-handler with --exclude-from-load-balancers) labels the node out of the LBs, cordons " +
			"and drains it; two minutes after the notice the machine shuts down and the node is deleted, under load.",
		Seeds:     []string{incident.SpotInterruption},
		Hazard:    evictionHazard,
		Prevented: evictionRace("2026-11-28: 6-53 on every LB"),
		Limits:    exclusionLimits(),
	})
}
