package doctor

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
	// TCP proxy, the data plane of most in-cluster Gateways, "performs
	// basic 1:1 network connection proxy between downstream clients and
	// upstream clusters" (envoyproxy/envoy
	// docs/root/intro/arch_overview/listeners/tcp_proxy.rst), and closes
	// the connections to hosts that leave the cluster only when asked to
	// (api/envoy/config/cluster/v3/cluster.proto,
	// CommonLbConfig.close_connections_on_host_set_change, a bool, false
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
