package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	extv1beta1 "k8s.io/api/extensions/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// LBProfile is the health-check timing of a node-based load balancer: how
// long it keeps sending new connections to a node whose health check fails
// (RemovalLag) and how long before it uses a node that turned healthy.
// With externalTrafficPolicy Local the health check is kube-proxy's
// healthCheckNodePort, which fails as soon as the node's last local endpoint
// is gone, so RemovalLag is the window in which a terminating Pod must keep
// serving (the rolling-update-local and source-ip-dilemma incidents).
type LBProfile struct {
	Name               string        `json:"name"`
	Aliases            []string      `json:"aliases,omitempty"`
	Interval           time.Duration `json:"interval"`
	Timeout            time.Duration `json:"timeout"`
	HealthyThreshold   int           `json:"healthyThreshold"`
	UnhealthyThreshold int           `json:"unhealthyThreshold"`
	// SinglePool: the backend is one node pool, not every node (AKS Basic
	// LB, incident nodepool-backend).
	SinglePool bool `json:"singlePool,omitempty"`
	// L7: an HTTP proxy that keeps connections to the nodes open and reuses
	// them (GCE Ingress, incident keepalive-unready).
	L7 bool `json:"l7,omitempty"`
	// PodBackends: the LB's targets are the Pods themselves, no node and no
	// kube-proxy between (GKE NEG, AWS IP targets).
	PodBackends bool `json:"podBackends,omitempty"`
	// ClusterCheck describes the check of externalTrafficPolicy Cluster
	// Services when it differs from the Local one ("" when the same).
	ClusterCheck string `json:"clusterCheck,omitempty"`
	// Historical says why the LB can no longer be created ("" when current).
	Historical string `json:"historical,omitempty"`
	// FollowsServing: no health check; nodes are picked from the
	// EndpointSlices' serving condition (MetalLB), so a terminating Pod that
	// stays ready keeps its node in the LB until it exits.
	FollowsServing bool `json:"followsServing,omitempty"`
	// Source is where the numbers come from.
	Source string `json:"source"`
	// Profile is the LB profile this view was made from.
	Profile profiles.Profile `json:"-"`
}

// RemovalLag is interval x unhealthy threshold, each failing check counted
// at its timeout when that is the longer (profiles.HealthCheck.DetectionTime).
func (p LBProfile) RemovalLag() time.Duration {
	return p.failWait() * time.Duration(p.UnhealthyThreshold)
}

// failWait is how long one failing check takes at most: its interval, or
// its timeout where a vendor lets that be longer (alibaba-slb).
func (p LBProfile) failWait() time.Duration { return max(p.Interval, p.Timeout) }

// RecipeLB is what harness/recipe needs of the profile: its lags as the
// doctor judges them (a Service's annotations may have changed them).
func (p LBProfile) RecipeLB() recipe.LB {
	return recipe.LB{Name: p.Name, RemovalLag: p.RemovalLag(), AdditionLag: p.AdditionLag(), FollowsServing: p.FollowsServing,
		PodTargets:            p.PodBackends,
		ReadinessGate:         recipe.FromProfile(p.Profile).ReadinessGate,
		ChecksThroughNodePort: recipe.FromProfile(p.Profile).ChecksThroughNodePort, BackendConfig: p.Profile.BackendConfig}
}

// AdditionLag is interval x healthy threshold.
func (p LBProfile) AdditionLag() time.Duration {
	return p.Interval * time.Duration(p.HealthyThreshold)
}

// Describe is "8s x 3 = 24s", "5s timeout x 3 = 15s" (a timeout longer
// than the interval) or "no health check".
func (p LBProfile) Describe() string {
	if p.Interval == 0 || p.UnhealthyThreshold == 0 {
		return "no health check"
	}
	if p.Timeout > p.Interval {
		return fmt.Sprintf("%v timeout x %d = %v", p.Timeout, p.UnhealthyThreshold, p.RemovalLag())
	}
	return fmt.Sprintf("%v x %d = %v", p.Interval, p.UnhealthyThreshold, p.RemovalLag())
}

