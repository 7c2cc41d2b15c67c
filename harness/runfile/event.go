package runfile

import "time"

// Event is something the harness, Kubernetes or the LB did or saw, on the same
// wall clock as the load results.
type Event struct {
	Time    time.Time         `json:"time"`
	Source  string            `json:"source"`           // "harness", "kubernetes", "lb", "load"
	Type    string            `json:"type"`             // see the constants below
	Object  string            `json:"object,omitempty"` // "node/kind-worker", "pod/ns/name", "service/ns/name"
	Message string            `json:"message,omitempty"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// CriteriaField is the field of a Criteria event that holds the criteria.
const CriteriaField = "criteria"

// Event sources.
const (
	SourceHarness    = "harness"
	SourceKubernetes = "kubernetes"
	SourceLB         = "lb"
	SourceLoad       = "load"
)

// Event types.
const (
	Cordon              = "cordon"
	Uncordon            = "uncordon"
	DrainStart          = "drain-start"
	DrainEnd            = "drain-end"
	PodTerminating      = "pod-terminating"
	PodDeleted          = "pod-deleted"
	PodReady            = "pod-ready"
	PodUnready          = "pod-unready"
	EndpointRemoved     = "endpoint-removed"
	EndpointAdded       = "endpoint-added"
	EndpointTerminating = "endpoint-terminating"
	NodeAdded           = "node-added"
	NodeRemoved         = "node-removed"
	RolloutStart        = "rollout-start"
	RolloutEnd          = "rollout-end"
	PoolAdded           = "pool-added"
	PoolRemoved         = "pool-removed"
	LBBackendAdded      = "lb-backend-added"
	LBBackendRemoved    = "lb-backend-removed"
	LBNodeHealthy       = "lb-node-healthy"
	LBNodeUnhealthy     = "lb-node-unhealthy"
	// LoadStart and LoadStop bracket a load stream (source "load"): the
	// verdict judges delivery between them.
	LoadStart = "load-start"
	LoadStop  = "load-stop"
	// Unsent (source "load") records requests the load generator was due to
	// send and did not, because it was too far behind its schedule or its
	// in-flight cap was full. Fields: from and to (the first and last due
	// time, RFC 3339 with nanoseconds), requests, reason. The instrument
	// was blind for that span, so the verdict cannot pass it.
	Unsent = "unsent"
	// Criteria (source "harness") records criteria a scenario could only
	// settle after the header was written: the client address the load
	// balancer shows, the pods that exist, the pod it turned unready. Field
	// CriteriaField holds the complete criteria as JSON; the last such
	// event is what the verdict judges by (except windowGapMs, which only
	// the header sets), so the run file alone gives the verdict.
	Criteria = "criteria"
	// Action is a free-form harness step ("scale deployment to 3").
	Action = "action"
	// Note is anything worth recording that is not a step.
	Note = "note"
)

// EventSink receives events. Everything that produces events takes one, never
// a concrete writer, so producers work without a run file (tests, logs).
// Implementations must be safe for concurrent use.
type EventSink interface {
	Event(Event) error
}

// EventFunc adapts a function to EventSink.
type EventFunc func(Event) error

// Event calls f(e).
func (f EventFunc) Event(e Event) error { return f(e) }

// Discard is an EventSink that drops every event.
var Discard EventSink = EventFunc(func(Event) error { return nil })
