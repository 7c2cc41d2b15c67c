package doctor

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"zerodrop.dev/zerodrop/harness/recipe"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/kubeversion"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Finding is one risk found in the input.
type Finding struct {
	RuleID   string   `json:"rule"`
	Rule     string   `json:"name"`
	Severity Severity `json:"severity"`
	Seeds    []string `json:"seeds"`
	// Service is the LoadBalancer (or L7-fronted) Service the risk affects.
	Service string `json:"service"`
	// Object is where the risk is: the workload, its PDB or the Service.
	Object  string `json:"object"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
}

// Location is "file:line", "file" or "cluster".
func (f Finding) Location() string {
	return Source{File: f.File, Line: f.Line}.String()
}

// ServiceSummary is what the doctor analysed for one Service.
type ServiceSummary struct {
	Service string `json:"service"`
	Type    string `json:"type"`
	Policy  string `json:"externalTrafficPolicy"`
	Profile string `json:"lbProfile"`
	LBLag   string `json:"lbHealthCheck"`
	// LBChoice says why the Service is judged against that LB (or those).
	LBChoice string `json:"lbChoice"`
	L7       string `json:"l7,omitempty"`
	// L4 is the TCPRoute, TLSRoute or UDPRoute that sends to the Service.
	L4 string `json:"l4,omitempty"`
	// Gateways say, for a Gateway API route in front, what carries it to
	// the Service: each parent Gateway, its class and whether the doctor
	// models it.
	Gateways  []string `json:"gateways,omitempty"`
	Workloads []string `json:"workloads"`
	Source    Source   `json:"source"`
}

// Report is the result of Check.
type Report struct {
	// Profile is the --lb-profile given, or ProfilePerService.
	Profile string `json:"lbProfile"`
	// Kubernetes is the version the rules judged for.
	Kubernetes string           `json:"kubernetesVersion"`
	Services   []ServiceSummary `json:"services"`
	Findings   []Finding        `json:"findings"`
	Skipped    []Skip           `json:"skipped,omitempty"`
	// Warnings are what the input said that was read otherwise (a key
	// defined twice: the last value, as kubectl applies it).
	Warnings []Skip `json:"warnings,omitempty"`
	// NotJudged are the Services the input names (its own, and those an
	// Ingress or route sends to) that no rule read, each with why.
	NotJudged []NotJudged `json:"notJudged,omitempty"`
}

// NotJudged is a Service the doctor did not judge and why.
type NotJudged struct {
	Service string `json:"service"`
	// Source is where the Service, or the reference to it, is.
	Source Source `json:"source"`
	Reason string `json:"reason"`
}

// Max is the highest severity found (SeverityNone when clean).
func (r *Report) Max() Severity {
	m := SeverityNone
	for _, f := range r.Findings {
		m = max(m, f.Severity)
	}
	return m
}

// Count counts findings of one severity.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Failed reports whether a finding at or above threshold exists;
// SeverityNone never fails.
func (r *Report) Failed(threshold Severity) bool {
	return threshold != SeverityNone && r.Max() >= threshold
}

// Option configures Check.
type Option func(*checkConfig)

type checkConfig struct {
	profile   *LBProfile
	namespace string
	kubeMinor int
	// shutdown is the nodes' graceful node shutdown, when given
	// (WithNodeShutdown); nil leaves ZD025 quiet.
	shutdown *recipe.ShutdownGrace
}

// newConfig applies opts to the defaults (namespace "default").
func newConfig(opts []Option) checkConfig {
	cfg := checkConfig{namespace: "default"}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// WithKubernetesMinor judges for Kubernetes 1.minor (the cluster's, or
// --kubernetes-version): rules whose truth depends on the version (kube-proxy
// and terminating endpoints) follow it. 0, the default, judges for every
// supported release (1.28 and later), where those rules no longer differ.
func WithKubernetesMinor(minor int) Option { return func(c *checkConfig) { c.kubeMinor = minor } }

// WithNodeShutdown judges for nodes whose kubelets give Pods g on a
// shutdown of their machine (shutdownGracePeriod and
// shutdownGracePeriodCriticalPods; zero: graceful node shutdown off, the
// kubelet's default): ZD025 checks the workload against it. Without it
// the doctor cannot know the nodes' setting and ZD025 stays quiet.
func WithNodeShutdown(g recipe.ShutdownGrace) Option {
	return func(c *checkConfig) { c.shutdown = &g }
}

// ParseKubernetesVersion reads "1.34", "v1.34.2" or a distribution's
// "v1.34.2-gke.1200" / "v1.34.2+k3s1" and returns the minor version.
func ParseKubernetesVersion(v string) (int, error) {
	kv, err := kubeversion.Parse(v)
	return kv.Minor, err
}

// WithLBProfile sets the LB profile for Services that do not name one
// (without it, each Service's provider annotations and loadBalancerClass
// decide, and a Service that names no LB is judged against every plausible
// one).
func WithLBProfile(p LBProfile) Option { return func(c *checkConfig) { c.profile = &p } }

// WithDefaultNamespace sets the namespace of objects that have none (the
// namespace kubectl apply would put them in). Default "default".
func WithDefaultNamespace(ns string) Option {
	return func(c *checkConfig) {
		if ns != "" {
			c.namespace = ns
		}
	}
}

// Check runs every rule over the Services of type LoadBalancer (and the
// Services an Ingress or a Gateway API route sends to) and the workloads
// behind them.
func Check(m *Manifests, opts ...Option) *Report {
	cfg := newConfig(opts)
	prof := ProfilePerService
	if cfg.profile != nil {
		prof = cfg.profile.Name
	}
	kube := "not given: rules of the supported releases (1.28 and later)"
	if cfg.kubeMinor > 0 {
		kube = fmt.Sprintf("1.%d", cfg.kubeMinor)
	}
	rep := &Report{Profile: prof, Kubernetes: kube, Services: []ServiceSummary{}, Findings: []Finding{}, Skipped: append([]Skip(nil), m.Skipped...),
		Warnings: append([]Skip(nil), m.Warnings...)}

	in := classify(m, cfg.namespace)
	rep.Skipped = append(rep.Skipped, in.skipped...)
	services := in.services

	seen := map[string]bool{}
	emit := func(f Finding) {
		key := f.Service + "|" + f.RuleID + "|" + f.Object + "|" + f.Message
		if seen[key] {
			return
		}
		seen[key] = true
		rep.Findings = append(rep.Findings, f)
	}

	ix := in.index()
	for _, so := range services {
		v := viewService(so, ix, cfg.profile)
		if !v.judged() {
			typ := v.svc.Spec.Type
			if typ == "" {
				typ = corev1.ServiceTypeClusterIP
			}
			rep.NotJudged = append(rep.NotJudged, NotJudged{Service: so.Ref(), Source: so.Source,
				Reason: fmt.Sprintf("type %s, and no Ingress or Gateway API route in the input sends to it", typ)})
			continue
		}
		svc, choice := v.svc, v.choice
		sum := ServiceSummary{
			Service: so.Ref(), Type: string(svc.Spec.Type), Policy: "Cluster", Profile: choice.names(),
			LBLag: choice.describe(), LBChoice: choice.how, L7: v.l7Summary(), L4: v.l4Summary(), Gateways: v.gateways,
			Workloads: []string{}, Source: so.Source,
		}
		if v.local() {
			sum.Policy = "Local"
		}
		for _, msg := range v.problems {
			emit(finding(mustRule("ZD091"), Warning, so, so, so.FirstLine([]any{"metadata", "annotations"}), msg))
		}
		for _, wo := range ix.selected(svc, so.Namespace) {
			sum.Workloads = append(sum.Workloads, wo.Ref())
			t := v.target(ix, wo, cfg.kubeMinor)
			t.shutdown = cfg.shutdown
			if t == nil {
				continue
			}
			wl, c := t.wl, t.c
			injected := injectedBy(wl, c)
			if injected != "" {
				emit(finding(mustRule("ZD092"), Info, so, wo, t.line(t.cpath("image"), t.cpath()),
					fmt.Sprintf("container %q is %s: its probes, hooks and image are written at admission, so the container rules were not run", c.Name, injected)))
			}
			targetHits(t, wo, choice, func(rule Rule, h hit, obj *Object) {
				line := h.res.line
				if line == 0 {
					line = obj.Source.Line
				}
				if h.res.fix != "" {
					rule.Fix = h.res.fix
				}
				emit(finding(rule, h.res.sev, so, obj, line, h.res.msg+h.suffix))
			})
		}
		if len(sum.Workloads) == 0 {
			emit(finding(mustRule("ZD090"), Info, so, so, so.FirstLine([]any{"spec", "selector"}, []any{"spec"}),
				fmt.Sprintf("selector %s matches no Deployment, StatefulSet, DaemonSet, ReplicationController or Argo Rollout in namespace %s of the input",
					SelectorString(svc.Spec.Selector), so.Namespace)))
		}
		rep.Services = append(rep.Services, sum)
	}

	rep.NotJudged = append(rep.NotJudged, missingBackends(in)...)
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.RuleID < b.RuleID
	})
	return rep
}

// serviceView is one Service as the rules read it: the LB it is judged
// against and the L7 front end in front of it, if any. Check judges every
// Service it says to, and Fix fixes through the same targets.
type serviceView struct {
	so       *Object
	svc      *corev1.Service
	choice   lbChoice
	problems []string
	l7Via    string // "ingress/ns/name", an HTTP or gRPC route, or the L7 profile, "" for none
	// l4Via is a TCPRoute or TLSRoute that sends to the Service (its
	// Gateway carries each client connection to one Pod), udpVia a
	// UDPRoute; "" for none.
	l4Via, udpVia string
	// podDirect: the front end sends to Pods without kube-proxy
	// (container-native load balancing), so no NATed connection outlives
	// a Pod's readiness and the keep-alive rules (ZD040, ZD041) do not
	// apply; the Service is judged all the same.
	podDirect bool
	// inCluster: that front end is an in-cluster proxy (ingress-nginx),
	// not a container-native cloud LB.
	inCluster bool
	// gateways say, for a Gateway API route in front, what carries it
	// (gatewayPaths).
	gateways []string
}

func viewService(so *Object, ix *index, explicit *LBProfile) serviceView {
	v := serviceView{so: so, svc: so.Obj.(*corev1.Service)}
	r := ix.routeTo(so.Namespace, so.Name)
	var hint []string // the LB the front end implies, nil for none
	var why string
	gkeGateway := false
	if r != nil {
		switch carriageOf(r) {
		case carriesConnections:
			v.l4Via = r.Ref()
		case carriesDatagrams:
			v.udpVia = r.Ref()
		default:
			v.l7Via = r.Ref()
		}
		if r.Kind == "Ingress" {
			hint, why = routeHint(v.svc, r)
		} else {
			hint, why, v.gateways = gatewayHint(r, ix.gatewayPaths(r))
			gkeGateway = hint != nil
		}
	}
	v.choice, v.problems = serviceProfile(v.svc, explicit, hint, why)
	v.choice, v.problems = withBackendConfig(so, ix, v.choice, v.problems)
	prof := v.choice.profiles[0] // the worst lag of the plausible ones
	if v.l7Via == "" && prof.L7 {
		v.l7Via = "LB profile " + prof.Name
	}
	if r != nil && proxiesToPodIPs(r) != "" {
		// An in-cluster proxy that balances over Pod IPs: no NAT of
		// kube-proxy between it and the Pods either.
		v.podDirect, v.inCluster = true, true
	}
	// GKE's Gateway sends to the Pods through NEGs, as its Ingress does
	// with the NEG annotation, whatever profile times it.
	if (prof.PodBackends && prof.Profile.Mode == profiles.ModeL7) || ((negIngress(v.svc) || gkeGateway) && v.l7Via != "") {
		// Container-native load balancing: the proxy reaches Pods without
		// kube-proxy, so no NATed connection outlives a Pod's readiness.
		// An L4 LB with Pod targets (aws-nlb-ip) is no proxy: it NATs a
		// client's connection to one Pod and keeps it there through the
		// deregistration delay, so ZD041 holds there.
		// The NEG annotation alone says how an Ingress would reach the
		// Pods (GKE puts it on Services by default); a LoadBalancer
		// Service's own clients still go through kube-proxy.
		v.podDirect = true
	}
	return v
}

// l7Summary is the front end as the summary names it.
func (v serviceView) l7Summary() string {
	switch {
	case v.inCluster:
		return v.l7Via + " (an in-cluster proxy: to Pod IPs directly)"
	case v.podDirect && v.l7Via != "":
		return v.l7Via + " (container-native: to Pods directly)"
	}
	return v.l7Via
}

// judged: a Service of type LoadBalancer, or one an Ingress or a route
// sends to.
func (v serviceView) judged() bool {
	return v.svc.Spec.Type == corev1.ServiceTypeLoadBalancer || v.l7Via != "" || v.l4Via != "" || v.udpVia != ""
}

// l4Summary is the TCP, TLS or UDP route in front, as the summary names it.
func (v serviceView) l4Summary() string {
	if v.l4Via != "" {
		return v.l4Via
	}
	return v.udpVia
}

// local: externalTrafficPolicy Local on a node-based LB. An LB whose
// targets are the Pods themselves sends past kube-proxy, so the traffic
// policy's node rules (the healthCheckNodePort, a node's last local
// endpoint) do not apply to it.
func (v serviceView) local() bool {
	return v.svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && !v.choice.profiles[0].PodBackends
}

// target is what the rules read of workload wo behind the Service (scaled
// by its HPA, its serving container, its PDBs), judged against the worst
// lag of the plausible LBs; nil when wo has no container.
func (v serviceView) target(ix *index, wo *Object, kubeMinor int) *target {
	wl, _ := asWorkload(wo)
	wl.scaledBy(ix.hpaOf(wl))
	ci, c := wl.servingContainer(v.svc)
	if c == nil {
		return nil
	}
	return &target{svcObj: v.so, svc: v.svc, local: v.local(), profile: v.choice.profiles[0], l7Via: v.l7Via, l4Via: v.l4Via, udpVia: v.udpVia, podDirect: v.podDirect,
		wl: wl, ci: ci, c: c, kubeMinor: kubeMinor, pdbs: ix.pdbsOf(wl), bcs: ix.backendConfig, ns: ix.namespaces[wo.Namespace]}
}

// classified is the input sorted by what the rules read of it, namespaces
// defaulted and later definitions winning.
type classified struct {
	services, workloads, pdbs, routes, hpas, bcs, namespaces []*Object
	gateways, classes                                        []*Object
	skipped                                                  []Skip
}

func (c *classified) index() *index {
	ix := newIndex(c.workloads, c.pdbs, c.hpas, c.routes, c.bcs)
	for _, o := range c.namespaces {
		ix.namespaces[o.Name] = o
	}
	for _, o := range c.gateways {
		ix.gateways[o.Namespace+"/"+o.Name] = o
	}
	for _, o := range c.classes {
		ix.classes[o.Name] = o // cluster-scoped
	}
	return ix
}

// classify copies the objects (so defaulting the namespace leaves the input
// untouched) and sorts them; like kubectl apply, a later definition of the
// same object wins and the earlier one is skipped.
func classify(m *Manifests, namespace string) *classified {
	objs := make([]*Object, len(m.Objects))
	last := map[string]int{}
	for i, orig := range m.Objects {
		cp := *orig
		if cp.Namespace == "" {
			cp.Namespace = namespace
		}
		objs[i] = &cp
		last[apiGroup(cp.APIVersion)+"|"+cp.Ref()] = i
	}
	c := &classified{}
	for i, o := range objs {
		if j := last[apiGroup(o.APIVersion)+"|"+o.Ref()]; j != i {
			c.skipped = append(c.skipped, Skip{Source: o.Source,
				Reason: fmt.Sprintf("%s is defined again at %s, which wins", o.Ref(), objs[j].Source)})
			continue
		}
		switch {
		case o.routes != nil:
			c.routes = append(c.routes, o)
		case o.Obj == nil:
		default:
			if _, ok := o.Obj.(*corev1.Service); ok {
				c.services = append(c.services, o)
			} else if _, ok := o.Obj.(*corev1.Namespace); ok {
				c.namespaces = append(c.namespaces, o)
			} else if _, ok := o.Obj.(*gatewayObject); ok {
				c.gateways = append(c.gateways, o)
			} else if _, ok := o.Obj.(*gatewayClassObject); ok {
				c.classes = append(c.classes, o)
			} else if pdbOf(o) != nil {
				c.pdbs = append(c.pdbs, o)
			} else if _, ok := o.Obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
				c.hpas = append(c.hpas, o)
			} else if backendConfigOf(o) != nil {
				c.bcs = append(c.bcs, o)
			} else if _, ok := asWorkload(o); ok {
				c.workloads = append(c.workloads, o)
			}
		}
	}
	return c
}

// Subject is a Service of type LoadBalancer and what the doctor finds
// behind it: the workloads its selector picks (input order) with the PDBs
// and the HorizontalPodAutoscaler of each. It is the doctor's pairing, for
// tools that act on the same objects the rules judged (the stand-in of
// `zerodrop test`).
type Subject struct {
	Service  *Object
	Backends []Backend
	// BackendConfig is the GKE BackendConfig the Service names, when the
	// input holds it (nil otherwise).
	BackendConfig *Object
	// Via is the Ingress or route that exposes a Service not itself of
	// type LoadBalancer, when the LB Check judges it on sends to the Pods
	// (an ALB with IP targets, GKE's NEG backends behind an Ingress or a
	// GKE Gateway): a load balancer all the same, one profile models
	// (Profile). nil for a LoadBalancer Service.
	Via     *Object
	Profile string
	// NamespaceLabels are the labels of the Service's Namespace when the
	// input holds it: a vendor may inject its readiness gate by them
	// (profiles.ReadinessGate.InjectedIn).
	NamespaceLabels map[string]string
}

// Backend is one workload behind a Subject's Service.
type Backend struct {
	Workload *Object
	// Kind is the workload's kind (Deployment, StatefulSet, DaemonSet,
	// ReplicationController, Rollout).
	Kind string
	// Container is the index of the container the Service sends to in the
	// Pod template (the one owning the target port; see servingContainer).
	Container int
	PDBs      []*Object
	HPA       *Object
}

// Subjects pairs every Service of type LoadBalancer in m, and every Service
// an Ingress or route exposes through an LB that sends to its Pods
// (Subject.Via), with the workloads, PDBs and HPAs behind it, the way Check
// does; objects without a namespace get namespace ("default" when empty).
func Subjects(m *Manifests, namespace string) []Subject {
	if namespace == "" {
		namespace = "default"
	}
	in := classify(m, namespace)
	ix := in.index()
	var out []Subject
	for _, so := range in.services {
		svc := so.Obj.(*corev1.Service)
		sub := Subject{Service: so, NamespaceLabels: ix.nsLabels(so.Namespace)}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			// The LB Check judges it on (viewService), when that is one
			// whose targets are the Pods.
			r := ix.routeTo(so.Namespace, so.Name)
			if r == nil {
				continue
			}
			v := viewService(so, ix, nil)
			if len(v.choice.profiles) != 1 || !v.choice.profiles[0].PodBackends {
				continue
			}
			sub.Via, sub.Profile = r, v.choice.profiles[0].Name
		}
		if name, err := profiles.ServiceBackendConfig(svc); err == nil && name != "" {
			sub.BackendConfig = ix.backendConfig(so.Namespace, name)
		}
		for _, wo := range ix.selected(svc, so.Namespace) {
			wl, _ := asWorkload(wo)
			ci, _ := wl.servingContainer(svc)
			sub.Backends = append(sub.Backends, Backend{Workload: wo, Kind: wl.kind, Container: ci, PDBs: ix.pdbsOf(wl), HPA: ix.hpaOf(wl)})
		}
		out = append(out, sub)
	}
	return out
}

// injectedBy names the admission webhook that writes container c, or "".
// Istio's gateway chart (manifests/charts/gateway/templates/deployment.yaml)
// renders the proxy as `image: auto`, "populated at runtime by the mutating
// webhook", with sidecar.istio.io/inject "true" on the Pod template.
func injectedBy(w *workload, c *corev1.Container) string {
	if c.Image != "auto" {
		return ""
	}
	meta := w.template.ObjectMeta
	if meta.Labels["sidecar.istio.io/inject"] == "true" || meta.Annotations["sidecar.istio.io/inject"] == "true" ||
		meta.Annotations["inject.istio.io/templates"] != "" {
		return "an Istio-injected proxy (image: auto)"
	}
	return ""
}

// ProfilePerService is Report.Profile when no --lb-profile was given: each
// Service is judged against the LB it names, or every plausible one.
const ProfilePerService = "per Service"

// targetHits runs every rule of the catalogue on target t, the workload
// wo's, against choice, and hands each hit to fn with the object it is on
// (the workload unless the rule names another). A container written at
// admission (injectedBy) skips the container rules: what it runs is not
// in the manifests. Check and Unfixable read a target through it alike.
func targetHits(t *target, wo *Object, choice lbChoice, fn func(rule Rule, h hit, obj *Object)) {
	injected := injectedBy(t.wl, t.c)
	for _, rule := range catalogue {
		if rule.check == nil || injected != "" && rule.container {
			continue
		}
		for _, h := range runRule(rule, t, choice) {
			obj := h.res.obj
			if obj == nil {
				obj = wo
			}
			fn(rule, h, obj)
		}
	}
}

type hit struct {
	res    result
	suffix string
}

// runRule runs rule for target t against every profile of the choice. With
// one profile that is all; with several (no LB named) results that differ
// only by profile are merged into one, worst lag first, and say on which
// plausible LBs they hold and on which not, so the user sees what naming
// their LB would change.
func runRule(rule Rule, t *target, choice lbChoice) []hit {
	if choice.named() {
		t.profile = choice.profiles[0]
		var out []hit
		for _, r := range rule.check(t) {
			out = append(out, hit{res: r})
		}
		return out
	}
	// One finding per line and object, whatever the profiles make of it:
	// the worst severity any gives, and the others said in the suffix.
	type group struct {
		res    result
		fired  []string
		sevs   []Severity // of fired, in order
		varies bool       // the message differs between profiles: the rule reads the LB
	}
	var order []string
	groups := map[string]*group{}
	for _, p := range choice.profiles {
		t.profile = p
		for _, r := range rule.check(t) {
			objRef := ""
			if r.obj != nil {
				objRef = r.obj.Ref()
			}
			key := fmt.Sprintf("%d|%s", r.line, objRef)
			g := groups[key]
			if g == nil {
				g = &group{res: r}
				groups[key] = g
				order = append(order, key)
			}
			g.fired = append(g.fired, p.Name)
			g.sevs = append(g.sevs, r.sev)
			g.varies = g.varies || r.msg != g.res.msg
			if r.sev > g.res.sev {
				g.res = r
			}
		}
	}
	t.profile = choice.profiles[0]
	var out []hit
	for _, key := range order {
		g := groups[key]
		var safe []string
		for _, p := range choice.profiles {
			if !slices.Contains(g.fired, p.Name) {
				safe = append(safe, p.Name)
			}
		}
		fired := strings.Join(g.fired, ", ")
		lesser := lesserSeverities(g.fired, g.sevs, g.res.sev)
		suffix := ""
		switch {
		case len(safe) > 0:
			if lesser != "" {
				fired += " (" + lesser + ")"
			}
			suffix = fmt.Sprintf(" [no LB named: holds on %s; not on %s. Name yours with --lb-profile or the %s annotation]",
				fired, strings.Join(safe, ", "), contract.LBProfileAnnotation)
		case g.varies || lesser != "":
			if lesser != "" {
				fired += "; " + lesser
			}
			suffix = fmt.Sprintf(" [no LB named: holds on every plausible one (%s). Name yours with --lb-profile or the %s annotation]",
				fired, contract.LBProfileAnnotation)
		}
		out = append(out, hit{res: g.res, suffix: suffix})
	}
	return out
}

// missingBackends are the Services an Ingress or route of the input sends
// to that the input does not hold: judged nowhere, and said so, since a
// Service in another file or only in the cluster is the usual reason.
func missingBackends(in *classified) []NotJudged {
	have := map[string]bool{}
	for _, so := range in.services {
		have[so.Namespace+"/"+so.Name] = true
	}
	var out []NotJudged
	seen := map[string]bool{}
	for _, r := range in.routes {
		for _, s := range r.routes {
			key := routeKey(r, s)
			if have[key] || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, NotJudged{Service: "service/" + key, Source: r.Source,
				Reason: fmt.Sprintf("%s sends to it, but the input has no such Service (give its file too, or check the cluster with --cluster)", r.Ref())})
		}
	}
	return out
}

// lesserSeverities says which profiles gave a finding a lower severity than
// the one reported ("a warning on gke-l4"), "" when all agree.
func lesserSeverities(profiles []string, sevs []Severity, worst Severity) string {
	by := map[Severity][]string{}
	for i, sev := range sevs {
		if sev < worst {
			by[sev] = append(by[sev], profiles[i])
		}
	}
	var out []string
	for sev := worst - 1; sev > SeverityNone; sev-- {
		if len(by[sev]) > 0 {
			out = append(out, fmt.Sprintf("%s on %s", article(sev.String()), strings.Join(by[sev], ", ")))
		}
	}
	return strings.Join(out, "; ")
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

func mustRule(id string) Rule {
	r, ok := RuleByID(id)
	if !ok {
		panic("doctor: rule " + id + " missing from the catalogue")
	}
	return r
}

func finding(r Rule, sev Severity, svc, obj *Object, line int, msg string) Finding {
	f := Finding{
		RuleID: r.ID, Rule: r.Name, Severity: sev, Seeds: r.Seeds,
		Service: svc.Ref(), Object: obj.Ref(), Message: msg, Fix: r.Fix,
		File: obj.Source.File,
	}
	if f.File != "" {
		f.Line = line
	}
	return f
}

// SelectorString is a Service's selector as "k=v,k=v" (keys sorted), or
// "(empty)".
func SelectorString(sel map[string]string) string {
	if len(sel) == 0 {
		return "(empty)"
	}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
}

// apiGroup is the group of an apiVersion ("apps" of "apps/v1", "" for "v1"):
// the same object may be written in two versions of one group.
func apiGroup(apiVersion string) string {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// annGKENEG is the Service annotation that gives a GKE Ingress
// container-native (NEG) backends: cloud.google.com/neg: '{"ingress": true}'
// (GKE docs, "Container-native load balancing through Ingress").
const annGKENEG = "cloud.google.com/neg"

func negIngress(svc *corev1.Service) bool {
	var v struct {
		Ingress bool `json:"ingress"`
	}
	return json.Unmarshal([]byte(svc.Annotations[annGKENEG]), &v) == nil && v.Ingress
}
