package suites

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"

	corev1 "k8s.io/api/core/v1"
)

func TestSettingsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, s Settings)
	}{
		{name: "defaults", check: func(t *testing.T, s Settings) {
			if s.Provider != "kind" || s.LB != "all" || s.Rate != 50 || s.Shard != (Shard{}) || len(s.LBProfiles) != 0 || s.OutDir != "/repo/out/e2e" || s.Kubeconfig != "/repo/out/kubeconfig" || s.KeepCluster || !s.Realtime ||
				s.AssertionRate != 25 || s.Witnesses != loadPerCPU*runtime.NumCPU()/50 || s.MachineWitnesses != s.Witnesses/2 || s.Remeasure != 1 || !s.KubeVIP || !s.KubeVIPBGP {
				t.Errorf("defaults: %+v", s)
			}
		}},
		// The load budget, not a count, bounds the witnesses: a higher rate
		// means fewer of them per disruption.
		{name: "rate sets the witness budget", env: map[string]string{"ZERODROP_RATE": "200"}, check: func(t *testing.T, s Settings) {
			if s.Rate != 200 || s.Witnesses != loadPerCPU*runtime.NumCPU()/200 {
				t.Errorf("rate %d, witnesses %d", s.Rate, s.Witnesses)
			}
		}},
		// Assertions stream at half the documentation rate unless told.
		{name: "rate halves for assertions", env: map[string]string{"ZERODROP_RATE": "200"}, check: func(t *testing.T, s Settings) {
			if s.RateFor(zdv1.RoleAssertion) != 100 || s.RateFor(zdv1.RoleDocumentation) != 200 {
				t.Errorf("assertion %d/s, documentation %d/s", s.RateFor(zdv1.RoleAssertion), s.RateFor(zdv1.RoleDocumentation))
			}
		}},
		{name: "assertion rate", env: map[string]string{"ZERODROP_ASSERTION_RATE": "50"}, check: func(t *testing.T, s Settings) {
			if s.RateFor(zdv1.RoleAssertion) != 50 || s.RateFor(zdv1.RoleDocumentation) != 50 {
				t.Errorf("assertion %d/s, documentation %d/s", s.RateFor(zdv1.RoleAssertion), s.RateFor(zdv1.RoleDocumentation))
			}
		}},
		{name: "a rate of one", env: map[string]string{"ZERODROP_RATE": "1"}, check: func(t *testing.T, s Settings) {
			if s.AssertionRate != 1 {
				t.Errorf("assertion rate %d, want 1", s.AssertionRate)
			}
		}},
		{name: "bad assertion rate", env: map[string]string{"ZERODROP_ASSERTION_RATE": "0"}, wantErr: "ZERODROP_ASSERTION_RATE"},
		{name: "existing takes KUBECONFIG", env: map[string]string{"PROVIDER": "existing", "KUBECONFIG": "/k"}, check: func(t *testing.T, s Settings) {
			if s.Kubeconfig != "/k" {
				t.Errorf("kubeconfig %q", s.Kubeconfig)
			}
		}},
		{name: "overrides", env: map[string]string{"LB": "cloud", "ZERODROP_RATE": "500", "KEEP_CLUSTER": "1", "ZERODROP_READY_TIMEOUT": "90s"}, check: func(t *testing.T, s Settings) {
			if s.LB != "cloud" || s.Rate != 500 || !s.KeepCluster || s.ReadyTimeout != 90*time.Second {
				t.Errorf("overrides: %+v", s)
			}
		}},
		{name: "kube-vip's ARP mode alone", env: map[string]string{"ZERODROP_KUBE_VIP_BGP": "0"}, check: func(t *testing.T, s Settings) {
			if !s.KubeVIP || s.KubeVIPBGP || !s.BGP {
				t.Errorf("kube-vip %t, its BGP mode %t, BGP %t; want true, false, true", s.KubeVIP, s.KubeVIPBGP, s.BGP)
			}
		}},
		{name: "witness budget", env: map[string]string{"ZERODROP_WITNESSES": "12"}, check: func(t *testing.T, s Settings) {
			if s.Witnesses != 12 || s.MachineWitnesses != 12 {
				t.Errorf("witnesses %d, %d where machines change, want 12 for both", s.Witnesses, s.MachineWitnesses)
			}
		}},
		{name: "kube-proxy gates and pause traces", env: map[string]string{"KUBE_PROXY_FEATURE_GATES": "ProxyTerminatingEndpoints=false", "ZERODROP_PAUSE_TRACE": "3"}, check: func(t *testing.T, s Settings) {
			if s.KubeProxyGates.String() != "ProxyTerminatingEndpoints=false" || s.PauseTraces != 3 {
				t.Errorf("gates %q, pause traces %d", s.KubeProxyGates, s.PauseTraces)
			}
		}},
		{name: "bad kube-proxy gates", env: map[string]string{"KUBE_PROXY_FEATURE_GATES": "ProxyTerminatingEndpoints"}, wantErr: "KUBE_PROXY_FEATURE_GATES"},
		{name: "a connection per request", env: map[string]string{"ZERODROP_KEEPALIVE": "off"}, check: func(t *testing.T, s Settings) {
			if !s.NoKeepAlive {
				t.Error("ZERODROP_KEEPALIVE=off left keep-alive on")
			}
		}},
		{name: "bad keep-alive", env: map[string]string{"ZERODROP_KEEPALIVE": "no"}, wantErr: "ZERODROP_KEEPALIVE"},
		{name: "the default scheduler", env: map[string]string{"ZERODROP_REALTIME": "off"}, check: func(t *testing.T, s Settings) {
			if s.Realtime {
				t.Error("ZERODROP_REALTIME=off left the real-time class on")
			}
		}},
		{name: "bad real-time", env: map[string]string{"ZERODROP_REALTIME": "yes"}, wantErr: "ZERODROP_REALTIME"},
		{name: "bad pause traces", env: map[string]string{"ZERODROP_PAUSE_TRACE": "-1"}, wantErr: "ZERODROP_PAUSE_TRACE"},
		{name: "bad witness budget", env: map[string]string{"ZERODROP_WITNESSES": "0"}, wantErr: "ZERODROP_WITNESSES"},
		{name: "never measure again", env: map[string]string{"ZERODROP_REMEASURE": "0"}, check: func(t *testing.T, s Settings) {
			if s.Remeasure != 0 {
				t.Errorf("remeasure %d, want 0", s.Remeasure)
			}
		}},
		{name: "bad remeasure", env: map[string]string{"ZERODROP_REMEASURE": "many"}, wantErr: "ZERODROP_REMEASURE"},
		{name: "one LB model alone gets the same rate", env: map[string]string{"LB": "metallb"}, check: func(t *testing.T, s Settings) {
			if s.Rate != 50 {
				t.Errorf("rate %d, want 50", s.Rate)
			}
		}},
		{name: "profiles and shard", env: map[string]string{"LB_PROFILE": "gcp-nlb, aws-nlb", "SHARD": "2/4"}, check: func(t *testing.T, s Settings) {
			if strings.Join(s.LBProfiles, ",") != "gcp-nlb,aws-nlb" || s.Shard != (Shard{2, 4}) {
				t.Errorf("profiles %q shard %+v", s.LBProfiles, s.Shard)
			}
		}},
		{name: "profiles without the cloud LB", env: map[string]string{"LB": "metallb", "LB_PROFILE": "gcp-nlb"}, wantErr: "LB=metallb runs none"},
		{name: "bad shard", env: map[string]string{"SHARD": "5/4"}, wantErr: "SHARD"},
		{name: "shard with junk", env: map[string]string{"SHARD": "1/4x"}, wantErr: "SHARD"},
		{name: "unknown provider", env: map[string]string{"PROVIDER": "gke"}, wantErr: `PROVIDER="gke"`},
		{name: "unknown lb", env: map[string]string{"LB": "f5"}, wantErr: `LB="f5"`},
		{name: "bad rate", env: map[string]string{"ZERODROP_RATE": "fast"}, wantErr: "ZERODROP_RATE"},
		{name: "bad keep", env: map[string]string{"KEEP_CLUSTER": "yes please"}, wantErr: "KEEP_CLUSTER"},
		{name: "all problems at once", env: map[string]string{"PROVIDER": "x", "LB": "y"}, wantErr: `LB="y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SettingsFromEnv(func(k string) string { return tt.env[k] }, "/repo")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestModelList(t *testing.T) {
	for in, want := range map[string]string{"": "", " , ": "", "gcp-nlb": "gcp-nlb", " metallb ,gke-l4,, aws-nlb ": "metallb|gke-l4|aws-nlb"} {
		if got := strings.Join(ModelList(in), "|"); got != want {
			t.Errorf("ModelList(%q) = %q, want %q", in, got, want)
		}
	}
}

// A replacement pool carries what the old pool's nodes carry for their
// pool, not what Kubernetes or kind sets on every node.
func TestShapeOf(t *testing.T) {
	n := &corev1.Node{}
	n.Labels = map[string]string{
		"kubernetes.io/hostname": "w1", "node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": "a",
		contract.PoolLabel: "pool-a", "team": "web", "example.com/tier": "edge", contract.KubeVIPBGPParkedLabel: "true",
	}
	n.Spec.Taints = []corev1.Taint{
		{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
	}
	sh := shapeOf(n)
	if len(sh.Labels) != 2 || sh.Labels["team"] != "web" || sh.Labels["example.com/tier"] != "edge" {
		t.Errorf("labels %v, want team and example.com/tier only", sh.Labels)
	}
	if len(sh.Taints) != 1 || sh.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v, want dedicated only", sh.Taints)
	}
}
