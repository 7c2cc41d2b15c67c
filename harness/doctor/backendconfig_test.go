package doctor

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
)

// bcDoc is a BackendConfig in the test manifests' namespace.
func bcDoc(name, healthCheck string) string {
	return "apiVersion: cloud.google.com/v1\nkind: BackendConfig\nmetadata:\n  name: " + name +
		"\n  namespace: shop\nspec:\n  healthCheck:\n" + healthCheck
}

// A gclb Service with Local is judged by the check its BackendConfig
// sets, when the input holds it and its port is the Service's pinned
// healthCheckNodePort; otherwise by gclb's default check, with a ZD091
// saying why, and ZD007 asks for the BackendConfig.
func TestBackendConfigSetsTheCheck(t *testing.T) {
	gclb := "zerodrop.dev/lb-profile: gclb"
	named := gclb + "\ncloud.google.com/backend-config: '{\"default\": \"hc\"}'"
	kubeProxy := "    port: 31000\n    requestPath: /healthz\n    checkIntervalSec: 3\n    timeoutSec: 1\n    healthyThreshold: 1\n    unhealthyThreshold: 2"
	tests := []struct {
		name    string
		x       m
		lag     string // the summary's LB lag
		zd007   bool
		problem string // part of a ZD091 message, "" for none
	}{
		{name: "no BackendConfig", x: m{SvcAnnotations: gclb}, lag: "1m0s x 10 = 10m0s", zd007: true},
		{name: "kube-proxy's port, pinned", x: m{SvcAnnotations: named, SvcSpec: "healthCheckNodePort: 31000", Extra: bcDoc("hc", kubeProxy)},
			lag: "3s x 2 = 6s"},
		{name: "named per port", x: m{SvcAnnotations: gclb + "\ncloud.google.com/backend-config: '{\"ports\": {\"80\": \"hc\"}}'",
			SvcSpec: "healthCheckNodePort: 31000", Extra: bcDoc("hc", kubeProxy)}, lag: "3s x 2 = 6s"},
		{name: "not in the input", x: m{SvcAnnotations: named}, lag: "1m0s x 10 = 10m0s", zd007: true, problem: "not in the input"},
		{name: "port not pinned", x: m{SvcAnnotations: named, Extra: bcDoc("hc", kubeProxy)}, lag: "1m0s x 10 = 10m0s", zd007: true,
			problem: "not pinned"},
		{name: "another port", x: m{SvcAnnotations: named, SvcSpec: "healthCheckNodePort: 32000", Extra: bcDoc("hc", kubeProxy)},
			lag: "1m0s x 10 = 10m0s", zd007: true, problem: "asks node port 31000"},
		{name: "timing only: still through the NodePort", x: m{SvcAnnotations: named, Extra: bcDoc("hc", "    checkIntervalSec: 5\n    timeoutSec: 5\n    unhealthyThreshold: 2")},
			lag: "5s x 2 = 10s", zd007: true},
		{name: "a timeout over the interval", x: m{SvcAnnotations: named, Extra: bcDoc("hc", "    checkIntervalSec: 5")},
			lag: "1m0s x 10 = 10m0s", zd007: true, problem: "exceeds checkIntervalSec"},
		{name: "a misspelt field", x: m{SvcAnnotations: named, Extra: bcDoc("hc", "    checkIntervalSecs: 5")}, lag: "1m0s x 10 = 10m0s",
			zd007: true, problem: "unknown field"},
		{name: "Cluster", x: m{SvcAnnotations: gclb, Policy: "Cluster"}, lag: "1m0s x 10 = 10m0s"},
		{name: "an LB that reads no BackendConfig", x: m{SvcAnnotations: "zerodrop.dev/lb-profile: gke-l4\ncloud.google.com/backend-config: '{\"default\": \"hc\"}'"},
			lag: "3s x 2 = 6s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := checkYAML(t, tc.x.yaml(t))
			if len(r.Services) != 1 || r.Services[0].LBLag != tc.lag {
				t.Errorf("services %+v, want the LB lag %q", r.Services, tc.lag)
			}
			got := bySeverity(r)
			if (got["ZD007"] == Error) != tc.zd007 {
				t.Errorf("ZD007 %v, want an error %v; %s", got["ZD007"], tc.zd007, summary(r))
			}
			var problems []string
			for _, f := range r.Findings {
				if f.RuleID == "ZD091" {
					problems = append(problems, f.Message)
				}
			}
			if (tc.problem == "") != (len(problems) == 0) || tc.problem != "" && !strings.Contains(strings.Join(problems, "\n"), tc.problem) {
				t.Errorf("ZD091 %q, want one saying %q", problems, tc.problem)
			}
			if tc.lag == "3s x 2 = 6s" && got["ZD002"] != 0 {
				t.Errorf("a 35 s preStop behind a 6 s check: ZD002 %v", got["ZD002"])
			}
		})
	}
}

