package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
)

func TestStockProfiles(t *testing.T) {
	ps, err := Stock()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alibaba-slb", "aws-alb-ip", "aws-elb", "aws-nlb", "aws-nlb-ip", "azure-basic", "azure-lb", "gclb", "gclb-neg", "gcp-nlb", "generic", "gke-l4", "gke-legacy", "kube-vip-arp", "kube-vip-bgp", "metallb", "metallb-bgp"}
	if got := strings.Join(ps.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("stock profiles = %s, want %s", got, strings.Join(want, ","))
	}
	for _, n := range want {
		// The stock files say their format's version, as users' files
		// copied from them will.
		raw, err := FS.ReadFile(n + ".yaml")
		if err != nil || !strings.Contains(string(raw), "\napiVersion: "+APIVersion+"\n") {
			t.Errorf("%s.yaml does not name apiVersion %s (%v)", n, APIVersion, err)
		}
		p := ps[n]
		if len(p.Sources) == 0 {
			t.Errorf("%s: no sources documented", n)
		}
		cited := func(field string) bool {
			for k := range p.Sources {
				if k == field || strings.HasPrefix(k, field+".") || (field == "healthCheck" && k == "target") {
					return true
				}
			}
			return false
		}
		if !cited("healthCheck") {
			t.Errorf("%s: the health check cites no source", n)
		}
		if p.ClusterHealthCheck != nil && !cited("clusterHealthCheck") {
			t.Errorf("%s: clusterHealthCheck cites no source", n)
		}
	}
	for n, p := range ps {
		// The announcing LBs (MetalLB's two modes, kube-vip) follow the
		// serving condition; the cloud LB runs none of them.
		announce := n == "metallb" || n == "metallb-bgp" || n == "kube-vip-arp" || n == "kube-vip-bgp"
		if wantEmulated := !announce && n != "aws-elb" && n != "alibaba-slb"; p.Emulated() != wantEmulated {
			t.Errorf("%s: emulated by the cloud LB = %v, want %v", n, p.Emulated(), wantEmulated)
		}
		if p.FollowsServing() != announce {
			t.Errorf("%s: follows the serving condition = %v", n, p.FollowsServing())
		}
	}
	if m := ps["metallb"]; m.RemovalLag() != time.Second || m.AdditionLag() != time.Second {
		t.Errorf("metallb lags %v/%v, want 1s/1s (what the hardened fixture designs for)", m.RemovalLag(), m.AdditionLag())
	}
	for name, want := range map[string]string{"gke": "gcp-nlb", "EKS": "aws-nlb", "aks": "azure-lb", "kind": "metallb", "gke-legacy": "gke-legacy", "nope": ""} {
		p, ok := ps.Find(name)
		if p.Name != want || ok != (want != "") {
			t.Errorf("Find(%q) = %q, %v; want %q", name, p.Name, ok, want)
		}
	}
	// The numbers the scenarios lean on.
	if d := ps["generic"].HealthCheck.DetectionTime(); d != 30*time.Second {
		t.Errorf("generic detection time = %v, want 30s (10s x 3, the default of the doctor and the fixtures)", d)
	}
	if d := ps["gcp-nlb"].HealthCheck.DetectionTime(); d != 24*time.Second {
		t.Errorf("gcp-nlb detection time = %v, want 24s (8s x 3)", d)
	}
	for n, p := range ps {
		if p.Eligibility.ExcludeUnschedulable != (n == "gke-legacy") {
			t.Errorf("%s: drops cordoned nodes = %v; only gke-legacy (Kubernetes <= 1.18) does", n, p.Eligibility.ExcludeUnschedulable)
		}
		if (p.Historical != "") != (n == "gke-legacy" || n == "azure-basic") {
			t.Errorf("%s: historical = %q", n, p.Historical)
		}
	}
	if ps["gclb"].Mode != ModeL7 || ps["gclb"].L7 == nil || !ps["gclb"].L7.KeepAlive {
		t.Errorf("gclb must be an L7 profile with keep-alive")
	}
}