// MarshalJSON writes durations as text ("8s") and adds the lags.
func (p LBProfile) MarshalJSON() ([]byte, error) {
	type plain LBProfile
	return json.Marshal(struct {
		plain
		Interval    string `json:"interval"`
		Timeout     string `json:"timeout"`
		RemovalLag  string `json:"removalLag"`
		AdditionLag string `json:"additionLag"`
	}{plain(p), p.Interval.String(), p.Timeout.String(), p.RemovalLag().String(), p.AdditionLag().String()})
}

// DefaultProfile is used when neither the flag nor the Service picks one.
const DefaultProfile = profiles.DefaultName

// fromProfile is the doctor's view of one LB profile of clusters/lb/profiles,
// the one place every vendor number is written (with its source) for the
// doctor, the fixtures and the cloud LB alike.
func fromProfile(p profiles.Profile) LBProfile {
	h := p.HealthCheck
	var src []string
	for _, k := range slices.Sorted(maps.Keys(p.Sources)) {
		switch {
		case k == "healthCheck":
			src = append([]string{p.Sources[k]}, src...)
		case strings.HasPrefix(k, "healthCheck.") || k == "target" || k == "clusterHealthCheck":
			src = append(src, k+": "+p.Sources[k])
		}
	}
	return LBProfile{
		Name: p.Name, Aliases: append([]string(nil), p.Aliases...),
		Interval: h.Interval.D(), Timeout: h.Timeout.D(),
		HealthyThreshold: h.HealthyThreshold, UnhealthyThreshold: h.UnhealthyThreshold,
		SinglePool:     p.Eligibility.PoolLabel != "",
		L7:             p.Mode == profiles.ModeL7 && !p.PodBackends(),
		PodBackends:    p.PodBackends(),
		ClusterCheck:   clusterCheck(p),
		Historical:     p.Historical,
		FollowsServing: p.FollowsServing(),
		Source:         strings.Join(src, "; "),
		Profile:        p,
	}
}

func clusterCheck(p profiles.Profile) string {
	if p.ClusterHealthCheck == nil {
		return ""
	}
	c := *p.ClusterHealthCheck
	return fmt.Sprintf("%s %v x %d = %v", c.Target, c.Interval.D(), c.UnhealthyThreshold, c.DetectionTime())
}

// stock is the doctor's list, built once from the embedded profiles (which
// the profiles package's tests check, so an error is a build defect).
var stock = sync.OnceValue(func() []LBProfile {
	ps, err := profiles.Stock()
	if err != nil {
		panic(fmt.Sprintf("stock LB profiles are broken (a build defect): %v", err))
	}
	out := make([]LBProfile, 0, len(ps))
	for _, n := range ps.Names() {
		out = append(out, fromProfile(ps[n]))
	}
	return out
})

// Profiles returns the built-in LB profiles, sorted by name.
func Profiles() []LBProfile { return append([]LBProfile(nil), stock()...) }

// LookupProfile finds a profile by name or alias (case-insensitive).
func LookupProfile(name string) (LBProfile, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range stock() {
		if p.Name == n || slices.Contains(p.Aliases, n) {
			return p, true
		}
	}
	return LBProfile{}, false
}

// Provider annotations that change the health check of one Service.
const (
	annAWSInterval  = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"
	annAWSUnhealthy = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold"
	annAWSHealthy   = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-healthy-threshold"
	annAzInterval   = "service.beta.kubernetes.io/azure-load-balancer-health-probe-interval"
	annAzProbes     = "service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe"
	annAzMode       = "service.beta.kubernetes.io/azure-load-balancer-mode"
	annAWSTargets   = "service.beta.kubernetes.io/aws-load-balancer-target-node-labels"
)

// TimingAnnotations are the provider annotations that change one
// Service's health-check timing in the doctor's judgement
// (withTimingAnnotations); a tool whose LB does not read them (the stand-in
// of zerodrop test on zerodrop's cloud LB) must leave them out so the
// doctor and the LB time the Service alike.
func TimingAnnotations() []string {
	out := []string{annAWSInterval, annAWSUnhealthy, annAWSHealthy, annAzInterval, annAzProbes}
	for _, s := range alibabaTimingSuffixes {
		out = append(out, annAlibabaPrefix+s, annAlibabaLegacyPrefix+s)
	}
	return out
}