// The doctor's fix of a naive gclb Local workload pins the Service's
// healthCheckNodePort, names a BackendConfig that asks it with the
// recipe's kube-proxy check, and gives the Pods the recipe's preStop; the
// fixed manifests then pass, and a fix of them changes nothing. A
// BackendConfig the Service already names is changed, not duplicated.
func TestFixPointsTheCheckAtKubeProxy(t *testing.T) {
	gclb, _ := LookupProfile("gclb")
	naive := m{SvcAnnotations: "zerodrop.dev/lb-profile: gclb", Lifecycle: "-", MinReady: "-", Grace: "-"}
	named := naive
	named.SvcAnnotations += "\ncloud.google.com/backend-config: '{\"default\": \"hc\"}'"
	named.Extra = bcDoc("hc", "    checkIntervalSec: 5\n    requestPath: /readyz")
	for name, x := range map[string]m{"no BackendConfig": naive, "one of its own": named} {
		t.Run(name, func(t *testing.T) {
			ms, err := Read("in.yaml", bytes.NewReader(x.yaml(t)))
			if err != nil {
				t.Fatal(err)
			}
			fixed, applied := Fix(ms, WithLBProfile(gclb))
			var bcs []*Object
			var svc *corev1.Service
			for _, o := range fixed.Objects {
				if backendConfigOf(o) != nil {
					bcs = append(bcs, o)
				}
				if s, ok := o.Obj.(*corev1.Service); ok {
					svc = s
				}
			}
			if len(bcs) != 1 || svc.Spec.HealthCheckNodePort < 30000 || svc.Spec.HealthCheckNodePort > 32767 {
				t.Fatalf("fixed: %d BackendConfigs, healthCheckNodePort %d; applied %v", len(bcs), svc.Spec.HealthCheckNodePort, applied)
			}
			hc, _, err := profiles.DecodeBackendConfigHealthCheck(backendConfigOf(bcs[0]).Object)
			if err != nil || hc.Port == nil || int32(*hc.Port) != svc.Spec.HealthCheckNodePort {
				t.Errorf("BackendConfig check %+v (%v), want the Service's port %d", hc, err, svc.Spec.HealthCheckNodePort)
			}
			r := Check(fixed, WithLBProfile(gclb))
			if errs := ids(r, Error); len(errs) > 0 || r.Services[0].LBLag != "3s x 2 = 6s" {
				t.Errorf("fixed manifests: errors %v, lag %q; %s", errs, r.Services[0].LBLag, summary(r))
			}
			var objs []runtime.Object
			for _, o := range fixed.Objects {
				objs = append(objs, o.Obj.(runtime.Object))
			}
			out, err := fixtures.RenderYAML(objs...)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Read("fixed.yaml", bytes.NewReader(out))
			if err != nil {
				t.Fatalf("the fixed manifests do not read back: %v\n%s", err, out)
			}
			if _, more := Fix(again, WithLBProfile(gclb)); len(more) != 0 {
				t.Errorf("a fix of the fixed manifests changed %v", more)
			}
		})
	}
}
