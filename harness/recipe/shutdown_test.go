package recipe

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestParseShutdownGrace(t *testing.T) {
	tests := []struct {
		in      string
		want    ShutdownGrace
		budget  time.Duration
		wantErr string
	}{
		{in: "30s/15s", want: ShutdownGrace{Period: 30 * time.Second, CriticalPods: 15 * time.Second}, budget: 15 * time.Second},
		{in: "2m", want: ShutdownGrace{Period: 2 * time.Minute}, budget: 2 * time.Minute},
		{in: "off", budget: 0},
		{in: "0", budget: 0},
		{in: "10s/20s", wantErr: "longer than shutdownGracePeriod"},
		{in: "-1s", wantErr: "must not be negative"},
		{in: "30s/x", wantErr: "shutdownGracePeriodCriticalPods"},
		{in: "", wantErr: "shutdownGracePeriod"},
	}
	for _, tt := range tests {
		g, err := ParseShutdownGrace(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want one with %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || g != tt.want || g.Budget() != tt.budget {
			t.Errorf("%q: %+v (budget %s), %v; want %+v (budget %s)", tt.in, g, g.Budget(), err, tt.want, tt.budget)
		}
	}
	if s := (ShutdownGrace{}).String(); s != "off" {
		t.Errorf("String of off = %q", s)
	}
}

// On a node's shutdown nothing marks the endpoint terminating: no preStop,
// readiness fails on the signal, and the app accepts while what follows
// the failed readiness moves: kube-proxy alone with Cluster, the LB's
// check of the node too with Local, the vendor's deregistration for Pod
// targets.
func TestShutsDown(t *testing.T) {
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	gcp := LB{Name: "gcp-nlb", RemovalLag: 24 * time.Second, AdditionLag: 8 * time.Second}
	ip := LB{Name: "aws-nlb-ip", RemovalLag: 30 * time.Second, PodTargets: true}
	tests := []struct {
		name   string
		lb     LB
		policy corev1.ServiceExternalTrafficPolicy
		delay  time.Duration
	}{
		{"Cluster: probe 3s + kube-proxy 5s", gcp, cluster, 8 * time.Second},
		{"Local: probe 3s + the LB's 24s + 5s", gcp, local, 32 * time.Second},
		{"Pod targets: probe 3s + deregistration 5s + 5s", ip, local, 13 * time.Second},
	}
	for _, tt := range tests {
		r := For(tt.lb, tt.policy, ShutsDown)
		if r.Mechanism != OwnReadiness || r.PreStop != 0 || !r.UnreadyOnTerm || r.ShutdownDelay != tt.delay ||
			r.Grace != tt.delay+Drain+GraceSlack || r.ReadinessPeriod != ServingProbePeriod {
			t.Errorf("%s: %+v, want own-readiness, no preStop, shutdown delay %s", tt.name, r, tt.delay)
		}
		if !strings.Contains(r.Why, "shutdownGracePeriod") {
			t.Errorf("%s: why %q does not name the budget it must fit", tt.name, r.Why)
		}
	}
}