// lbChoice is the LB profile(s) one Service is judged against, and why.
type lbChoice struct {
	// profiles holds one profile, or several when the manifests do not say
	// which LB the Service gets: every plausible one, worst lag first.
	profiles []LBProfile
	// how says where the choice came from, for the summary.
	how string
}

// named reports whether the Service is judged against exactly one LB.
func (c lbChoice) named() bool { return len(c.profiles) == 1 }

// names is "gcp-nlb" or "any of aws-elb|gcp-nlb|...".
func (c lbChoice) names() string {
	var n []string
	for _, p := range c.profiles {
		n = append(n, p.Name)
	}
	if len(n) == 1 {
		return n[0]
	}
	return "any of " + strings.Join(n, "|")
}

// describe is each profile's removal lag.
func (c lbChoice) describe() string {
	if c.named() {
		return c.profiles[0].Describe()
	}
	var d []string
	for _, p := range c.profiles {
		d = append(d, p.Name+" "+seconds(p.RemovalLag()))
	}
	return strings.Join(d, ", ")
}

// Plausible is what a Service that names no LB may get on a cloud: the
// current node-based load balancers the cloud controllers create for type
// LoadBalancer without any annotation (GKE's two NLB implementations, the
// AWS in-tree CLB, Azure's Standard LB), and the AWS NLB a single annotation
// away. Historical profiles, L7 and MetalLB are left out: they need a choice
// the manifests would show.
var plausibleNames = []string{"gke-l4", "gcp-nlb", "aws-nlb", "aws-elb", "azure-lb"}

// lbHint is one way manifests name their LB without zerodrop's annotation.
type lbHint struct {
	// annotation (with value, "" = any value) or class names the hint.
	annotation, value, prefix, class string
	// with, when set, must hold too.
	with     func(*corev1.Service) bool
	profiles []string
	why      string
}

