package doctor

import (
	"fmt"
	"strings"
)

// gatewayGroup is the Gateway API's group.
const gatewayGroup = "gateway.networking.k8s.io"

// carriage is what a front end carries to a Service's Pods, which decides
// the keep-alive rule that applies behind it.
type carriage int

const (
	// carriesRequests: an L7 proxy (an Ingress controller, an HTTPRoute's
	// or GRPCRoute's Gateway) sends requests over upstream connections it
	// keeps and reuses (ZD040).
	carriesRequests carriage = iota
	// carriesConnections: a TCPRoute's or TLSRoute's Gateway carries each
	// client connection to one backend for the connection's life: Envoy's
	// TCP proxy, the data plane of the Envoy-based Gateways, "performs
	// basic 1:1 network connection proxy between downstream clients and
	// upstream clusters" (envoyproxy/envoy
	// docs/root/intro/arch_overview/listeners/tcp_proxy.rst), and draining
	// the existing connections when hosts are added or removed is an
	// option (api/envoy/config/cluster/v3/cluster.proto,
	// CommonLbConfig.close_connections_on_host_set_change, a bool, so off
	// unless set). A client's kept-alive connection so stays on one Pod,
	// as behind an L4 LB (ZD041).
	carriesConnections
	// carriesDatagrams: a UDPRoute; no connection is kept alive.
	carriesDatagrams
)

// routeKinds are the Gateway API route kinds the doctor reads, with what
// each carries (kubernetes-sigs/gateway-api apis/v1: HTTPRoute and
// GRPCRoute route requests; TCPRoute "forward[s] connections on the port
// specified by the listener"; TLSRoute the same by SNI; UDPRoute
// datagrams).
var routeKinds = map[string]carriage{
	"HTTPRoute": carriesRequests,
	"GRPCRoute": carriesRequests,
	"TCPRoute":  carriesConnections,
	"TLSRoute":  carriesConnections,
	"UDPRoute":  carriesDatagrams,
}

func isRouteKind(kind string) bool {
	_, ok := routeKinds[kind]
	return ok
}

// carriageOf is what front end r (an Ingress or a route) carries.
func carriageOf(r *Object) carriage {
	if c, ok := routeKinds[r.Kind]; ok {
		return c
	}
	return carriesRequests // an Ingress
}

// parentRef is one of a route's parentRefs, defaults applied (an empty
// namespace is the route's own).
type parentRef struct {
	group, kind, namespace, name string
}

// gatewayPath is one parent of a route and how it reaches the route's
// backends, as far as the input says.
type gatewayPath struct {
	// gke: a Gateway of one of GKE's gke-l7-* classes, whose load
	// balancer sends to the Pods through NEGs (gkeL7Class).
	gke bool
	// ref is "gateway/ns/name", or the parent's "kind/ns/name"; named
	// adds its class and controller when the input says them.
	ref, named string
	// why is what the summary says of it.
	why string
}

// gkeClassPrefix names GKE's Gateway classes: gke-l7-global-external-managed,
// gke-l7-regional-external-managed, gke-l7-cross-regional-internal-managed-mc,
// gke-l7-rilb, gke-l7-gxlb and their multi-cluster -mc twins (GKE docs,
// "GatewayClass capabilities", kubernetes-engine/docs/how-to/
// gatewayclass-capabilities). That page's load balancer table, read in its
// German edition on documentation.s3ns.fr for gke-l7-regional-external-managed
// and gke-l7-rilb, gives each an Application Load Balancer with
// container-native load balancing as the default, with GCE_VM_IP_PORT
// zonal NEGs: the Pod targets of the gclb-neg profile. Google Cloud's blog
// announcing the controller ("The evolution of Kubernetes networking with
// the GKE Gateway controller", 2021, read as reposted on
// globalcloudplatforms.com) says the same of gke-l7-rilb and gke-l7-gxlb:
// "orchestrated by the Gateway controller to provide container-native load
// balancing". The doctor takes it of every gke-l7-* class. GKE provides
// these classes itself (GKE docs, "About Gateway API": "GKE provides
// Gateway classes"), so a manifest names one without holding it.
const gkeClassPrefix = "gke-l7-"

