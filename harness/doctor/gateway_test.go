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

// gateway is a Gateway gw of class in namespace ns.
func gateway(ns, name, class string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
		"\nspec:\n  gatewayClassName: " + class + "\n  listeners: [{name: l, protocol: HTTP, port: 80}]"
}

// gatewayClass is a GatewayClass name implemented by controller.
func gatewayClass(name, controller string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: " + name + "\nspec:\n  controllerName: " + controller
}

// TestGatewayClassDecidesTheLB: what carries a route to its backends is its
// parent Gateway's class. GKE's gke-l7-* classes are Application Load
// Balancers with container-native (NEG) backends, so an HTTP or gRPC
// route's Services are judged on gclb-neg, without the kube-proxy
// keep-alive rules, as behind a NEG Ingress; the class may be absent from
// the input (GKE provides it), but one the input holds must be GKE's
// controller's. Every other class is the Gateway's own data plane, which
// the doctor does not model and says so, as it says when the Gateway is
// not in the input or the parent is no Gateway.
func TestGatewayClassDecidesTheLB(t *testing.T) {
	const v1, gke = "gateway.networking.k8s.io/v1", "gke-l7-global-external-managed"
	cases := []struct {
		name, svcType, extra string
		profile, choice      string   // the summary's lb= and why (prefixes)
		parents              []string // what the summary says of each parent
		fire, quiet          []string
	}{
		{name: "GKE class, not in the input", extra: gateway("shop", "gw", gke) + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "gclb-neg", choice: "httproute/shop/r through gateway/shop/gw: GKE's Gateway with container-native (NEG) backends",
			parents: []string{`gateway/shop/gw (class "gke-l7-global-external-managed"): GKE's Gateway`}, quiet: []string{"ZD040", "ZD041"}},
		{name: "GKE class held, GKE's controller", extra: gatewayClass(gke, "networking.gke.io/gateway") + "\n---\n" + gateway("shop", "gw", gke) + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "gclb-neg", parents: []string{"controller networking.gke.io/gateway): GKE's Gateway"}, quiet: []string{"ZD040", "ZD041"}},
		{name: "GKE internal class on a GRPCRoute", extra: gateway("shop", "gw", "gke-l7-rilb") + "\n---\n" + route(v1, "GRPCRoute", "gw"),
			profile: "gclb-neg", quiet: []string{"ZD040", "ZD041"}},
		// The name alone does not make GKE's LB: the controller does.
		{name: "a gke-l7- name another controller implements", extra: gatewayClass("gke-l7-rilb", "example.com/gateway") + "\n---\n" +
			gateway("shop", "gw", "gke-l7-rilb") + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "any of ", choice: "no LB named", parents: []string{"through this Gateway's own data plane"}, fire: []string{"ZD040"}},
		{name: "an in-cluster data plane's class", extra: gatewayClass("eg", "gateway.envoyproxy.io/gatewayclass-controller") + "\n---\n" +
			gateway("shop", "gw", "eg") + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "any of ", parents: []string{`(class "eg", controller gateway.envoyproxy.io/gatewayclass-controller): the route's backends are reached through this Gateway's own data plane`,
				"its LoadBalancer Service is judged on its own"}, fire: []string{"ZD040"}},
		{name: "a GKE controller's class the doctor does not know", extra: gatewayClass("custom", "networking.gke.io/gateway") + "\n---\n" +
			gateway("shop", "gw", "custom") + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "any of ", parents: []string{"a GKE Gateway class the doctor does not model"}, fire: []string{"ZD040"}},
		{name: "the Gateway is not in the input", extra: route(v1, "HTTPRoute", "gw"),
			profile: "any of ", parents: []string{"gateway/shop/gw is not in the input"}, fire: []string{"ZD040"}},
		// One parent that is not GKE's keeps the Service on a path the
		// doctor does not model.
		{name: "a GKE parent and another", extra: gateway("shop", "gw", gke) + "\n---\n" + gateway("shop", "eg", "eg") + "\n---\n" +
			strings.Replace(route(v1, "HTTPRoute", "gw"), "  - name: gw\n", "  - name: gw\n  - name: eg\n", 1),
			profile: "any of ", parents: []string{"GKE's Gateway", "own data plane"}, fire: []string{"ZD040"}},
		{name: "a parent in another namespace", extra: gateway("infra", "gw", gke) + "\n---\n" +
			strings.Replace(route(v1, "HTTPRoute", "gw"), "  - name: gw\n", "  - name: gw\n    namespace: infra\n", 1),
			profile: "gclb-neg", parents: []string{"gateway/infra/gw"}},
		{name: "a mesh route (parent Service)", extra: strings.Replace(route(v1, "HTTPRoute", "web"), "  - name: web\n", "  - name: web\n    group: \"\"\n    kind: Service\n", 1),
			profile: "any of ", parents: []string{"service/shop/web: a parent that is no Gateway"}},
		// GKE's classes are Application Load Balancers: a TCP route on one
		// is not modelled, and the route's own carriage decides (ZD041).
		{name: "a TCPRoute on a GKE Gateway", extra: gateway("shop", "gw", gke) + "\n---\n" + route("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "gw"),
			profile: "any of ", parents: []string{"for HTTP and gRPC routes; tcproute/shop/r through it is not modelled"},
			fire: []string{"ZD041"}, quiet: []string{"ZD040"}},
		// A LoadBalancer Service keeps its own LB; the GKE route's path
		// reaches the Pods directly, as through a NEG Ingress.
		{name: "a LoadBalancer Service behind a GKE route", svcType: "LoadBalancer", extra: gateway("shop", "gw", gke) + "\n---\n" + route(v1, "HTTPRoute", "gw"),
			profile: "any of ", parents: []string{"GKE's Gateway"}, quiet: []string{"ZD040", "ZD041"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := c.svcType
			if typ == "" {
				typ = "ClusterIP"
			}
			doc := m{SvcType: typ, Policy: "Cluster", Extra: c.extra}.yaml(t)
			r := checkYAML(t, doc, WithKubernetesMinor(0)) // no --lb-profile
			if len(r.Services) != 1 {
				t.Fatalf("services %+v, not judged %+v", r.Services, r.NotJudged)
			}
			s := r.Services[0]
			if !strings.HasPrefix(s.Profile, c.profile) || !strings.HasPrefix(s.LBChoice, c.choice) {
				t.Errorf("lb=%s (%s), want %q (%q)", s.Profile, s.LBChoice, c.profile, c.choice)
			}
			parents := strings.Join(s.Gateways, "\n")
			for _, p := range c.parents {
				if !strings.Contains(parents, p) {
					t.Errorf("parents say %q, want %q", parents, p)
				}
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
		})
	}
}

// TestGKEGatewayIsASubject: a Service a GKE Gateway's route exposes is
// reached by an LB with Pod targets, which zerodrop test stands in for as
// it does behind a NEG Ingress.
func TestGKEGatewayIsASubject(t *testing.T) {
	doc := m{SvcType: "ClusterIP", Policy: "Cluster",
		Extra: gateway("shop", "gw", "gke-l7-global-external-managed") + "\n---\n" + route("gateway.networking.k8s.io/v1", "HTTPRoute", "gw")}.yaml(t)
	ms, err := Read("test.yaml", strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	subs := Subjects(ms, "")
	if len(subs) != 1 || subs[0].Via == nil || subs[0].Via.Ref() != "httproute/shop/r" || subs[0].Profile != "gclb-neg" {
		t.Fatalf("subjects %+v, want service/shop/web via httproute/shop/r on gclb-neg", subs)
	}
}