// awsLBC: the AWS Load Balancer Controller reconciles the Service (type
// external or its loadBalancerClass; cloud-provider-aws ignores its
// annotations otherwise), or EKS Auto Mode's own NLB controller, which
// reads the same nlb-target-type annotation (EKS User Guide, "Use Service
// Annotations to configure Network Load Balancers": loadBalancerClass
// eks.amazonaws.com/nlb; aws-load-balancer-nlb-target-type instance or ip).
func awsLBC(svc *corev1.Service) bool {
	t := strings.TrimSpace(svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"])
	c := ""
	if svc.Spec.LoadBalancerClass != nil {
		c = *svc.Spec.LoadBalancerClass
	}
	return t == "external" || c == "service.k8s.aws/nlb" || c == "eks.amazonaws.com/nlb"
}

// lbHints, first match wins. Each names the controller that reads the
// annotation or class.
var lbHints = []lbHint{
	{annotation: "service.beta.kubernetes.io/aws-load-balancer-type", value: "nlb", profiles: []string{"aws-nlb"},
		why: "cloud-provider-aws creates an NLB for aws-load-balancer-type: nlb"},
	// IP targets behind an NLB (kubernetes-sigs/aws-load-balancer-controller
	// docs/guide/service/annotations.md, nlb-target-type; nlb-ip is its
	// legacy type): the Pods are the targets.
	{annotation: "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type", value: "ip", profiles: []string{"aws-nlb-ip"}, with: awsLBC,
		why: "AWS Load Balancer Controller NLB with IP targets (nlb-target-type: ip): each Pod is a target"},
	{annotation: "service.beta.kubernetes.io/aws-load-balancer-type", value: "external", profiles: []string{"aws-nlb"},
		why: "AWS Load Balancer Controller NLB (its own health-check defaults are not modelled; aws-nlb's timing assumed)"},
	{annotation: "service.beta.kubernetes.io/aws-load-balancer-type", value: "nlb-ip", profiles: []string{"aws-nlb-ip"},
		why: "AWS Load Balancer Controller NLB with IP targets (its legacy type nlb-ip): each Pod is a target"},
	{class: "service.k8s.aws/nlb", profiles: []string{"aws-nlb"},
		why: "AWS Load Balancer Controller NLB (its own health-check defaults are not modelled; aws-nlb's timing assumed)"},
	{prefix: "service.beta.kubernetes.io/aws-load-balancer-", profiles: []string{"aws-elb"},
		why: "AWS annotations without aws-load-balancer-type: nlb: cloud-provider-aws creates a Classic ELB"},
	{prefix: "service.beta.kubernetes.io/azure-", profiles: []string{"azure-lb"},
		why: "Azure annotations: cloud-provider-azure's Standard LB"},
	// Alibaba Cloud's controller builds a CLB unless a class asks for
	// another LB (alibaba.go); the why says whether Pods are its backends.
	{prefix: annAlibabaPrefix, profiles: []string{alibabaProfile}, with: alibabaCLB},
	{prefix: annAlibabaLegacyPrefix, profiles: []string{alibabaProfile}, with: alibabaCLB},
	// kube-vip takes a Service of its class when it runs with
	// lb_class_only, and reads its kube-vip.io/ annotations
	// (loadbalancerIPs, and the vipHost it writes itself) in any case
	// (kube-vip v0.9.2 pkg/manager watch_services.go, pkg/cluster
	// instance.go FetchServiceAddresses). Its BGP mode is not modelled:
	// ARP is what a Service of it gets here.
	{class: contract.KubeVIPClass, profiles: []string{contract.LBKubeVIPARP}, why: kubeVIPWhy},
	{prefix: "kube-vip.io/", profiles: []string{contract.LBKubeVIPARP}, why: kubeVIPWhy},
	// MetalLB's own annotations (metallb v0.15.2 controller/service.go:
	// metallb.io/address-pool, loadBalancerIPs, allow-shared-ip, and their
	// deprecated metallb.universe.tf/ names) name MetalLB but not its mode:
	// the pool's L2Advertisement or BGPAdvertisement decides, which the
	// Service does not show.
	{prefix: "metallb.io/", profiles: []string{contract.LBMetalLB, contract.LBMetalLBBGP}, why: metallbWhy},
	{prefix: "metallb.universe.tf/", profiles: []string{contract.LBMetalLB, contract.LBMetalLBBGP}, why: metallbWhy},
	{annotation: "cloud.google.com/l4-rbs", value: "enabled", profiles: []string{"gke-l4"},
		why: "cloud.google.com/l4-rbs: enabled: ingress-gce's backend-service NLB"},
	{class: "networking.gke.io/l4-regional-external", profiles: []string{"gke-l4"}, why: "GKE L4 class: ingress-gce"},
	{class: "networking.gke.io/l4-regional-internal", profiles: []string{"gke-l4"}, why: "GKE L4 class: ingress-gce"},
	{prefix: "networking.gke.io/", profiles: []string{"gke-l4", "gcp-nlb"},
		why: "GKE annotations: ingress-gce (gke-l4) or the GCE cloud provider (gcp-nlb), depending on the cluster"},
	{prefix: "cloud.google.com/", profiles: []string{"gke-l4", "gcp-nlb"},
		why: "GKE annotations: ingress-gce (gke-l4) or the GCE cloud provider (gcp-nlb), depending on the cluster"},
}

// kubeVIPWhy is the kube-vip hints' reason.
const kubeVIPWhy = "kube-vip's class or annotations: kube-vip's services mode with ARP and a leader per Service (kube-vip-arp); its BGP mode is not modelled"

// metallbWhy is the MetalLB hints' reason.
const metallbWhy = "MetalLB annotations: layer 2 (metallb) or BGP behind an ECMP router (metallb-bgp), as the pool's L2Advertisement or BGPAdvertisement decides"

// matches reports whether the hint applies to svc.
func (h lbHint) matches(svc *corev1.Service) bool {
	if h.with != nil && !h.with(svc) {
		return false
	}
	if h.class != "" {
		return svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == h.class
	}
	if h.prefix != "" {
		for k := range svc.Annotations {
			// cloud.google.com/neg is about Ingress backends, not the Service's LB.
			if strings.HasPrefix(k, h.prefix) && k != annGKENEG {
				return true
			}
		}
		return false
	}
	v, ok := svc.Annotations[h.annotation]
	return ok && (h.value == "" || strings.EqualFold(strings.TrimSpace(v), h.value))
}

// Annotations that say how an Ingress's load balancer reaches a Service's
// Pods.
const (
	// annALBTargetType is the AWS Load Balancer Controller's target type
	// for an Ingress backend: instance (the default: nodes, through the
	// NodePort) or ip (the Pods); on the Service it wins over the
	// Ingress's (kubernetes-sigs/aws-load-balancer-controller
	// docs/guide/ingress/annotations.md: "Annotations applied to Service
	// have higher priority over annotations applied to Ingress";
	// target-type default instance).
	annALBTargetType = "alb.ingress.kubernetes.io/target-type"
	// annIngressClass is the Ingress class before spec.ingressClassName.
	annIngressClass = "kubernetes.io/ingress.class"
)

// routeHint is the LB an Ingress in front of svc implies for it, when its
// annotations say the LB sends to the Pods themselves: the AWS Load
// Balancer Controller's ALB with IP targets, or GKE's Ingress over NEG
// backends (the Service's cloud.google.com/neg, an Ingress of class gce or
// none). nil when the route says nothing that a profile models.
func routeHint(svc *corev1.Service, route *Object) (names []string, why string) {
	m, ok := route.Obj.(metav1.Object)
	if !ok || route.Kind != "Ingress" {
		return nil, ""
	}
	class := ingressClass(route)
	tt, on := svc.Annotations[annALBTargetType], "the Service"
	if tt == "" {
		tt, on = m.GetAnnotations()[annALBTargetType], route.Ref()
	}
	// The controller's own class is alb (its IngressClass's controller
	// ingress.k8s.aws/alb); "" may be a default class that is it.
	if strings.EqualFold(strings.TrimSpace(tt), "ip") && (class == "" || class == "alb") {
		return []string{"aws-alb-ip"}, fmt.Sprintf("%s=ip on %s: the AWS Load Balancer Controller's ALB with IP targets", annALBTargetType, on)
	}
	if negIngress(svc) && (class == "" || class == "gce" || class == "gce-internal") {
		return []string{"gclb-neg"}, fmt.Sprintf("%s with ingress true, behind %s (class %q): GKE's Ingress with container-native (NEG) backends",
			annGKENEG, route.Ref(), class)
	}
	return nil, ""
}

// ingressClass is an Ingress's class: spec.ingressClassName, else the
// older annotation; "" for none (a default class, whichever it is) or
// for a route that is no Ingress.
func ingressClass(route *Object) string {
	m, ok := route.Obj.(metav1.Object)
	if !ok || route.Kind != "Ingress" {
		return ""
	}
	class := m.GetAnnotations()[annIngressClass]
	switch ing := route.Obj.(type) {
	case *networkingv1.Ingress:
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
	case *extv1beta1.Ingress:
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
	}
	return class
}

// proxiesToPodIPs says why an Ingress's controller balances each request
// over the Service's Pod IPs itself ("" when it does not, or the doctor
// cannot tell): then no NodePort and no kube-proxy NAT pins its kept-alive
// connections to a Pod, and ZD040's incident cannot happen behind it.
// ingress-nginx (class nginx) does so unless its service-upstream
// annotation sends it through the ClusterIP (kubernetes/ingress-nginx
// docs/user-guide/nginx-configuration/annotations.md, "Service Upstream":
// "By default the NGINX ingress controller uses a list of all endpoints
// (Pod IP/port) in the NGINX upstream configuration").
func proxiesToPodIPs(route *Object) string {
	m, ok := route.Obj.(metav1.Object)
	if !ok || ingressClass(route) != "nginx" {
		return ""
	}
	if strings.EqualFold(strings.TrimSpace(m.GetAnnotations()["nginx.ingress.kubernetes.io/service-upstream"]), "true") {
		return ""
	}
	return fmt.Sprintf("%s is served by ingress-nginx (class nginx), which balances each request over the Service's Pod IPs", route.Ref())
}

// serviceProfile resolves what one Service is judged against: its
// zerodrop.dev/lb-profile annotation, else explicit (the --lb-profile flag,
// nil when not given), else the LB the Ingress or route that alone exposes
// the Service implies (routeNames, why routeWhy: routeHint for an
// Ingress, gatewayHint for a route; nil without one), else the LB its
// provider annotations or loadBalancerClass name, else every plausible LB.
// Provider annotations that change the timing apply on top.
// Problems are returned as messages for a finding.
func serviceProfile(svc *corev1.Service, explicit *LBProfile, routeNames []string, routeWhy string) (lbChoice, []string) {
	var problems []string
	pick := func(names []string, how string) lbChoice {
		c := lbChoice{how: how}
		for _, n := range names {
			if p, ok := LookupProfile(n); ok {
				c.profiles = append(c.profiles, p)
			}
		}
		return c
	}
	var choice lbChoice
	if name, ok := svc.Annotations[contract.LBProfileAnnotation]; ok {
		if found, ok := LookupProfile(name); ok {
			choice = lbChoice{profiles: []LBProfile{found}, how: "annotation " + contract.LBProfileAnnotation}
		} else {
			problems = append(problems, fmt.Sprintf("annotation %s=%q names no known profile (known: %s); judged as if it named none",
				contract.LBProfileAnnotation, name, strings.Join(ProfileNames(), ", ")))
		}
	}
	if choice.profiles == nil && explicit != nil {
		choice = lbChoice{profiles: []LBProfile{*explicit}, how: "--lb-profile"}
	}
	// A Service only an Ingress or route exposes gets its LB from it: its
	// own GKE annotations (a BackendConfig, neg-status) say nothing of an
	// L4 LB.
	if choice.profiles == nil && routeNames != nil && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		choice = pick(routeNames, routeWhy)
	}
	if choice.profiles == nil {
		for _, h := range lbHints {
			if h.matches(svc) {
				why := h.why
				if h.profiles[0] == alibabaProfile {
					why = alibabaWhy(svc)
				}
				choice = pick(h.profiles, why)
				break
			}
		}
	}
	if choice.profiles == nil {
		choice = pick(plausibleNames, "no LB named (no "+contract.LBProfileAnnotation+", --lb-profile, provider annotation or loadBalancerClass): every plausible cloud LB")
	}
	for i := range choice.profiles {
		choice.profiles[i], problems = withTimingAnnotations(svc, choice.profiles[i], problems)
	}
	sort.SliceStable(choice.profiles, func(i, j int) bool { return choice.profiles[i].RemovalLag() > choice.profiles[j].RemovalLag() })
	return choice, problems
}

