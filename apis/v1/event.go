package v1

import "time"

// Event is something the harness, Kubernetes or the LB did or saw, on the same
// wall clock as the load results.
type Event struct {
	Time    time.Time         `json:"time"`
	Source  string            `json:"source"`           // "harness", "kubernetes", "lb", "load", "user"
	Type    string            `json:"type"`             // see the constants below
	Object  string            `json:"object,omitempty"` // "node/kind-worker", "pod/ns/name", "service/ns/name"
	Message string            `json:"message,omitempty"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// CriteriaField is the field of an EventCriteria event that holds the criteria.
const CriteriaField = "criteria"

// ControlFields are the fields of an EventControl event.
var ControlFields = struct{ Name, RunFile, SHA256, Total, Dropped, Status string }{
	Name: "control", RunFile: "run_file", SHA256: "run_file_sha256", Total: "total", Dropped: "dropped", Status: "status",
}

// Event sources.
const (
	SourceHarness    = "harness"
	SourceKubernetes = "kubernetes"
	SourceLB         = "lb"
	SourceLoad       = "load"
	// SourceUser is someone's own action, told to `zerodrop load` while
	// it ran (--events-from): a claim of the user's, not a measurement,
	// and never read by the verdict.
	SourceUser = "user"
)

// Event types.
const (
	EventCordon              = "cordon"
	EventUncordon            = "uncordon"
	EventDrainStart          = "drain-start"
	EventDrainEnd            = "drain-end"
	EventPodTerminating      = "pod-terminating"
	EventPodDeleted          = "pod-deleted"
	EventPodReady            = "pod-ready"
	EventPodUnready          = "pod-unready"
	EventEndpointRemoved     = "endpoint-removed"
	EventEndpointAdded       = "endpoint-added"
	EventEndpointTerminating = "endpoint-terminating"
	// EventEndpointStoppedServing: a terminating endpoint that was still
	// serving stopped serving (its Pod's readiness failed, or it exited).
	EventEndpointStoppedServing = "endpoint-stopped-serving"
	EventNodeAdded              = "node-added"
	EventNodeRemoved            = "node-removed"
	// EventNodeShutdown: a node's machine began to shut down (the
	// kubelet's graceful node shutdown, when configured, starts here);
	// field graceful says whether the kubelet held its delay lock. The
	// shutdown lasts until the same node's EventNodeOff: a failure window
	// anywhere in between is the shutdown's (Criteria.ExplainWithinMs).
	EventNodeShutdown = "node-shutdown"
	// EventNodeOff: the node's machine is off.
	EventNodeOff = "node-off"
	// EventNodeTainted and EventNodeLabelled: the harness put a taint or a
	// label on a node, as a node's lifecycle tool does (fields key, value,
	// effect).
	EventNodeTainted  = "node-tainted"
	EventNodeLabelled = "node-labelled"
	// EventInterruptionNotice: the cloud announced that a node's machine
	// will be taken (a spot interruption or preemption notice); field
	// notice is the time until it goes.
	EventInterruptionNotice = "interruption-notice"
	EventRolloutStart       = "rollout-start"
	EventRolloutEnd         = "rollout-end"
	EventPoolAdded          = "pool-added"
	EventPoolRemoved        = "pool-removed"
	EventLBBackendAdded     = "lb-backend-added"
	EventLBBackendRemoved   = "lb-backend-removed"
	EventLBNodeHealthy      = "lb-node-healthy"
	EventLBNodeUnhealthy    = "lb-node-unhealthy"
	// EventLBTargetHealthy and EventLBTargetUnhealthy are the health verdicts
	// of a Pod target (container-native load balancing: the LB checks each
	// Pod itself); object pod/<namespace>/<name>, field pod.
	EventLBTargetHealthy   = "lb-target-healthy"
	EventLBTargetUnhealthy = "lb-target-unhealthy"
	// EventRouteChanged (source "lb"): the upstream router's route to a
	// Service's address changed, a BGP speaker having advertised or
	// withdrawn it (MetalLB's BGP mode); fields vip, nexthops (the nodes
	// it now sends to, comma-separated, empty for none) and was (before).
	EventRouteChanged = "route-changed"
	// EventAnnouncerChanged (source "lb"): the node announcing a Service's
	// address on layer 2 changed (kube-vip: the holder of the Service's
	// lease); fields vip, node (now; empty while nobody holds it), was
	// (before) and lease.
	EventAnnouncerChanged = "announcer-changed"
	// EventLoadStart and EventLoadStop bracket a load stream (source "load"): the
	// verdict judges delivery between them.
	EventLoadStart = "load-start"
	EventLoadStop  = "load-stop"
	// EventUnsent (source "load") records requests the load generator was due to
	// send and did not, because it was too far behind its schedule or its
	// in-flight cap was full. Fields: from and to (the first and last due
	// time, RFC 3339 with nanoseconds), requests, reason. The instrument
	// was blind for that span, so the verdict cannot pass it.
	EventUnsent = "unsent"
	// EventInstrumentPause (source "load") records a span in which the
	// process running the load generator did not run on time, and what the
	// process itself measured about it: fields from, to (RFC 3339 with
	// nanoseconds), late_ms, gc_cycles, gc_stw_ms (Go's stop-the-world
	// pauses), run_delay_ms and exec_ms (time its threads waited for a CPU
	// and ran, from the kernel's schedstat), steal_ms (the machine's steal
	// time per CPU, /proc/stat), machine_tasks_ms, machine_system_ms (of
	// it, the kernel's), machine_irq_ms,
	// machine_idle_ms and machine_steal_ms (what all the machine's CPUs did
	// meanwhile, summed over them, /proc/stat; absent where unreadable),
	// cause (gc, steal, cpu, irq, busy or unexplained). The verdict names it
	// next to the stalls it explains.
	EventInstrumentPause = "instrument-pause"
	// EventGoAway (source "load") records a GOAWAY frame the server of one
	// of an HTTP/2 load's connections sent (RFC 9113, section 6.8): fields
	// conn and remote (the connection's local and remote address),
	// last_stream_id (streams above it were not processed, and a client may
	// send them again elsewhere), error_code (its name, NO_ERROR for a
	// graceful shutdown) and debug (the server's debug data, at most 120
	// bytes). Evidence next to a failure window of whether a server said
	// goodbye before its connections went; never a cause of drops.
	EventGoAway = "goaway"
	// EventWSClose (source "load") records a WebSocket session the server
	// closed before its last message (RFC 6455, section 7.4): fields
	// request (the session's request id), code (1001 "going away" from a
	// draining server), reason, messages and want_messages. Evidence next
	// to a failure window that a server said goodbye; a session cut
	// without a close frame has none. Never a cause of drops.
	EventWSClose = "ws-close"
	// EventCriteria (source "harness") records criteria a scenario could only
	// settle after the header was written: the client address the load
	// balancer shows, the pods that exist, the pod it turned unready. Field
	// CriteriaField holds the complete criteria as JSON; the last such
	// event is what the verdict judges by (except windowGapMs, which only
	// the header sets), so the run file alone gives the verdict.
	EventCriteria = "criteria"
	// EventDisruption (source "harness") marks the moment a scenario's
	// disruption begins, written just before its first disruptive step (the
	// drain, the restart, the scale-down, the readiness flip). Everything
	// that failed before it failed while nothing was being disrupted: the
	// ground moved (the cluster, the LB or the machine), which the verdict
	// charges to the run (ERROR), never to the workload. The first such
	// event counts.
	EventDisruption = "disruption"
	// EventControl (source "harness") carries into a cell's run file the
	// outcome of its column's control: the same LB model, traffic policy
	// and keep-alive under the same load with nothing disrupted, measured
	// earlier in the same suite run. So the cell's verdict is re-derived
	// from its own run file, and the control's run file, named with its
	// SHA-256, backs the claim. Fields: ControlFields. A control that
	// dropped anything, or was not PASS, makes the cell ERROR: the ground
	// under its column moves.
	EventControl = "control"
	// EventAction is a free-form harness step ("scale deployment to 3").
	EventAction = "action"
	// EventNote is anything worth recording that is not a step.
	EventNote = "note"
)