// TestVendorNumbers pins each vendor's health checks to the figures its
// profile cites (ingress-gce, cloud-provider-gcp/aws/azure): an edit that
// changes one must change this table, and say why in the profile's sources.
func TestVendorNumbers(t *testing.T) {
	ps, err := Stock()
	if err != nil {
		t.Fatal(err)
	}
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	cases := []struct {
		profile string
		policy  corev1.ServiceExternalTrafficPolicy
		target  HealthTarget
		every   time.Duration
		timeout time.Duration
		up      int
		down    int
	}{
		{"gke-l4", local, TargetKubeProxy, 3 * time.Second, time.Second, 1, 2},
		{"gke-l4", cluster, TargetKubeProxy, 8 * time.Second, time.Second, 1, 3},
		{"gcp-nlb", local, TargetKubeProxy, 8 * time.Second, time.Second, 1, 3},
		{"gcp-nlb", cluster, TargetKubeProxy, 8 * time.Second, time.Second, 1, 3},
		{"aws-nlb", local, TargetKubeProxy, 10 * time.Second, 10 * time.Second, 2, 2},
		{"aws-nlb", cluster, TargetTrafficPort, 30 * time.Second, 10 * time.Second, 3, 3},
		{"azure-lb", local, TargetKubeProxy, 5 * time.Second, 5 * time.Second, 2, 2},
		{"azure-lb", cluster, TargetTrafficPort, 5 * time.Second, 5 * time.Second, 2, 2},
		{"azure-basic", cluster, TargetTrafficPort, 5 * time.Second, 5 * time.Second, 2, 2},
		{"gclb", local, TargetNodePort, 60 * time.Second, 60 * time.Second, 1, 10},
		{"gclb-neg", local, TargetPod, 15 * time.Second, 15 * time.Second, 1, 2},
		{"aws-elb", local, TargetKubeProxy, 10 * time.Second, 5 * time.Second, 2, 6},
		{"alibaba-slb", local, TargetTrafficPort, 2 * time.Second, 5 * time.Second, 3, 3},
		{"alibaba-slb", cluster, TargetTrafficPort, 2 * time.Second, 5 * time.Second, 3, 3},
	}
	for _, c := range cases {
		h := ps[c.profile].HealthCheckFor(c.policy)
		if h.Target != c.target || h.Interval.D() != c.every || h.Timeout.D() != c.timeout || h.HealthyThreshold != c.up || h.UnhealthyThreshold != c.down {
			t.Errorf("%s %s: %+v, want %s %v/%v/%d/%d", c.profile, c.policy, h, c.target, c.every, c.timeout, c.up, c.down)
		}
	}
	// A failing check of alibaba-slb waits its 5 s timeout, longer than
	// its 2 s interval: 3 of them take up to 15 s; a passing one is quick.
	if p := ps["alibaba-slb"]; p.RemovalLag() != 15*time.Second || p.AdditionLag() != 6*time.Second {
		t.Errorf("alibaba-slb lags %v/%v; want 15s (3 x 5s timeout) and 6s (3 x 2s)", p.RemovalLag(), p.AdditionLag())
	}
	if p := ps["gke-l4"]; p.RemovalLag() != 6*time.Second || p.LongestRemovalLag() != 24*time.Second {
		t.Errorf("gke-l4 removal lag %v (Local), %v (longest); want 6s and 24s", p.RemovalLag(), p.LongestRemovalLag())
	}
	for name, want := range map[string]SessionAffinity{"gcp-nlb": AffinityClientIP, "gke-legacy": AffinityClientIP, "gke-l4": AffinityClientIP,
		"azure-lb": AffinityClientIP, "azure-basic": AffinityClientIP, "aws-nlb": AffinityRefused, "generic": AffinityClientIP} {
		if got := ps[name].SessionAffinity; got != want {
			t.Errorf("%s sessionAffinity %q, want %q", name, got, want)
		}
	}
	if f := ps["aws-nlb"].Flows; f.OnRemoved != FlowDrain || f.DrainTimeout.D() != 300*time.Second || f.AfterDrain != FlowKeep {
		t.Errorf("aws-nlb removal: %+v; want a 300s drain after which connections stay", f)
	}
	if f := ps["gke-l4"].Flows; f.OnRemoved != FlowDrain || f.DrainTimeout.D() != 30*time.Second {
		t.Errorf("gke-l4 removal: %+v; want 30s connection draining", f)
	}
	if !ps["gclb-neg"].PodBackends() || ps["gclb"].PodBackends() {
		t.Error("gclb-neg sends to Pods; gclb sends to nodes")
	}
	if a := ps["aws-alb-ip"]; !a.PodBackends() || a.Pods.Register != RegisterReady || a.Flows.DrainTimeout.D() != 300*time.Second ||
		a.HealthCheck.Interval.D() != 15*time.Second || a.HealthCheck.HealthyThreshold != 2 {
		t.Errorf("aws-alb-ip: %+v; want ready endpoints registered, checked every 15s, healthy after 2, 300s deregistration delay", a)
	}
	// IP targets behind the NLB: each Pod checked by a TCP connect (no
	// path), its connections kept after the deregistration delay.
	if n := ps["aws-nlb-ip"]; n.Mode != ModeL4 || !n.PodBackends() || n.HealthCheck.Path != "" || n.HealthCheck.Interval.D() != 10*time.Second ||
		n.HealthCheck.HealthyThreshold != 3 || n.Flows.AfterDrain != FlowKeep || n.ReadinessGate() == nil {
		t.Errorf("aws-nlb-ip: %+v; want l4 Pod targets, TCP checks every 10s, healthy after 3, connections kept after the drain, a gate", n)
	}
	if r := ps["gclb-neg"].Pods; r == nil || r.Register != RegisterNotTerminating {
		t.Errorf("gclb-neg registers %+v; want every endpoint not terminating (the NEG syncer's rule)", r)
	}
}

