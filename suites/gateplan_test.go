package suites

import (
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/standin"
)

// TestStandInCellsPriceTheGate: a user's workload whose cells on an LB get
// that LB's readiness gate (standin.GateFor) is priced with the gate's
// wait, as the bundled workload is; without the namespace label that asks
// for it, it is not.
func TestStandInCellsPriceTheGate(t *testing.T) {
	const in = `apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {elbv2.k8s.aws/pod-readiness-gate-inject: LABEL}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, ports: [{name: http, containerPort: 8080}], readinessProbe: {httpGet: {path: /readyz, port: http}}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: http}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop, annotations: {alb.ingress.kubernetes.io/target-type: ip}}
spec: {ingressClassName: alb, defaultBackend: {service: {name: web, port: {number: 80}}}}
`
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"aws-alb-ip"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"enabled", "disabled"} {
		m, err := doctor.Read("in.yaml", strings.NewReader(strings.Replace(in, "LABEL", label, 1)))
		if err != nil {
			t.Fatal(err)
		}
		owns, err := standin.FromManifests(m, standin.Options{Namespace: "zd-own"})
		if err != nil || len(owns) != 1 {
			t.Fatalf("stand-in: %v (%d)", err, len(owns))
		}
		cells := rollingUpdate().OwnCells(ms, fixtures.Hardening("own"), owns[0], func(Model) *zdv1.Expectation { return nil })
		if len(cells) == 0 {
			t.Fatal("no cells")
		}
		tc := timesOf(DefaultTiming(), cells[0], rollingUpdate().Fate)
		if gated := tc.gate > 0; gated != (label == "enabled") || (gated && tc.gate != tc.addition) {
			t.Errorf("namespace label %s: gate wait %v (addition %v), want it only where the gate is injected", label, tc.gate, tc.addition)
		}
	}
}
