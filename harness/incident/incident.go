// Package incident names the public incidents zerodrop reproduces. Each
// identifier is a heading of docs/incidents.md, which tells the incident in
// the project's words with its public sources; scenarios (their Seeds) and
// doctor rules cite incidents by these identifiers.
package incident

// Doc is where, in the repository, each incident is told.
const Doc = "docs/incidents.md"

const (
	// DrainLocalPDB: a nodepool drain with Local policy while PDBs pin the
	// pods to nodes the LB no longer sends to.
	DrainLocalPDB = "drain-local-pdb"
	// NodepoolBackend: an LB whose backend holds one nodepool only.
	NodepoolBackend = "nodepool-backend"
	// RollingUpdateLocal: a rolling update behind a Local LB that outruns
	// the LB's health check.
	RollingUpdateLocal = "rolling-update-local"
	// SourceIPDilemma: Local keeps the client IP but blackholes a node whose
	// last local endpoint is gone while the LB still sends to it.
	SourceIPDilemma = "source-ip-dilemma"
	// KeepaliveUnready: reused keep-alive connections keep feeding a pod
	// that is no longer ready.
	KeepaliveUnready = "keepalive-unready"
	// GracefulNodeShutdown: a node's machine shuts down (a reboot, a
	// preemption) and its kubelet's graceful node shutdown ends its Pods
	// while their endpoints and the LB still count them.
	GracefulNodeShutdown = "node-shutdown"
	// SpotInterruption: the cloud takes a spot or preemptible machine after
	// a short notice, with or without a handler that drains it first.
	SpotInterruption = "spot-interruption"
	// Consolidation: the cluster autoscaler or Karpenter removes a node it
	// finds underused: taint, drain, delete.
	Consolidation = "consolidation"
)

// All lists every incident in the order Doc tells them.
func All() []string {
	return []string{DrainLocalPDB, NodepoolBackend, RollingUpdateLocal, SourceIPDilemma, KeepaliveUnready, GracefulNodeShutdown, SpotInterruption, Consolidation}
}

// Known reports whether id names an incident.
func Known(id string) bool {
	for _, k := range All() {
		if k == id {
			return true
		}
	}
	return false
}

// Trigger is what a disruption does to a workload that a hazard needs: a
// doctor rule names the triggers its risk needs, a scenario the triggers
// its disruption produces, and a finding predicts drops in every scenario
// that produces one of its rule's triggers.
type Trigger string

const (
	// PodTermination: a serving Pod ends (a rollout, a scale-down, an
	// eviction).
	PodTermination Trigger = "pod-termination"
	// Eviction: Pods are evicted from nodes being drained, under their
	// PodDisruptionBudgets, and started again elsewhere.
	Eviction Trigger = "eviction"
	// Rollout: the workload's controller replaces its Pods.
	Rollout Trigger = "rollout"
	// ReadinessFlip: a running Pod turns unready while clients hold
	// connections to it.
	ReadinessFlip Trigger = "readiness-flip"
	// Placement: where the Pods run against where the LB sends, steady
	// state or after nodes change.
	Placement Trigger = "placement"
	// PoolDrain: every node of a pool is cordoned and drained together, so
	// the Pods there are evicted at once, bounded only by their
	// PodDisruptionBudgets (a node pool upgrade or replacement).
	PoolDrain Trigger = "pool-drain"
	// NodeShutdown: a node's machine shuts down with the workload's Pods
	// still on it: the kubelet's graceful node shutdown (or, where it is
	// off, the operating system) ends them without deleting them, so no
	// endpoint turns terminating and no PodDisruptionBudget is asked.
	NodeShutdown Trigger = "node-shutdown"
	// NodeRemoval: a tool marks a node for removal with a taint, drains
	// it and deletes its machine without labelling it out of the LBs (the
	// cluster autoscaler's scale-down): the LB keeps the empty node as a
	// backend until its own check, or the Node's deletion, says otherwise.
	NodeRemoval Trigger = "node-removal"
)

// Triggers lists every trigger.
func Triggers() []Trigger {
	return []Trigger{PodTermination, Eviction, Rollout, ReadinessFlip, Placement, PoolDrain, NodeShutdown, NodeRemoval}
}
