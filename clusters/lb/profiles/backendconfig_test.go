package profiles

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func i64(v int64) *int64   { return &v }
func str(s string) *string { return &s }

func TestBackendConfigName(t *testing.T) {
	tests := []struct {
		ann  string
		port int32
		want string
		err  string
	}{
		{"", 80, "", ""},
		{`{"default": "web"}`, 80, "web", ""},
		{`{"ports": {"80": "web-80"}, "default": "web"}`, 80, "web-80", ""},
		{`{"ports": {"8080": "other"}, "default": "web"}`, 80, "web", ""},
		{`{"ports": {"8080": "other"}}`, 80, "", ""},
		{`web`, 80, "", "want {\"default\": NAME}"},
	}
	for _, tt := range tests {
		got, err := BackendConfigName(tt.ann, tt.port)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("BackendConfigName(%q, %d) = %q, %v; want %q, error %q", tt.ann, tt.port, got, err, tt.want, tt.err)
		}
	}
}

// A BackendConfig replaces the fields it sets, for both policies; a port
// points the check at that port of the node; what the cloud LB cannot run,
// or GCE would refuse, is an error and leaves the profile as it was.
func TestWithBackendConfig(t *testing.T) {
	ps, err := Stock()
	if err != nil {
		t.Fatal(err)
	}
	gclb := ps["gclb"]
	if !gclb.BackendConfig || ps["gke-l4"].BackendConfig {
		t.Fatal("gclb honours a BackendConfig, an L4 LB does not")
	}
	got, err := gclb.WithBackendConfig(BackendConfigHealthCheck{CheckIntervalSec: i64(5), TimeoutSec: i64(5), UnhealthyThreshold: i64(2),
		Port: i64(31234), RequestPath: str("/healthz"), Type: str("HTTP")})
	if err != nil {
		t.Fatal(err)
	}
	want := HealthCheck{Target: TargetFixedPort, Port: 31234, Path: "/healthz", Interval: Duration(5 * time.Second), Timeout: Duration(5 * time.Second),
		HealthyThreshold: gclb.HealthCheck.HealthyThreshold, UnhealthyThreshold: 2}
	for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster} {
		if h := got.HealthCheckFor(policy); h != want {
			t.Errorf("%s: check %+v, want %+v", policy, h, want)
		}
	}
	if got.RemovalLag() != 10*time.Second || gclb.RemovalLag() != 10*time.Minute {
		t.Errorf("lag %s (the profile's stays %s), want 10s", got.RemovalLag(), gclb.RemovalLag())
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the profile with its BackendConfig does not validate: %v", err)
	}
	onlyPath, err := gclb.WithBackendConfig(BackendConfigHealthCheck{RequestPath: str("/ready")})
	if err != nil || onlyPath.HealthCheck.Target != TargetNodePort || onlyPath.HealthCheck.Path != "/ready" || onlyPath.HealthCheck.Interval != gclb.HealthCheck.Interval {
		t.Errorf("a path alone: %+v, %v; want the NodePort asked on /ready at the profile's interval", onlyPath.HealthCheck, err)
	}
	for _, tt := range []struct {
		name string
		hc   BackendConfigHealthCheck
		err  string
	}{
		{"a TCP check", BackendConfigHealthCheck{Type: str("TCP")}, "HTTP checks only"},
		{"timeout above interval", BackendConfigHealthCheck{CheckIntervalSec: i64(5)}, "exceeds checkIntervalSec"},
		{"zero interval", BackendConfigHealthCheck{CheckIntervalSec: i64(0)}, "1 to 300 seconds"},
		{"threshold 11", BackendConfigHealthCheck{UnhealthyThreshold: i64(11)}, "1 to 10"},
		{"relative path", BackendConfigHealthCheck{RequestPath: str("healthz")}, "absolute path"},
		{"port 0", BackendConfigHealthCheck{Port: i64(0)}, "1 to 65535"},
	} {
		if _, err := gclb.WithBackendConfig(tt.hc); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.err)
		}
	}
	if _, err := ps["gke-l4"].WithBackendConfig(BackendConfigHealthCheck{CheckIntervalSec: i64(5)}); err == nil {
		t.Error("an L4 profile took a BackendConfig")
	}
}

// TestKubeProxyCheckRoundTrips: the BackendConfig a hardened workload
// writes for the kube-proxy check gives that check back through the cloud
// LB's reading of it, on the Service's port, with gke-l4's Local timing.
func TestKubeProxyCheckRoundTrips(t *testing.T) {
	h := KubeProxyCheck()
	l4 := MustStock("gke-l4").HealthCheck
	if h.Target != TargetFixedPort || h.Interval != l4.Interval || h.UnhealthyThreshold != l4.UnhealthyThreshold ||
		h.HealthyThreshold != l4.HealthyThreshold || h.Timeout != l4.Timeout || h.Path != "/healthz" {
		t.Fatalf("KubeProxyCheck() = %+v, want gke-l4's timing %+v on a fixed port at /healthz", h, l4)
	}
	got, err := MustStock("gclb").WithBackendConfig(h.BackendConfig(32123))
	if err != nil {
		t.Fatal(err)
	}
	want := h
	want.Port = 32123
	if got.HealthCheck != want || got.ClusterHealthCheck != nil {
		t.Fatalf("gclb with the BackendConfig checks %+v (cluster %v), want %+v for both policies", got.HealthCheck, got.ClusterHealthCheck, want)
	}
	if got.RemovalLag() != l4.DetectionTime() {
		t.Fatalf("removal lag %v, want gke-l4's %v", got.RemovalLag(), l4.DetectionTime())
	}
}

// The object a workload or a fix writes reads back as the check it was
// given, and setting the check again keeps the rest of the spec.
func TestBackendConfigObjectReadsBack(t *testing.T) {
	hc := KubeProxyCheck().BackendConfig(31000)
	u := BackendConfigObject("shop", "web", hc)
	if u.GetAPIVersion() != "cloud.google.com/v1" || u.GetKind() != "BackendConfig" || u.GetNamespace() != "shop" || u.GetName() != "web" {
		t.Fatalf("object %s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
	}
	got, found, err := DecodeBackendConfigHealthCheck(u.Object)
	if err != nil || !found || !reflect.DeepEqual(got, hc) {
		t.Fatalf("read back %+v (found %v, %v), want %+v", got, found, err, hc)
	}
	u.Object["spec"].(map[string]any)["timeoutSec"] = int64(40)
	other := KubeProxyCheck().BackendConfig(32000)
	SetBackendConfigHealthCheck(u, other)
	if got, _, _ := DecodeBackendConfigHealthCheck(u.Object); !reflect.DeepEqual(got, other) || u.Object["spec"].(map[string]any)["timeoutSec"] != int64(40) {
		t.Errorf("after setting the check again: %+v, spec %v", got, u.Object["spec"])
	}
}