func TestParseProfileErrors(t *testing.T) {
	base := `name: x
mode: l4
healthCheck: {target: kube-proxy, interval: 5s, timeout: 1s, healthyThreshold: 1, unhealthyThreshold: 2}
flows: {onUnhealthy: keep, onRemoved: drain, drainTimeout: 10s, closeAction: reset, idleTimeout: 1m}
noHealthyBackends: drop
`
	// A file without a version is read as v1, the version the stock files
	// name.
	for _, in := range []string{base, "apiVersion: " + APIVersion + "\n" + base} {
		p, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("base profile: %v", err)
		}
		if p.APIVersion != APIVersion {
			t.Errorf("apiVersion = %q, want %q", p.APIVersion, APIVersion)
		}
	}
	cases := []struct {
		name, edit, want string
	}{
		{"unknown field", base + "colour: red\n", "unknown field"},
		{"a format this zerodrop does not read", "apiVersion: zerodrop.dev/lb-profile/v2\n" + base, "this zerodrop reads zerodrop.dev/lb-profile/v1"},
		{"bad mode", strings.Replace(base, "mode: l4", "mode: l3", 1), `mode "l3"`},
		{"timeout over interval", strings.Replace(base, "timeout: 1s", "timeout: 9s", 1), "timeout"},
		{"zero threshold", strings.Replace(base, "healthyThreshold: 1", "healthyThreshold: 0", 1), "thresholds"},
		{"bad duration", strings.Replace(base, "interval: 5s", "interval: five", 1), "five"},
		{"keep on removal", strings.Replace(base, "onRemoved: drain", "onRemoved: keep", 1), "onRemoved"},
		{"bad close", strings.Replace(base, "closeAction: reset", "closeAction: shrug", 1), "closeAction"},
		{"nodeport without path", strings.Replace(base, "target: kube-proxy", "target: nodeport", 1), "path"},
		{"l7 without section", strings.Replace(base, "mode: l4", "mode: l7", 1), "l7 section"},
		{"bad cluster check", base + "clusterHealthCheck: {target: pod, path: /, interval: 5s, timeout: 1s, healthyThreshold: 1, unhealthyThreshold: 2}\n", "clusterHealthCheck.target pod"},
		{"cluster check timing", base + "clusterHealthCheck: {target: traffic-port, interval: 5s, timeout: 9s, healthyThreshold: 1, unhealthyThreshold: 2}\n", "clusterHealthCheck.timeout"},
		{"keep after close", strings.Replace(strings.Replace(base, "onRemoved: drain", "onRemoved: close", 1), "drainTimeout: 10s", "drainTimeout: 10s, afterDrain: keep", 1), "afterDrain keep needs a drain"},
		{"pod check without a pods section", strings.Replace(strings.Replace(base, "mode: l4", "mode: l7", 1), "target: kube-proxy", "target: pod, path: /", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\n", "needs a pods section"},
		{"bad registration rule", strings.Replace(strings.Replace(base, "mode: l4", "mode: l7", 1), "target: kube-proxy", "target: pod, path: /", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\npods: {register: always}\n", "pods.register"},
		{"pods section on a node check", base + "pods: {register: ready}\n", "pods section needs"},
		{"label gate without its label", strings.Replace(strings.Replace(base, "mode: l4", "mode: l7", 1), "target: kube-proxy", "target: pod, path: /", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\n" + "pods: {register: ready, readinessGate: {conditionType: a.b/c, injected: namespaceLabel}}\n", "namespaceLabel"},
		{"label on an always gate", strings.Replace(strings.Replace(base, "mode: l4", "mode: l7", 1), "target: kube-proxy", "target: pod, path: /", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\n" + "pods: {register: ready, readinessGate: {conditionType: a.b/c, injected: always, namespaceLabel: a=b}}\n", "namespaceLabel"},
		{"label not key=value", strings.Replace(strings.Replace(base, "mode: l4", "mode: l7", 1), "target: kube-proxy", "target: pod, path: /", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\n" + "pods: {register: ready, readinessGate: {conditionType: a.b/c, injected: namespaceLabel, namespaceLabel: a}}\n", "key=value"},
		{"pods without pod check", strings.Replace(base, "mode: l4", "mode: l7", 1) + "l7: {backends: pods, keepAlive: true, idleConnTimeout: 1m, maxIdleConnsPerNode: 1}\n", "needs healthCheck.target pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// TestTimingOnly: a profile of an emulated mode that says timingOnly is
// not run by the cloud LB, so it needs no flows and may say a timeout
// longer than its interval (the vendor's); its detection counts each
// failure at the timeout.
func TestTimingOnly(t *testing.T) {
	const timing = `name: x
mode: l4
timingOnly: true
healthCheck: {target: traffic-port, interval: 2s, timeout: 5s, healthyThreshold: 3, unhealthyThreshold: 3}
`
	for _, c := range []struct {
		name, in string
		ok       bool
		emulated bool
		detect   time.Duration
	}{
		{"timing only, timeout over interval", timing, true, false, 15 * time.Second},
		{"timing only, timeout under interval", strings.Replace(timing, "timeout: 5s", "timeout: 1s", 1), true, false, 6 * time.Second},
		{"run by the cloud LB: flows needed", strings.Replace(timing, "timingOnly: true\n", "", 1), false, true, 0},
		{"run by the cloud LB: timeout over interval refused", strings.Replace(timing, "timingOnly: true\n", "", 1) +
			"flows: {onUnhealthy: keep, onRemoved: drain, drainTimeout: 10s, closeAction: reset, idleTimeout: 1m}\nnoHealthyBackends: drop\n", false, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.in))
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if err != nil {
				return
			}
			if p.Emulated() != c.emulated || p.RemovalLag() != c.detect {
				t.Errorf("emulated %v, detection %v; want %v, %v", p.Emulated(), p.RemovalLag(), c.emulated, c.detect)
			}
		})
	}
}

func TestLoadProfilesUserOverlay(t *testing.T) {
	dir := t.TempDir()
	mine := `name: mine
mode: l4
healthCheck: {target: kube-proxy, interval: 1s, timeout: 500ms, healthyThreshold: 1, unhealthyThreshold: 1}
flows: {onUnhealthy: close, onRemoved: close, drainTimeout: 0s, closeAction: drop, idleTimeout: 1m}
noHealthyBackends: drop
`
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ps["mine"]; !ok {
		t.Fatal("user profile not loaded")
	}
	if _, ok := ps["gcp-nlb"]; !ok {
		t.Fatal("stock profiles lost")
	}
	p, err := ps.Lookup(map[string]string{contract.LBProfileAnnotation: "mine"}, "generic")
	if err != nil || p.Name != "mine" {
		t.Fatalf("Lookup by annotation = %v, %v", p.Name, err)
	}
	p, err = ps.Lookup(nil, "generic")
	if err != nil || p.Name != "generic" {
		t.Fatalf("Lookup default = %v, %v", p.Name, err)
	}
	if _, err := ps.Lookup(map[string]string{contract.LBProfileAnnotation: "nope"}, "generic"); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Fatalf("unknown profile error = %v", err)
	}

	// A file whose name does not match is refused with a clear message.
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "must equal the file name") {
		t.Fatalf("mismatched name error = %v", err)
	}
}

// A gate injected by namespace label is there for the namespaces that carry
// the label the profile names, and only those; GKE's for every namespace.
func TestGateInjectedIn(t *testing.T) {
	alb, neg := MustStock("aws-alb-ip").ReadinessGate(), MustStock("gclb-neg").ReadinessGate()
	for _, c := range []struct {
		name     string
		g        *ReadinessGate
		labels   map[string]string
		injected bool
	}{
		{"aws, labelled", alb, map[string]string{"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"}, true},
		{"aws, other value", alb, map[string]string{"elbv2.k8s.aws/pod-readiness-gate-inject": "disabled"}, false},
		{"aws, no labels", alb, nil, false},
		{"gke, any namespace", neg, nil, true},
	} {
		if got := c.g.InjectedIn(c.labels); got != c.injected {
			t.Errorf("%s: InjectedIn = %v, want %v", c.name, got, c.injected)
		}
	}
}
