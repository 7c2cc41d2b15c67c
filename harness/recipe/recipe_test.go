package recipe

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

func TestHardened(t *testing.T) {
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	gclb := LB{Name: "gclb", RemovalLag: 600 * time.Second, AdditionLag: 60 * time.Second, ChecksThroughNodePort: true}
	gclbBC := gclb
	gclbBC.BackendConfig = true
	kubeProxy := profiles.KubeProxyCheck()
	gke := LB{Name: "gke-l4", RemovalLag: 6 * time.Second, AdditionLag: 3 * time.Second}
	metallb := LB{Name: "metallb", RemovalLag: time.Second, AdditionLag: time.Second, FollowsServing: true}
	fractional := LB{Name: "x", RemovalLag: 2500 * time.Millisecond, AdditionLag: 1500 * time.Millisecond}
	tests := []struct {
		name   string
		lb     LB
		policy corev1.ServiceExternalTrafficPolicy
		fate   Fate
		want   Recipe
	}{
		// The case that cost the matrix most: Cluster needs kube-proxy's
		// margin only, whatever the LB's lag.
		{"gclb Cluster", gclb, cluster, Replaced, Recipe{Mechanism: EndpointRemoval, PreStop: 5 * time.Second, Drain: Drain,
			Grace: 20 * time.Second, ReadinessPeriod: 10 * time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		{"gclb, the API default policy is Cluster", gclb, "", Leaves, Recipe{Mechanism: EndpointRemoval, PreStop: 5 * time.Second, Drain: Drain,
			Grace: 20 * time.Second, ReadinessPeriod: 10 * time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		// gclb's default check reaches the terminating endpoint: a long
		// preStop keeps the node until a rollout brings a Pod back to it,
		// and buys nothing when the node loses the workload for good.
		{"gclb Local, rollout", gclb, local, Replaced, Recipe{Mechanism: TrafficCheck, PreStop: 605 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 628 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 60 * time.Second}},
		{"gclb Local, node leaves", gclb, local, Leaves, Recipe{Mechanism: TrafficCheck, PreStop: 5 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 28 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 60 * time.Second}},
		// Where the Service may choose the check (a BackendConfig), the
		// recipe asks for kube-proxy's on gke-l4's timing (3s x 2 = 6s,
		// addition 3s) and is gke-l4's, whatever becomes of the node.
		{"gclb with BackendConfig Local, rollout", gclbBC, local, Replaced, Recipe{Mechanism: HealthCheck, PreStop: 11 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 34 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second, LBCheck: &kubeProxy}},
		{"gclb with BackendConfig Local, node leaves", gclbBC, local, Leaves, Recipe{Mechanism: HealthCheck, PreStop: 11 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 34 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second, LBCheck: &kubeProxy}},
		{"gclb with BackendConfig Cluster", gclbBC, cluster, Leaves, Recipe{Mechanism: EndpointRemoval, PreStop: 5 * time.Second, Drain: Drain,
			Grace: 20 * time.Second, ReadinessPeriod: 10 * time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		// A check of the healthCheckNodePort fails as the Pod starts
		// terminating: the same recipe whatever becomes of the node.
		{"gke-l4 Local, node leaves", gke, local, Leaves, Recipe{Mechanism: HealthCheck, PreStop: 11 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 34 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		{"metallb Local", metallb, local, Leaves, Recipe{Mechanism: ServingCondition, PreStop: 6 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 9 * time.Second, Drain: Drain, Grace: 30 * time.Second, ReadinessPeriod: time.Second,
			ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		{"metallb Cluster", metallb, cluster, Replaced, Recipe{Mechanism: EndpointRemoval, PreStop: 5 * time.Second, Drain: Drain,
			Grace: 20 * time.Second, ReadinessPeriod: 10 * time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
		{"fractional lags round up", fractional, local, Replaced, Recipe{Mechanism: HealthCheck, PreStop: 8 * time.Second, UnreadyOnTerm: true,
			ShutdownDelay: 8 * time.Second, Drain: Drain,
			Grace: 31 * time.Second, ReadinessPeriod: time.Second, ReadinessFailureThreshold: 3, MinReady: 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := For(tc.lb, tc.policy, tc.fate)
			if tc.fate == Replaced && !reflect.DeepEqual(got, Hardened(tc.lb, tc.policy)) {
				t.Error("Hardened is not For with Replaced")
			}
			if got.Why == "" {
				t.Error("no Why")
			}
			got.Why = ""
			if (got.LBCheck == nil) != (tc.want.LBCheck == nil) || got.LBCheck != nil && *got.LBCheck != *tc.want.LBCheck {
				t.Errorf("LBCheck %v, want %v", got.LBCheck, tc.want.LBCheck)
			}
			got.LBCheck, tc.want.LBCheck = nil, nil
			if got != tc.want {
				t.Errorf("Hardened = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

// TestEveryStockProfile: every recipe lets the app accept for at least what
// its mechanism needs (with Local the lag of the LB's check as the recipe's
// Service asks for it, except where the LB sees the node's last endpoint
// only at its exit and the node never gets the workload back), asks for a
// check of its own only where the LB lets a Local Service choose one, and
// keeps the kubelet's kill after the drain.
func TestEveryStockProfile(t *testing.T) {
	stock, err := profiles.Stock()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stock.Names() {
		lb := FromProfile(stock[name])
		for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
			for _, fate := range []Fate{Replaced, Leaves} {
				r := For(lb, policy, fate)
				// The LB as the recipe's Service meets it: with the check
				// it asks for, if any.
				eff := FromProfile(r.LB(stock[name], 30000))
				need := KubeProxyMargin
				if policy == corev1.ServiceExternalTrafficPolicyLocal && !eff.PodTargets && (fate == Replaced || !eff.ChecksThroughNodePort) {
					need += eff.RemovalLag
				}
				if eff.PodTargets {
					// The LB sends to the Pod itself: its deregistration, not
					// the traffic policy, ends new requests, and a new Pod
					// takes traffic only once the LB's check passed.
					need = DeregistrationMargin
					if (r.MinReady < eff.AdditionLag && r.ReadinessGate == "") || r.UnreadyOnTerm {
						t.Errorf("%s %s %s: Pod targets with minReady %v (addition lag %v), unready on its signal %t", name, policy, fate, r.MinReady, eff.AdditionLag, r.UnreadyOnTerm)
					}
				}
				if r.LBCheck != nil && (policy != corev1.ServiceExternalTrafficPolicyLocal || !lb.BackendConfig) {
					t.Errorf("%s %s %s: asks the LB for check %+v", name, policy, fate, *r.LBCheck)
				}
				if r.Accepting() < need {
					t.Errorf("%s %s %s: accepts for %v, needs %v", name, policy, fate, r.Accepting(), need)
				}
				// With Local a node may be left with terminating endpoints
				// only, which kube-proxy keeps sending to while they serve:
				// the app must go unready and keep accepting until kube-proxy
				// has seen it.
				unreadySeen := r.ReadinessPeriod*time.Duration(r.ReadinessFailureThreshold) + KubeProxyMargin
				if policy == corev1.ServiceExternalTrafficPolicyLocal && !eff.PodTargets && (!r.UnreadyOnTerm || r.ShutdownDelay < unreadySeen) {
					t.Errorf("%s %s %s: unready on its signal %t, accepting %v after it; want unready and %v",
						name, policy, fate, r.UnreadyOnTerm, r.ShutdownDelay, unreadySeen)
				}
			}
			r := Hardened(lb, policy)
			if r.Grace < r.Accepting()+r.Drain+GraceSlack {
				t.Errorf("%s %s: grace %v < accepting %v + drain %v + slack", name, policy, r.Grace, r.Accepting(), r.Drain)
			}
			if r.PreStop%time.Second != 0 || r.Grace%time.Second != 0 || r.MinReady%time.Second != 0 || r.MinReady < MinReadyFloor {
				t.Errorf("%s %s: %+v: want whole seconds and minReady >= %v", name, policy, r, MinReadyFloor)
			}
		}
	}
}