// withTimingAnnotations applies the provider annotations that change a
// Service's health check to p.
func withTimingAnnotations(svc *corev1.Service, p LBProfile, problems []string) (LBProfile, []string) {
	seen := map[string]bool{}
	for _, q := range problems {
		seen[q] = true
	}
	report := func(msg string) {
		if !seen[msg] {
			problems = append(problems, msg)
			seen[msg] = true
		}
	}
	overridden := false
	setSeconds := func(key string, dst *time.Duration) {
		if v, ok := svc.Annotations[key]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				report(fmt.Sprintf("annotation %s=%q is not a number of seconds; ignored", key, v))
				return
			}
			*dst = time.Duration(n) * time.Second
			overridden = true
		}
	}
	setCount := func(key string, dst *int) {
		if v, ok := svc.Annotations[key]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				report(fmt.Sprintf("annotation %s=%q is not a count; ignored", key, v))
				return
			}
			*dst = n
			overridden = true
		}
	}
	setSeconds(annAWSInterval, &p.Interval)
	setCount(annAWSUnhealthy, &p.UnhealthyThreshold)
	setCount(annAWSHealthy, &p.HealthyThreshold)
	setSeconds(annAzInterval, &p.Interval)
	setCount(annAzProbes, &p.UnhealthyThreshold)
	// Alibaba's annotations name its own listener: they change the
	// alibaba-slb profile only.
	if p.Profile.Name == alibabaProfile {
		var changed bool
		p, changed = withAlibabaAnnotations(svc, p, report)
		overridden = overridden || changed
	}
	if overridden {
		p.Name += " + Service annotations"
	}
	return p, problems
}

// ProfileNames lists every accepted profile name and alias.
func ProfileNames() []string {
	var out []string
	for _, p := range stock() {
		out = append(out, p.Name)
		out = append(out, p.Aliases...)
	}
	sort.Strings(out)
	return out
}
