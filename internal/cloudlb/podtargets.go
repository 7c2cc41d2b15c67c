package cloudlb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// podTarget is one Pod a Pod-targeted profile may register (container-native
// load balancing): an endpoint of the Service's EndpointSlices.
type podTarget struct {
	// Name is the Pod's name (the endpoint's targetRef), or its address
	// when the endpoint names no Pod.
	Name string
	IP   netip.Addr
	Node string
	// Ready is the endpoint's ready condition: what the vendors' controllers
	// register (the AWS Load Balancer Controller and ingress-gce's NEG
	// controller both follow the EndpointSlices' ready endpoints).
	Ready bool
	// Terminating is the endpoint's terminating condition (its Pod is
	// being deleted).
	Terminating bool
	// Ports are the endpoint's ports by the Service port's name ("" for an
	// unnamed one): a named targetPort may resolve to different numbers on
	// different Pods.
	Ports map[string]uint16
}

// podTargets reads the Service's Pods from its EndpointSlices, sorted by
// name. An endpoint in two slices (a slice being replaced) counts once,
// ready if either says so.
func podTargets(slices []*discoveryv1.EndpointSlice) []podTarget {
	byName := map[string]*podTarget{}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue // IPv4 only (package doc)
		}
		ports := map[string]uint16{}
		for _, p := range s.Ports {
			if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			ports[name] = uint16(*p.Port)
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			name := ip.String()
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" && e.TargetRef.Name != "" {
				name = e.TargetRef.Name
			}
			t := byName[name]
			if t == nil {
				t = &podTarget{Name: name, IP: ip, Ports: map[string]uint16{}}
				byName[name] = t
			}
			if e.NodeName != nil {
				t.Node = *e.NodeName
			}
			// A nil ready condition means ready (discovery/v1 EndpointConditions).
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				t.Ready = true
			}
			if e.Conditions.Terminating != nil && *e.Conditions.Terminating {
				t.Terminating = true
			}
			for n, p := range ports {
				t.Ports[n] = p
			}
		}
	}
	out := make([]podTarget, 0, len(byName))
	for _, t := range byName {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// registered reports whether the vendor's controller registers t as a
// target under rule (profiles.Pods.Register): ready endpoints for the AWS
// controller (pkg/backend/endpoint_resolver.go
// resolvePodEndpointsWithEndpointsData), every endpoint not terminating for
// GKE's NEGs (ingress-gce pkg/neg/types EndpointsDataFromEndpointSlices skips
// terminating endpoints only; readiness is left to the health check).
func (t podTarget) registered(rule string) bool {
	if rule == profiles.RegisterNotTerminating {
		return !t.Terminating
	}
	return t.Ready
}

// servingPort is the Pod's port for the Service's first TCP port, where a
// Pod-targeted LB checks and sends (GKE NEG's USE_SERVING_PORT, AWS
// traffic-port): false when the endpoint carries no such port.
func (t podTarget) servingPort(svc *corev1.Service) (uint16, bool) {
	for _, sp := range svc.Spec.Ports {
		if sp.Protocol != corev1.ProtocolTCP && sp.Protocol != "" {
			continue
		}
		p, ok := t.Ports[sp.Name]
		return p, ok
	}
	return 0, false
}

// podProbeURL is the check of one Pod target: an HTTP GET of the profile's
// path on its serving port, or a TCP connect when the profile has no path.
func podProbeURL(p profiles.Profile, svc *corev1.Service, t podTarget) (string, error) {
	port, ok := t.servingPort(svc)
	if !ok {
		return "", fmt.Errorf("profile %s checks each Pod on its serving port, but the endpoint of %s has no port for the Service's first TCP port", p.Name, t.Name)
	}
	ap := netip.AddrPortFrom(t.IP, port)
	if p.HealthCheck.Path == "" {
		return "tcp://" + ap.String(), nil
	}
	return fmt.Sprintf("http://%s%s", ap, p.HealthCheck.Path), nil
}

// probeProfile is prof with the check its vendor builds from the serving
// container's readiness probe (profiles.Profile.WithReadinessProbe), read
// from the first of the Service's Pods (targets) that has one, and what
// the LB says of it; prof unchanged and "" when the profile builds no such
// check or no Pod has the probe.
func (c *Controller) probeProfile(prof profiles.Profile, svc *corev1.Service, targets []podTarget) (profiles.Profile, string) {
	if !prof.HealthCheck.FromReadinessProbe || c.podLister == nil {
		return prof, ""
	}
	for _, t := range targets {
		port, ok := t.servingPort(svc)
		if !ok {
			continue
		}
		pod, err := c.podLister.Pods(svc.Namespace).Get(t.Name)
		if err != nil {
			continue
		}
		if eff, ok := prof.WithReadinessProbe(profiles.ServingReadinessProbe(pod.Spec, int32(port))); ok {
			return eff, fmt.Sprintf("LB builds the check of %s from the readiness probe of Pod %s, as its vendor does: %s",
				svcKey(svc), pod.Name, describeCheck(eff.HealthCheck))
		}
	}
	return prof, ""
}

// waitsOnGate reports whether Pod name of ns names the profile's readiness
// gate and has every container ready: a Pod held back only by the LB's own
// condition, which the AWS controller registers although its endpoint is
// not ready, or the condition could never turn True
// (aws-load-balancer-controller pkg/backend/endpoint_resolver.go: a
// not-ready endpoint whose Pod IsContainersReady is registered).
func (c *Controller) waitsOnGate(ns, name string, g *profiles.ReadinessGate) bool {
	if g == nil || c.podLister == nil {
		return false
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if err != nil || !hasGate(pod, g.ConditionType) {
		return false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.ContainersReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasGate(pod *corev1.Pod, conditionType string) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if string(g.ConditionType) == conditionType {
			return true
		}
	}
	return false
}

// gateKey is one condition of one Pod.
type gateKey struct {
	ns, pod, condition string
}

// gateWant is what the LB wants a Pod's readiness-gate condition to say.
type gateWant struct {
	healthy bool
	sticky  bool
	// current is what the Pod's condition says now (Unknown: unset).
	current corev1.ConditionStatus
	// why names the Services and the verdicts behind it.
	why []string
}

// wantGates adds, for every Pod target of key that names the profile's
// gate, whether the LB finds it healthy for this Service: a Pod's
// condition is True only when every Service of the profile that targets it
// does (one gate per binding on AWS, all of which must pass).
func (c *Controller) wantGates(want map[gateKey]*gateWant, key string, st *svcState, prof profiles.Profile) {
	g := prof.ReadinessGate()
	if g == nil || c.podLister == nil {
		return
	}
	ns, _, _ := strings.Cut(key, "/")
	active := map[string]bool{}
	for _, n := range st.backends.Nodes(cloudlbv1.Active) {
		active[n] = true
	}
	for name := range st.pods {
		pod, err := c.podLister.Pods(ns).Get(name)
		if err != nil || !hasGate(pod, g.ConditionType) || pod.DeletionTimestamp != nil {
			continue
		}
		k := gateKey{ns: ns, pod: name, condition: g.ConditionType}
		w := want[k]
		if w == nil {
			w = &gateWant{healthy: true, sticky: g.Sticky, current: corev1.ConditionUnknown}
			for _, cond := range pod.Status.Conditions {
				if string(cond.Type) == g.ConditionType {
					w.current = cond.Status
				}
			}
			want[k] = w
		}
		healthy := active[name] && c.mon.Healthy(ProbeKey{Service: key, Node: name})
		w.healthy = w.healthy && healthy
		verdict := "healthy"
		if !healthy {
			verdict = "not healthy"
		}
		w.why = append(w.why, fmt.Sprintf("%s in %s", verdict, key))
	}
}

// setGates writes the conditions want calls for where the Pod says
// otherwise: True once healthy; back to False only for a gate that is not
// sticky (AWS follows the target both ways, GKE never turns it back).
func (c *Controller) setGates(ctx context.Context, want map[gateKey]*gateWant) error {
	var errs []error
	for k, w := range want {
		cur := w.current
		status := corev1.ConditionFalse
		if w.healthy {
			status = corev1.ConditionTrue
		}
		if cur == status || (cur == corev1.ConditionTrue && w.sticky) {
			continue
		}
		reason := "LoadBalancerTargetNotHealthy"
		if w.healthy {
			reason = "LoadBalancerTargetHealthy"
		}
		msg := "zerodrop-lb: " + strings.Join(w.why, ", ")
		body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": k.condition, "status": status, "reason": reason, "message": msg,
			"lastTransitionTime": metav1.NewTime(c.clk.Now()),
		}}}})
		if err != nil {
			return err
		}
		if _, err := c.cs.CoreV1().Pods(k.ns).Patch(ctx, k.pod, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
			errs = append(errs, fmt.Errorf("set readiness gate %s of pod %s/%s: %w", k.condition, k.ns, k.pod, err))
			continue
		}
		c.emit(zdv1.EventNote, "pod/"+k.ns+"/"+k.pod, fmt.Sprintf("LB set readiness gate %s of pod %s/%s %s: %s", k.condition, k.ns, k.pod, status, msg),
			map[string]string{"pod": k.pod, "condition": k.condition, "status": string(status)})
	}
	return errors.Join(errs...)
}
