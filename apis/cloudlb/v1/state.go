// Package cloudlbv1 is version 1 of the admin API of zerodrop's cloud-style
// load balancer (GET /state on its admin port): what the LB does for each
// Service, node by node. The LB (zerodrop.dev/zerodrop/internal/cloudlb)
// serves it and the test tool's client (zerodrop.dev/zerodrop/harness/lb)
// reads it; both import it from here, at the bottom of the package graph,
// so neither depends on the other.
package cloudlbv1

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// NodeHealth is one node's health-check standing for a Service.
type NodeHealth struct {
	Healthy bool `json:"healthy"`
	// Expected is the verdict the cluster calls for: with Local, whether the
	// node holds a ready endpoint; with Cluster, healthy (kube-proxy serves
	// every node).
	Expected bool         `json:"expected"`
	URL      string       `json:"url"`
	Last     *CheckResult `json:"last,omitempty"`
}

// ServiceState is what the LB does for one Service (GET /state).
type ServiceState struct {
	Service       string                `json:"service"`
	Profile       string                `json:"profile,omitempty"`
	Policy        string                `json:"policy,omitempty"` // externalTrafficPolicy: Local or Cluster
	VIP           string                `json:"vip,omitempty"`
	Eligible      []string              `json:"eligible"`
	Excluded      map[string]string     `json:"excluded,omitempty"`
	Health        map[string]NodeHealth `json:"health"`
	Active        []string              `json:"active"`
	Draining      []Backend             `json:"draining,omitempty"`
	EndpointNodes []string              `json:"endpointNodes"` // nodes with a ready endpoint (for comparing with Active)
	// Pending are eligible nodes whose verdict is not in, differs from the
	// cluster's facts (NodeHealth.Expected: a check that ran before
	// kube-proxy knew the endpoint, a node short of its healthy threshold),
	// or is not acted on yet (healthy but not a backend).
	Pending []string `json:"pending,omitempty"`
	// FailingOpen: no eligible node is healthy and the profile spreads new
	// flows over all of them.
	FailingOpen bool `json:"failingOpen,omitempty"`
	// Forwarding: the data plane carries the VIP (after the programming delay).
	Forwarding bool   `json:"forwarding"`
	Error      string `json:"error,omitempty"`
}

// Settled reports whether the LB has done what it will do for s's current
// facts: its address is forwarded and every eligible node's health verdict
// matches the cluster and is acted on. A node that stays unexpectedly
// unhealthy (kube-proxy down) keeps it unsettled: that is a broken
// precondition, named by WaitSettled, not a state to measure from.
// Load started before then measures the LB's start-up (fail-open, first checks),
// not the scenario.
func (s ServiceState) Settled() bool {
	return s.VIP != "" && s.Forwarding && len(s.Pending) == 0 && s.Error == ""
}

// Quiet reports whether the LB has nothing left to do for s: settled, no
// draining backend whose connections it will close later (a drain that keeps
// them, Deadline zero, has no act left), and no node still a backend that is
// no longer eligible (a removal not programmed yet). A scenario's load need
// not wait out the LB's longest lag once it is.
func (s ServiceState) Quiet() bool {
	if !s.Settled() {
		return false
	}
	for _, b := range s.Draining {
		if !b.Deadline.IsZero() {
			return false
		}
	}
	for _, n := range s.Active {
		if !slices.Contains(s.Eligible, n) {
			return false
		}
	}
	return true
}

// Summary is one line on what the LB does for the Service: which nodes take
// new flows, which do not and why.
func (s ServiceState) Summary() string {
	parts := []string{fmt.Sprintf("%s profile %s: active [%s]", s.VIP, s.Profile, strings.Join(s.Active, " "))}
	var unhealthy []string
	for _, n := range s.Eligible {
		if h, ok := s.Health[n]; ok && !h.Healthy && !slices.Contains(s.Active, n) {
			unhealthy = append(unhealthy, n)
		}
	}
	if len(unhealthy) > 0 {
		parts = append(parts, "unhealthy ["+strings.Join(unhealthy, " ")+"]")
	}
	var excluded []string
	for n, why := range s.Excluded {
		excluded = append(excluded, n+" ("+why+")")
	}
	if len(excluded) > 0 {
		slices.Sort(excluded)
		parts = append(parts, "not eligible: "+strings.Join(excluded, ", "))
	}
	if len(s.Draining) > 0 {
		parts = append(parts, fmt.Sprintf("%d draining", len(s.Draining)))
	}
	if s.FailingOpen {
		parts = append(parts, "failing open")
	}
	return strings.Join(parts, "; ")
}

// CheckResult is the outcome of one health check.
type CheckResult struct {
	Time    time.Time     `json:"time"`
	URL     string        `json:"url"`
	OK      bool          `json:"ok"`
	Status  int           `json:"status,omitempty"` // HTTP status, 0 when no answer
	Error   string        `json:"error,omitempty"`
	Latency time.Duration `json:"latency"`
}

// String is the short form used in events: "GET http://... -> 503 in 1.2ms".
func (r CheckResult) String() string {
	verb, target := "GET", r.URL
	if a, ok := strings.CutPrefix(r.URL, "tcp://"); ok {
		verb, target = "connect", a
	}
	if r.Error != "" {
		return fmt.Sprintf("%s %s -> %s after %v", verb, target, r.Error, r.Latency.Round(time.Microsecond))
	}
	if verb == "connect" {
		return fmt.Sprintf("connect %s -> accepted in %v", target, r.Latency.Round(time.Microsecond))
	}
	return fmt.Sprintf("GET %s -> %d in %v", target, r.Status, r.Latency.Round(time.Microsecond))
}

// BackendState is where a node stands in one Service's backend set.
type BackendState string

const (
	// Active nodes receive new flows.
	Active BackendState = "active"
	// Draining nodes keep their established flows until a deadline (or forever
	// for profiles.FlowKeep) but receive no new ones.
	Draining BackendState = "draining"
	// Closed nodes receive nothing; packets of their flows meet the profile's closeAction.
	Closed BackendState = "closed"
)

// Backend is a node's standing in a Service's backend set.
type Backend struct {
	Node     string
	State    BackendState
	Since    time.Time
	Deadline time.Time // when a Draining backend closes; zero = never (profiles.FlowKeep)
	Reason   string    // why it is not Active
}
