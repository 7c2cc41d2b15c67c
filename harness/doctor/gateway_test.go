package doctor

import (
	"strings"
	"testing"
)

// route is a Gateway API route of kind and apiVersion in namespace shop
// sending to Service web, attached to parent Gateway gw (no parentRefs
// when gw is "").
func route(apiVersion, kind, gw string) string {
	doc := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: r\n  namespace: shop\nspec:\n"
	if gw != "" {
		doc += "  parentRefs:\n  - name: " + gw + "\n"
	}
	return doc + "  rules:\n  - backendRefs:\n    - name: web\n      port: 80"
}

// TestRouteCarriage: a route's kind says what its Gateway carries to the
// Pods, and so which keep-alive rule holds behind it. An HTTP or gRPC
// route's proxy reuses its own upstream connections (ZD040); a TCP or TLS
// route's Gateway carries each client connection to one Pod for its life,
// so a client's kept-alive connection stays on a Pod that turns unready
// (ZD041, in words about the route, not NAT); a UDP route carries no
// connection. Each judges the Service it sends to.
func TestRouteCarriage(t *testing.T) {
	cases := []struct {
		apiVersion, kind string
		svcType          string
		l7, l4           bool
		fire, quiet      []string
		msgHas, msgNot   string // of ZD041 when it fires
	}{
		{"gateway.networking.k8s.io/v1", "HTTPRoute", "ClusterIP", true, false, []string{"ZD040"}, []string{"ZD041"}, "", ""},
		{"gateway.networking.k8s.io/v1", "GRPCRoute", "ClusterIP", true, false, []string{"ZD040"}, []string{"ZD041"}, "", ""},
		{"gateway.networking.k8s.io/v1alpha2", "TCPRoute", "ClusterIP", false, true, []string{"ZD041"}, []string{"ZD040"},
			"through tcproute/shop/r stays on the Pod it reached first", "NATed"},
		{"gateway.networking.k8s.io/v1", "TCPRoute", "ClusterIP", false, true, []string{"ZD041"}, []string{"ZD040"},
			"the Gateway carries each client connection to one Pod", "NATed"},
		{"gateway.networking.k8s.io/v1alpha2", "TLSRoute", "ClusterIP", false, true, []string{"ZD041"}, []string{"ZD040"},
			"through tlsroute/shop/r", "NATed"},
		{"gateway.networking.k8s.io/v1", "TLSRoute", "ClusterIP", false, true, []string{"ZD041"}, []string{"ZD040"}, "through tlsroute/shop/r", ""},
		// A LoadBalancer Service behind a TCPRoute: its LB clients are
		// NATed, the route's carried; one finding says both.
		{"gateway.networking.k8s.io/v1alpha2", "TCPRoute", "LoadBalancer", false, true, []string{"ZD041"}, []string{"ZD040"},
			"NATed to the Pod it reached first, and one through tcproute/shop/r stays on it too", ""},
		// Datagrams: nothing is kept alive through the route.
		{"gateway.networking.k8s.io/v1alpha2", "UDPRoute", "ClusterIP", false, true, nil, []string{"ZD040", "ZD041"}, "", ""},
		// Its LB clients still meet kube-proxy's NAT.
		{"gateway.networking.k8s.io/v1alpha2", "UDPRoute", "LoadBalancer", false, true, []string{"ZD041"}, []string{"ZD040"}, "NATed", "udproute"},
	}
	for _, c := range cases {
		t.Run(c.apiVersion+" "+c.kind+" "+c.svcType, func(t *testing.T) {
			doc := m{SvcType: c.svcType, Policy: "Cluster", Extra: route(c.apiVersion, c.kind, "")}.yaml(t)
			r := checkYAML(t, doc)
			if len(r.Services) != 1 || len(r.NotJudged) != 0 {
				t.Fatalf("services %+v, not judged %+v: want service/shop/web judged", r.Services, r.NotJudged)
			}
			ref := strings.ToLower(c.kind) + "/shop/r"
			if s := r.Services[0]; (s.L7 == ref) != c.l7 || (s.L4 == ref) != c.l4 {
				t.Errorf("l7 %q, l4 %q: want %s as l7 %v, as l4 %v", s.L7, s.L4, ref, c.l7, c.l4)
			}
			got := bySeverity(r)
			for _, id := range c.fire {
				if _, ok := got[id]; !ok {
					t.Errorf("%s quiet, want it; findings: %s", id, summary(r))
				}
			}
			for _, id := range c.quiet {
				if _, ok := got[id]; ok {
					t.Errorf("%s fired, want quiet; findings: %s", id, summary(r))
				}
			}
			for _, f := range r.Findings {
				if f.RuleID != "ZD041" {
					continue
				}
				if !strings.Contains(f.Message, c.msgHas) || (c.msgNot != "" && strings.Contains(f.Message, c.msgNot)) {
					t.Errorf("ZD041 says %q, want %q and not %q", f.Message, c.msgHas, c.msgNot)
				}
			}
		})
	}
}

// TestRouteCarriageKeepAliveOff: behind a TCP route, as behind an L4 LB,
// ZD041 holds only while readiness can flip and keep-alive is on.
func TestRouteCarriageKeepAliveOff(t *testing.T) {
	for name, in := range map[string]m{
		"keep-alive off":            {Env: "env:\n- name: ECHO_KEEPALIVE\n  value: \"false\""},
		"no readiness probe":        {Readiness: "-"},
		"readiness equals liveness": {Liveness: "livenessProbe:\n  httpGet:\n    path: /readyz\n    port: http"},
	} {
		t.Run(name, func(t *testing.T) {
			in.SvcType, in.Policy, in.Extra = "ClusterIP", "Cluster", route("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "")
			r := checkYAML(t, in.yaml(t))
			if _, ok := bySeverity(r)["ZD041"]; ok || len(r.Services) != 1 {
				t.Errorf("services %d, findings: %s; want the Service judged and ZD041 quiet", len(r.Services), summary(r))
			}
		})
	}
}
