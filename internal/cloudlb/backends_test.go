package cloudlb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

func set(ns ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range ns {
		m[n] = true
	}
	return m
}

func describe(b *BackendSet) string {
	var parts []string
	for _, be := range b.Backends() {
		parts = append(parts, be.Node+"="+string(be.State))
	}
	return strings.Join(parts, " ")
}

func TestBackendSetFlowRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		at               time.Duration
		active, eligible []string
		want             string
		wantChanges      string
	}
	cases := []struct {
		name  string
		flows profiles.Flows
		steps []step
	}{
		{
			name:  "keep on unhealthy, close on removal (gcp-nlb)",
			flows: profiles.Flows{OnUnhealthy: profiles.FlowKeep, OnRemoved: profiles.FlowClose},
			steps: []step{
				{0, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "a:->active b:->active"},
				{1, []string{"a"}, []string{"a", "b"}, "a=active b=draining", "b:active->draining"},
				{600, []string{"a"}, []string{"a", "b"}, "a=active b=draining", ""},
				{601, []string{"a"}, []string{"a"}, "a=active", "b:draining->closed"},
			},
		},
		{
			name:  "drain on removal with timeout (aws-nlb deregistration delay)",
			flows: profiles.Flows{OnUnhealthy: profiles.FlowClose, OnRemoved: profiles.FlowDrain, DrainTimeout: profiles.Duration(300 * time.Second)},
			steps: []step{
				{0, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "a:->active b:->active"},
				{10, []string{"a"}, []string{"a"}, "a=active b=draining", "b:active->draining"},
				{309, []string{"a"}, []string{"a"}, "a=active b=draining", ""},
				{310, []string{"a"}, []string{"a"}, "a=active", "b:draining->closed"},
			},
		},
		{
			name: "drain on removal, flows kept after it (aws-nlb without connection termination)",
			flows: profiles.Flows{OnUnhealthy: profiles.FlowClose, OnRemoved: profiles.FlowDrain, DrainTimeout: profiles.Duration(300 * time.Second),
				AfterDrain: profiles.FlowKeep},
			steps: []step{
				{0, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "a:->active b:->active"},
				{10, []string{"a"}, []string{"a"}, "a=active b=draining", "b:active->draining"},
				{310, []string{"a"}, []string{"a"}, "a=active b=draining", ""},
				{5000, []string{"a"}, []string{"a"}, "a=active b=draining", ""},
				{5001, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "b:draining->active"},
				{5002, []string{"a"}, []string{"a"}, "a=active b=draining", "b:active->draining"},
				{5302, []string{"a"}, []string{"a"}, "a=active b=draining", ""},
			},
		},
		{
			name:  "unhealthy closes at once (aws-nlb RST)",
			flows: profiles.Flows{OnUnhealthy: profiles.FlowClose, OnRemoved: profiles.FlowDrain, DrainTimeout: profiles.Duration(300 * time.Second)},
			steps: []step{
				{0, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "a:->active b:->active"},
				{5, []string{"a"}, []string{"a", "b"}, "a=active", "b:active->closed"},
				{6, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "b:->active"},
			},
		},
		{
			name:  "draining node that comes back is active again",
			flows: profiles.Flows{OnUnhealthy: profiles.FlowDrain, OnRemoved: profiles.FlowDrain, DrainTimeout: profiles.Duration(30 * time.Second)},
			steps: []step{
				{0, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "a:->active b:->active"},
				{5, []string{"a"}, []string{"a", "b"}, "a=active b=draining", "b:active->draining"},
				{10, []string{"a", "b"}, []string{"a", "b"}, "a=active b=active", "b:draining->active"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBackendSet(c.flows)
			for i, s := range c.steps {
				ch := b.Update(t0.Add(s.at*time.Second), set(s.active...), set(s.eligible...), nil)
				var got []string
				for _, x := range ch {
					got = append(got, fmt.Sprintf("%s:%s->%s", x.Node, x.From, x.To))
				}
				if d := describe(b); d != s.want {
					t.Fatalf("step %d: state %q, want %q", i, d, s.want)
				}
				if g := strings.Join(got, " "); g != s.wantChanges {
					t.Fatalf("step %d: changes %q, want %q", i, g, s.wantChanges)
				}
			}
		})
	}
}

func TestBackendSetNextDeadline(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := NewBackendSet(profiles.Flows{OnUnhealthy: profiles.FlowDrain, OnRemoved: profiles.FlowDrain, DrainTimeout: profiles.Duration(30 * time.Second)})
	b.Update(t0, set("a", "b"), set("a", "b"), nil)
	if !b.NextDeadline().IsZero() {
		t.Fatal("no deadline expected while all active")
	}
	b.Update(t0.Add(5*time.Second), set("a"), set("a"), map[string]string{"b": "cordoned"})
	if got := b.NextDeadline(); !got.Equal(t0.Add(35 * time.Second)) {
		t.Fatalf("deadline = %v, want t0+35s", got)
	}
	if be := b.Backends()[1]; be.Reason != "cordoned" {
		t.Fatalf("reason = %q", be.Reason)
	}
}

// A target whose drain ended with its flows kept is forgotten once its Pod
// is gone, and only then: one still draining, or drained but present,
// stays.
func TestBackendSetForgetDrained(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := NewBackendSet(profiles.Flows{OnUnhealthy: profiles.FlowClose, OnRemoved: profiles.FlowDrain,
		DrainTimeout: profiles.Duration(300 * time.Second), AfterDrain: profiles.FlowKeep})
	b.Update(t0, set("a", "b", "c"), set("a", "b", "c"), nil)
	b.Update(t0.Add(time.Second), set("c"), set("c"), nil)      // a and b deregistered: draining
	b.Update(t0.Add(200*time.Second), set("c"), set("c"), nil)  // b's drain still running
	gone := func(n string) bool { return n != "c" && n != "b" } // a's Pod left; b's not yet
	if ch := b.ForgetDrained(gone); len(ch) != 0 {
		t.Fatalf("forgot %v while every drain still runs", ch)
	}
	b.Update(t0.Add(302*time.Second), set("c"), set("c"), nil) // drains over, flows kept
	if got := describe(b); got != "a=draining b=draining c=active" {
		t.Fatalf("after the drain period: %s", got)
	}
	ch := b.ForgetDrained(gone)
	if len(ch) != 1 || ch[0].Node != "a" || ch[0].To != "closed" {
		t.Fatalf("changes %v; want a closed", ch)
	}
	if got := describe(b); got != "b=draining c=active" {
		t.Fatalf("after forgetting: %s", got)
	}
}
