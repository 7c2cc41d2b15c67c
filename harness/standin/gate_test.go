package standin

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// behindALB is a ClusterIP Service that only an AWS Load Balancer
// Controller Ingress with IP targets exposes, its Deployment, and (ns) the
// Namespace's labels; gate is the Pod template's readinessGates line.
func behindALB(ingressAnn, ns, gate string) string {
	y := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
` + gate + `      containers:
      - name: web
        image: web:1
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: http}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
  annotations: {` + ingressAnn + `}
spec:
  defaultBackend: {service: {name: web, port: {number: 80}}}
`
	if ns != "" {
		y += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {" + ns + "}}\n"
	}
	return y
}

const (
	albIP       = "alb.ingress.kubernetes.io/target-type: ip, kubernetes.io/ingress.class: alb"
	albGate     = "      readinessGates: [{conditionType: target-health.elbv2.k8s.aws/k8s-shop-web-0123456789}]\n"
	injectLabel = "elbv2.k8s.aws/pod-readiness-gate-inject: enabled"
)

// TestIngressFrontedService: a Service an ALB with IP targets exposes is
// stood in for as a LoadBalancer Service of that model; one an Ingress
// exposes through nodes (or a controller no profile models) is refused
// with the reason.
func TestIngressFrontedService(t *testing.T) {
	s := build(t, behindALB(albIP, "", ""), Options{})
	if s.ServiceObj.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Profile != "aws-alb-ip" {
		t.Fatalf("type %s, profile %q; want LoadBalancer on aws-alb-ip", s.ServiceObj.Spec.Type, s.Profile)
	}
	var said bool
	for _, c := range s.Changes {
		said = said || (c.Field == "spec.type" && c.Was == "ClusterIP" && strings.Contains(c.Why, "ingress/shop/web"))
	}
	if !said {
		t.Errorf("no Change says why the type changed: %v", s.Changes)
	}
	_, err := fromYAML(behindALB("kubernetes.io/ingress.class: nginx", "", ""), Options{})
	if err == nil || !strings.Contains(err.Error(), "no Service of type LoadBalancer") {
		t.Errorf("nginx Ingress: err %v, want the no-LB-Service error", err)
	}
}

// TestGateFor: the stand-in's Pods carry the LB under test's gate exactly
// where the user's Pods would carry that vendor's.
func TestGateFor(t *testing.T) {
	ps, err := profiles.Stock()
	if err != nil {
		t.Fatal(err)
	}
	prof := func(n string) profiles.Profile {
		p, ok := ps.Find(n)
		if !ok {
			t.Fatalf("no stock profile %s", n)
		}
		return p
	}
	cases := []struct {
		name, ns, gate, profile string
		want                    string // the gate the stand-in gets, "" none
	}{
		{"user's AWS gate on aws-alb-ip", "", albGate, "aws-alb-ip", "target-health.elbv2.k8s.aws/zerodrop-aws-alb-ip"},
		{"namespace labelled for injection", injectLabel, "", "aws-alb-ip", "target-health.elbv2.k8s.aws/zerodrop-aws-alb-ip"},
		{"namespace labelled otherwise", "elbv2.k8s.aws/pod-readiness-gate-inject: disabled", "", "aws-alb-ip", ""},
		{"no gate, no label", "", "", "aws-alb-ip", ""},
		{"GKE injects into every NEG Pod", "", "", "gclb-neg", "cloud.google.com/load-balancer-neg-ready"},
		{"an AWS gate means nothing to a node-based LB", "", albGate, "aws-nlb", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := build(t, behindALB(albIP, c.ns, c.gate), Options{}).In("zd-cell")
			if got := s.template().Spec.ReadinessGates; len(got) != 0 {
				t.Fatalf("built with gates %v: the user's are the user's controller's", got)
			}
			s.GateFor(prof(c.profile))
			s.GateFor(prof(c.profile)) // twice: one gate
			var got []string
			for _, g := range s.WorkloadObj.(*appsv1.Deployment).Spec.Template.Spec.ReadinessGates {
				got = append(got, string(g.ConditionType))
			}
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("gates %v, want none", got)
			case c.want != "" && (len(got) != 1 || got[0] != c.want):
				t.Errorf("gates %v, want [%s]", got, c.want)
			}
			if built := build(t, behindALB(albIP, c.ns, c.gate), Options{}); built.Gated(prof(c.profile)) != (c.want != "") {
				t.Errorf("Gated = %v, want %v", !(c.want != ""), c.want != "")
			}
			if c.want != "" && !strings.Contains(s.Changes[len(s.Changes)-1].Field, "readinessGates") {
				t.Errorf("last change %v, want the gate's", s.Changes[len(s.Changes)-1])
			}
		})
	}
}

// TestLoadBalancerServiceFirst: an input with a LoadBalancer Service and a
// Service an Ingress exposes through Pod targets stands in for the
// LoadBalancer one, as before Ingress-fronted Services were subjects.
func TestLoadBalancerServiceFirst(t *testing.T) {
	ss, err := fromYAML(every+"---\n"+behindALB(albIP, "", ""), Options{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if len(ss) != 1 || ss[0].Service != "service/prod/shop" || ss[0].Profile != "" {
		var got []string
		for _, s := range ss {
			got = append(got, s.Service)
		}
		t.Fatalf("stand-ins for %v, want only service/prod/shop", got)
	}
}
