package cloudlb

import (
	"sort"
	"time"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// BackendChange is one state change of a backend, for events.
type BackendChange struct {
	Node     string
	From, To cloudlbv1.BackendState
	Reason   string
}

// BackendSet tracks one Service's backends over time: which nodes take new
// flows, which keep their old flows for a while, which are closed. It is pure:
// the caller passes the time and the facts (eligible nodes, health verdicts).
type BackendSet struct {
	flows    profiles.Flows
	backends map[string]*cloudlbv1.Backend
	// drained holds the nodes whose drain period ended under AfterDrain
	// keep: their flows stay for good and no new drain starts.
	drained map[string]bool
}

// NewBackendSet returns an empty set governed by the profile's flow rules.
func NewBackendSet(f profiles.Flows) *BackendSet {
	return &BackendSet{flows: f, backends: map[string]*cloudlbv1.Backend{}, drained: map[string]bool{}}
}

// SetFlows changes the flow rules (the Service switched profiles).
func (b *BackendSet) SetFlows(f profiles.Flows) { b.flows = f }

// Update moves every backend to the state the facts call for at now and returns
// the changes. active is the set of nodes that should take new flows (eligible
// and healthy, or every eligible node when failing open); eligible is every
// eligible node (a node that is eligible but not active is unhealthy).
func (b *BackendSet) Update(now time.Time, active, eligible map[string]bool, reasons map[string]string) []BackendChange {
	var changes []BackendChange
	set := func(be *cloudlbv1.Backend, to cloudlbv1.BackendState, deadline time.Time, reason string) {
		if be.State == to && be.Deadline.Equal(deadline) {
			return
		}
		if be.State != to {
			changes = append(changes, BackendChange{Node: be.Node, From: be.State, To: to, Reason: reason})
			be.Since = now
		}
		be.State, be.Deadline, be.Reason = to, deadline, reason
	}
	for n := range active {
		be, ok := b.backends[n]
		if !ok {
			be = &cloudlbv1.Backend{Node: n, State: "", Since: now}
			b.backends[n] = be
		}
		set(be, cloudlbv1.Active, time.Time{}, "")
		delete(b.drained, n)
	}
	for n, be := range b.backends {
		if active[n] {
			continue
		}
		reason := reasons[n]
		action := b.flows.OnRemoved
		if eligible[n] {
			action = b.flows.OnUnhealthy
			if reason == "" {
				reason = "failed health check"
			}
		} else if reason == "" {
			reason = "not eligible"
		}
		switch be.State {
		case cloudlbv1.Active:
			switch action {
			case profiles.FlowKeep:
				set(be, cloudlbv1.Draining, time.Time{}, reason)
			case profiles.FlowDrain:
				set(be, cloudlbv1.Draining, now.Add(b.flows.DrainTimeout.D()), reason)
			default:
				set(be, cloudlbv1.Closed, time.Time{}, reason)
			}
		case cloudlbv1.Draining:
			// A keep-forever drain of an unhealthy node becomes a timed drain or a
			// close when the node also leaves the eligible set.
			if be.Deadline.IsZero() && !eligible[n] && !b.drained[n] {
				if action == profiles.FlowDrain {
					set(be, cloudlbv1.Draining, now.Add(b.flows.DrainTimeout.D()), reason)
				} else {
					set(be, cloudlbv1.Closed, time.Time{}, reason)
				}
			}
			if !be.Deadline.IsZero() && !now.Before(be.Deadline) {
				if b.flows.AfterDrain == profiles.FlowKeep {
					// No connection termination: the drain's end closes nothing.
					set(be, cloudlbv1.Draining, time.Time{}, reason+"; drain period over, established flows kept (no connection termination)")
					b.drained[n] = true
				} else {
					set(be, cloudlbv1.Closed, time.Time{}, reason+"; drain period over")
				}
			}
		}
		// Closed backends are forgotten: their flows meet the closeAction either way.
		if be.State == cloudlbv1.Closed || be.State == "" {
			delete(b.backends, n)
			delete(b.drained, n)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Node < changes[j].Node })
	return changes
}

// ForgetDrained closes the backends whose drain period ended with their
// flows kept (AfterDrain keep) and that gone reports gone, and returns the
// changes. A Pod target whose Pod has left the EndpointSlices has exited,
// so no flow of it is left to keep, and a Service's Pods come and go by
// the hundred over rollouts: without this the set would keep every one.
func (b *BackendSet) ForgetDrained(gone func(string) bool) []BackendChange {
	var changes []BackendChange
	for n, be := range b.backends {
		if !b.drained[n] || be.State != cloudlbv1.Draining || !gone(n) {
			continue
		}
		changes = append(changes, BackendChange{Node: n, From: be.State, To: cloudlbv1.Closed, Reason: be.Reason + "; its Pod is gone"})
		delete(b.backends, n)
		delete(b.drained, n)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Node < changes[j].Node })
	return changes
}

// NextDeadline is the earliest drain deadline after which Update must run again
// (zero when none).
func (b *BackendSet) NextDeadline() time.Time {
	var next time.Time
	for _, be := range b.backends {
		if be.State == cloudlbv1.Draining && !be.Deadline.IsZero() && (next.IsZero() || be.Deadline.Before(next)) {
			next = be.Deadline
		}
	}
	return next
}

// Nodes returns the nodes in state s, sorted.
func (b *BackendSet) Nodes(s cloudlbv1.BackendState) []string {
	var out []string
	for n, be := range b.backends {
		if be.State == s {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Backends returns a copy of every tracked backend, sorted by node.
func (b *BackendSet) Backends() []cloudlbv1.Backend {
	out := make([]cloudlbv1.Backend, 0, len(b.backends))
	for _, be := range b.backends {
		out = append(out, *be)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