// gkeControllerDomain is GKE's networking domain, as in its Service
// annotation networking.gke.io/load-balancer-type and loadBalancerClass
// networking.gke.io/l4-regional-external (GKE docs, "Create an internal
// load balancer" and "About LoadBalancer Services"); a GatewayClass's
// controllerName is "a domain prefixed path" naming the controller
// (kubernetes-sigs/gateway-api apis/v1/gatewayclass_types.go
// GatewayClassSpec.ControllerName), so a class of another domain with a
// gke-l7- name is another controller's.
const gkeControllerDomain = "networking.gke.io"

// gatewayPaths says, for each parent of route r, what carries r to its
// backends: a GKE Gateway (container-native), a Gateway of another class
// (its own data plane or LB, not modelled), a Gateway the input does not
// hold, or a parent that is no Gateway.
func (ix *index) gatewayPaths(r *Object) []gatewayPath {
	var out []gatewayPath
	for _, p := range r.parents {
		ns := p.namespace
		if ns == "" {
			ns = r.Namespace
		}
		ref := strings.ToLower(p.kind) + "/" + ns + "/" + p.name
		if p.group != gatewayGroup || p.kind != "Gateway" {
			why := ref + ": a parent that is no Gateway (a mesh's route when a Service): not modelled"
			out = append(out, gatewayPath{ref: ref, why: why})
			continue
		}
		gw := ix.gateways[ns+"/"+p.name]
		if gw == nil {
			out = append(out, gatewayPath{ref: ref, why: ref + " is not in the input: what carries the route to its backends is not known (give its file too)"})
			continue
		}
		class := gw.Obj.(*gatewayObject).Spec.GatewayClassName
		controller := ""
		if gc := ix.classes[class]; gc != nil {
			controller = gc.Obj.(*gatewayClassObject).Spec.ControllerName
		}
		domain, _, _ := strings.Cut(controller, "/")
		named := fmt.Sprintf("%s (class %q", ref, class)
		if controller != "" {
			named += ", controller " + controller
		}
		named += ")"
		switch {
		case strings.HasPrefix(class, gkeClassPrefix) && (controller == "" || domain == gkeControllerDomain):
			out = append(out, gatewayPath{gke: true, ref: ref, named: named,
				why: named + ": GKE's Gateway, an Application Load Balancer with container-native (NEG) backends"})
		case domain == gkeControllerDomain:
			out = append(out, gatewayPath{ref: ref, why: named + ": a GKE Gateway class the doctor does not model (only gke-l7-* classes)"})
		default:
			out = append(out, gatewayPath{ref: ref, why: named + ": the route's backends are reached through this Gateway's own data plane, " +
				"which the doctor does not model as an LB; if that is an in-cluster proxy, its LoadBalancer Service is judged on its own when the input holds it"})
		}
	}
	return out
}

// gatewayHint is the LB route r's Gateways imply for its backends: gclb-neg
// when every parent is a GKE Gateway and r carries requests (an HTTPRoute
// or GRPCRoute: GKE's classes are Application Load Balancers). nil
// otherwise, with what the summary says of each parent (a GKE Gateway's
// TCP or UDP route is not modelled).
func gatewayHint(r *Object, paths []gatewayPath) (names []string, why string, notes []string) {
	gke := len(paths) > 0
	for _, p := range paths {
		gke = gke && p.gke
	}
	for _, p := range paths {
		note := p.why
		if p.gke && carriageOf(r) != carriesRequests {
			note = p.named + ": GKE's Gateway, an Application Load Balancer for HTTP and gRPC routes; " + r.Ref() + " through it is not modelled"
		}
		notes = append(notes, note)
	}
	if !gke || carriageOf(r) != carriesRequests {
		return nil, "", notes
	}
	return []string{"gclb-neg"}, fmt.Sprintf("%s through %s: GKE's Gateway with container-native (NEG) backends", r.Ref(), paths[0].ref), notes
}
