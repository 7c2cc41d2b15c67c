package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zerodrop/harness/contract"
)

func TestStockProfiles(t *testing.T) {
	ps, err := Stock()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"aws-elb", "aws-nlb", "azure-basic", "azure-lb", "gclb", "gcp-nlb", "generic", "gke-legacy", "metallb"}
	if got := strings.Join(ps.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("stock profiles = %s, want %s", got, strings.Join(want, ","))
	}
	for _, n := range want {
		p := ps[n]
		if len(p.Sources) == 0 {
			t.Errorf("%s: no sources documented", n)
		}
	}
	for n, p := range ps {
		if wantEmulated := n != "metallb" && n != "aws-elb"; p.Emulated() != wantEmulated {
			t.Errorf("%s: emulated by the cloud LB = %v, want %v", n, p.Emulated(), wantEmulated)
		}
		if p.FollowsServing() != (n == "metallb") {
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
	if !ps["gke-legacy"].Eligibility.ExcludeUnschedulable || ps["gcp-nlb"].Eligibility.ExcludeUnschedulable {
		t.Errorf("only gke-legacy drops cordoned nodes")
	}
	if ps["gclb"].Mode != ModeL7 || ps["gclb"].L7 == nil || !ps["gclb"].L7.KeepAlive {
		t.Errorf("gclb must be an L7 profile with keep-alive")
	}
}

func TestParseProfileErrors(t *testing.T) {
	base := `name: x
mode: l4
healthCheck: {target: kube-proxy, interval: 5s, timeout: 1s, healthyThreshold: 1, unhealthyThreshold: 2}
flows: {onUnhealthy: keep, onRemoved: drain, drainTimeout: 10s, closeAction: reset, idleTimeout: 1m}
noHealthyBackends: drop
`
	if _, err := Parse([]byte(base)); err != nil {
		t.Fatalf("base profile: %v", err)
	}
	cases := []struct {
		name, edit, want string
	}{
		{"unknown field", base + "colour: red\n", "unknown field"},
		{"bad mode", strings.Replace(base, "mode: l4", "mode: l3", 1), `mode "l3"`},
		{"timeout over interval", strings.Replace(base, "timeout: 1s", "timeout: 9s", 1), "timeout"},
		{"zero threshold", strings.Replace(base, "healthyThreshold: 1", "healthyThreshold: 0", 1), "thresholds"},
		{"bad duration", strings.Replace(base, "interval: 5s", "interval: five", 1), "five"},
		{"keep on removal", strings.Replace(base, "onRemoved: drain", "onRemoved: keep", 1), "onRemoved"},
		{"bad close", strings.Replace(base, "closeAction: reset", "closeAction: shrug", 1), "closeAction"},
		{"nodeport without path", strings.Replace(base, "target: kube-proxy", "target: nodeport", 1), "path"},
		{"l7 without section", strings.Replace(base, "mode: l4", "mode: l7", 1), "l7 section"},
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
