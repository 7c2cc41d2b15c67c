package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// Applied is one change Fix made.
type Applied struct {
	RuleID string `json:"rule"`
	Object string `json:"object"`
	Change string `json:"change"`
}

func (a Applied) String() string { return a.RuleID + " " + a.Object + ": " + a.Change }

// fixers are the rules whose Fix the doctor can make itself, each the
// rule's own advice with the numbers it judged by. The others need a person
// (a readiness endpoint to write, an app to change, an LB to reconfigure).
var fixers = map[string]func(t *target) string{
	"ZD001": fixPreStop,
	"ZD002": fixPreStop,
	"ZD003": fixGrace,
	"ZD004": func(t *target) string {
		return setPreStop(t, t.recipe(corev1.ServiceExternalTrafficPolicyCluster).PreStop)
	},
	"ZD006": fixGrace,
	"ZD007": fixCheckThroughNodePort,
	"ZD010": fixSpread,
	"ZD013": fixSpreadCountsTainted,
	"ZD012": func(t *target) string {
		two := int32(2)
		if setReplicas(t.wl, two) {
			return "replicas: 2"
		}
		return ""
	},
	"ZD020": func(t *target) string {
		return fixPDBs(t, "maxUnavailable: 1", func(p *policyv1.PodDisruptionBudget) {
			one := intstr.FromInt32(1)
			p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, &one
		})
	},
	"ZD022": func(t *target) string {
		return fixPDBs(t, "unhealthyPodEvictionPolicy: AlwaysAllow", func(p *policyv1.PodDisruptionBudget) {
			a := policyv1.AlwaysAllow
			p.Spec.UnhealthyPodEvictionPolicy = &a
		})
	},
	"ZD024": fixBudgetAllowsAll,
	"ZD030": fixNoReadiness,
	"ZD032": fixRollout,
	"ZD033": fixMinReady,
}

// adders are the fixes that add an object rather than change one: the
// object and what it is. A budget the Pods already have is changed
// instead (fixPDBs), so no two budgets select them (ZD021).
var adders = map[string]func(t *target) (*Object, string){
	"ZD007": addBackendConfig,
	"ZD033": addGateNamespace,
	"ZD024": func(t *target) (*Object, string) {
		if len(t.pdbs) > 0 {
			return nil, ""
		}
		return addPDB(t)
	},
}

// injectedByLabel is the LB's readiness gate when its vendor injects it
// into the Pods of a namespace labelled for it, and the Pods do not carry
// it yet; nil otherwise.
func injectedByLabel(t *target) *profiles.ReadinessGate {
	if g := t.profile.Profile.ReadinessGate(); g != nil && g.Injected == profiles.GateInjectedNamespaceLabel && !t.gated() {
		return g
	}
	return nil
}

// fixMinReady (ZD033) holds a rollout until the LB takes traffic to a new
// Pod: with the LB's readiness gate where the recipe has one, else with
// minReadySeconds of the LB's addition lag. A gate the vendor injects by
// namespace label is named after a target group binding the manifests
// cannot know, so it is never written into the template: the fix labels
// the input's Namespace instead, as the vendor's guide says
// (kubernetes-sigs/aws-load-balancer-controller
// docs/deploy/pod_readiness_gate.md), or leaves it to addGateNamespace when
// the input has none (a workload's namespace is never empty here: objects
// without one are in the default namespace, WithDefaultNamespace).
func fixMinReady(t *target) string {
	r := t.recipe(t.svc.Spec.ExternalTrafficPolicy)
	if g := injectedByLabel(t); g != nil && r.ReadinessGate != "" {
		if t.ns == nil {
			return "" // addGateNamespace adds the Namespace, labelled
		}
		secs := int32(ceilSeconds(r.MinReady))
		setMinReady(t.wl, secs)
		ns := t.ns.Obj.(*corev1.Namespace)
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		k, v := g.Label()
		ns.Labels[k] = v
		return fmt.Sprintf("namespace %s labelled %s (the LB's controller then injects its readiness gate into new Pods and sets it once its check of the Pod passed; its addition lag is %s); minReadySeconds: %d",
			ns.Name, g.NamespaceLabel, seconds(t.profile.AdditionLag()), secs)
	}
	secs := int32(ceilSeconds(r.MinReady))
	if !setMinReady(t.wl, secs) {
		return ""
	}
	if g := r.ReadinessGate; g != "" && !t.gated() {
		t.wl.template.Spec.ReadinessGates = append(t.wl.template.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(g)})
		return fmt.Sprintf("readinessGates: %s (the LB sets it once its check of the Pod passed; its addition lag is %s); minReadySeconds: %d",
			g, seconds(t.profile.AdditionLag()), secs)
	}
	return fmt.Sprintf("minReadySeconds: %d (the LB's addition lag %s)", secs, seconds(t.profile.AdditionLag()))
}

// addGateNamespace (ZD033) adds the workload's Namespace, labelled for the
// vendor's readiness-gate injection, where the input does not hold it
// (applied, it labels the namespace that exists).
func addGateNamespace(t *target) (*Object, string) {
	g := injectedByLabel(t)
	name := t.wl.obj.Namespace
	if g == nil || t.ns != nil || t.recipe(t.svc.Spec.ExternalTrafficPolicy).ReadinessGate == "" {
		return nil, ""
	}
	k, v := g.Label()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k: v}}}
	o := &Object{APIVersion: "v1", Kind: "Namespace", Name: name, Obj: ns, Source: Source{File: t.wl.obj.Source.File}}
	what := fmt.Sprintf("new Namespace %s labelled %s: the LB's controller injects its readiness gate into the Pods created there, and sets it once its check of the Pod passed (addition lag %s)",
		name, g.NamespaceLabel, seconds(t.profile.AdditionLag()))
	secs := int32(ceilSeconds(t.recipe(t.svc.Spec.ExternalTrafficPolicy).MinReady))
	if setMinReady(t.wl, secs) {
		what += fmt.Sprintf("; minReadySeconds: %d", secs)
	}
	return o, what
}

// fixBudgetAllowsAll changes a budget that lets every replica go (ZD024);
// with none, adders makes one.
func fixBudgetAllowsAll(t *target) string {
	if len(t.pdbs) == 0 || !severalReplicas(t) {
		return ""
	}
	return fixPDBs(t, "maxUnavailable: 1, unhealthyPodEvictionPolicy: AlwaysAllow", func(p *policyv1.PodDisruptionBudget) {
		one, a := intstr.FromInt32(1), policyv1.AlwaysAllow
		p.Spec.MinAvailable, p.Spec.MaxUnavailable, p.Spec.UnhealthyPodEvictionPolicy = nil, &one, &a
	})
}

// severalReplicas: a budget of one eviction at a time keeps a Pod serving
// only with a second one (one replica is ZD012's to fix).
func severalReplicas(t *target) bool { return t.wl.replicas != nil && *t.wl.replicas >= 2 }

// addPDB is a PodDisruptionBudget for the workload's Pods: one eviction at
// a time, and a Pod that is not ready may always go (ZD022).
func addPDB(t *target) (*Object, string) {
	sel := t.wl.selector
	if sel == nil || len(sel.MatchLabels) == 0 || !severalReplicas(t) {
		return nil, "" // a budget needs the workload's own selector, and a second Pod to keep
	}
	one, always := intstr.FromInt32(1), policyv1.AlwaysAllow
	name := t.wl.obj.Name
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.wl.obj.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, UnhealthyPodEvictionPolicy: &always,
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(sel.MatchLabels)}},
	}
	o := &Object{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Namespace: t.wl.obj.Namespace, Name: name, Obj: pdb,
		Source: Source{File: t.wl.obj.Source.File}}
	return o, fmt.Sprintf("new PodDisruptionBudget %s: maxUnavailable 1, unhealthyPodEvictionPolicy AlwaysAllow, selector %s", name, SelectorString(sel.MatchLabels))
}

// Fixable reports whether Fix can make rule id's fix itself.
func Fixable(id string) bool {
	_, fix := fixers[id]
	_, add := adders[id]
	return fix || add
}

// Fix returns a copy of m with the doctor's fix made for every finding it
// can fix itself, judged with opts as Check would, and what it changed.
// Fixes are applied until Check finds nothing more to fix (a longer preStop
// can call for a longer grace period), at most a few rounds. m is not
// changed.
func Fix(m *Manifests, opts ...Option) (*Manifests, []Applied) {
	cp := copyManifests(m)
	cfg := newConfig(opts)
	var applied []Applied
	for range 4 {
		n := len(applied)
		in := classify(cp, cfg.namespace)
		ix := in.index()
		for _, so := range in.services {
			v := viewService(so, ix, cfg.profile)
			if !v.judged() { // Fix fixes what Check judges
				continue
			}
			for _, wo := range ix.selected(v.svc, so.Namespace) {
				t := v.target(ix, wo, cfg.kubeMinor)
				if t == nil || injectedBy(t.wl, t.c) != "" {
					continue
				}
				for _, rule := range catalogue {
					fix, add := fixers[rule.ID], adders[rule.ID]
					if (fix == nil && add == nil) || rule.check == nil {
						continue
					}
					// The worst lag of the plausible LBs: a fix that holds
					// for it holds for all.
					if len(rule.check(t)) == 0 {
						continue
					}
					if fix != nil {
						if what := fix(t); what != "" {
							applied = append(applied, Applied{RuleID: rule.ID, Object: wo.Ref(), Change: what})
						}
					}
					if add != nil {
						if o, what := add(t); o != nil {
							cp.Objects = append(cp.Objects, o)
							applied = append(applied, Applied{RuleID: rule.ID, Object: wo.Ref(), Change: what})
							break // the next round judges with the new object
						}
					}
				}
			}
		}
		if len(applied) == n {
			break
		}
	}
	return cp, applied
}

// copyManifests deep-copies the typed objects; Objects keep their source
// lines, so findings on the copy point at the user's file.
func copyManifests(m *Manifests) *Manifests {
	out := &Manifests{Skipped: slices.Clone(m.Skipped), Warnings: slices.Clone(m.Warnings)}
	clone := func(o *Object) *Object {
		cp := *o
		if ro, ok := o.Obj.(runtime.Object); ok {
			cp.Obj = ro.DeepCopyObject()
		}
		return &cp
	}
	for _, o := range m.Objects {
		out.Objects = append(out.Objects, clone(o))
	}
	// What the Pods name comes along: a fixed copy run with the user's own
	// image needs it as much as the original.
	for _, o := range m.Referenced {
		out.Referenced = append(out.Referenced, clone(o))
	}
	return out
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// fixPreStop is the preStop of the hardened recipe for Local behind the
// target's LB (harness/recipe, which the bundled workload reads too): the
// LB's lag plus kube-proxy's margin.
func fixPreStop(t *target) string {
	return setPreStop(t, t.recipe(corev1.ServiceExternalTrafficPolicyLocal).PreStop)
}

// recipe is harness/recipe's hardened timing for the target's LB profile
// and the given policy.
func (t *target) recipe(policy corev1.ServiceExternalTrafficPolicy) recipe.Recipe {
	return recipe.Hardened(t.profile.RecipeLB(), policy)
}

// setPreStop makes the serving container's preStop hold SIGTERM back for d
// and keeps the grace period above it: no hook or a sleep action becomes a
// sleep action of d (the kubelet's, no shell needed; on by default from
// Kubernetes 1.30, KEP-3960), a shell command with a sleep gets the longer
// sleep and keeps the rest of its command, and ingress-nginx's
// /wait-shutdown becomes a sleep (what ZD001's fix says: the controller
// then gets its signal after it). Any other hook does more than wait (kong
// quit, a script): the fix is left to a person.
func setPreStop(t *target, d time.Duration) string {
	var changed []string
	if w := setServingPreStop(t, d); w != "" {
		changed = append(changed, w)
	}
	changed = append(changed, holdReadinessGates(t, d)...)
	if len(changed) == 0 {
		return ""
	}
	if g := ensureGrace(t, d); g != "" {
		changed = append(changed, g)
	}
	return strings.Join(changed, "; ")
}

// holdReadinessGates gives every other container of the Pod that has a
// readiness probe the same preStop sleep, so none takes its signal before
// the serving container does, and says what it changed. A Pod is ready
// only while all its containers are (readinessGates), so a sibling that
// stops at once (NGINX Gateway Fabric's controller beside its nginx) turns
// the whole endpoint not serving while the LB still sends the node new
// connections: measured on 2026-11-26 with NGINX Gateway Fabric 1.6.2's
// default install behind gke-l4, the fixed rollout and drain still dropped
// 3 and 25, each window opening 27 and 80 ms after the endpoint stopped
// serving. A sibling whose hook does more than sleep is left to a person.
func holdReadinessGates(t *target, d time.Duration) []string {
	if !t.release().HasSleepAction() {
		return nil
	}
	var held []string
	for _, c := range readinessGates(t) {
		if ps := containerPreStop(c); ps.kind != "none" && (ps.kind != "sleep" || ps.duration >= d) {
			continue
		}
		secs := setSleep(c, d)
		held = append(held, fmt.Sprintf("container %s (its readiness gates the Pod's): lifecycle.preStop.sleep.seconds: %d", c.Name, secs))
	}
	return held
}

// setSleep makes c's preStop the kubelet's sleep action for d, in whole
// seconds, and returns them.
func setSleep(c *corev1.Container, d time.Duration) int64 {
	secs := ceilSeconds(d)
	if c.Lifecycle == nil {
		c.Lifecycle = &corev1.Lifecycle{}
	}
	c.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: secs}}
	return secs
}

// setServingPreStop is setPreStop for the serving container alone; the
// grace period is setPreStop's.
func setServingPreStop(t *target, d time.Duration) string {
	ps := containerPreStop(t.c)
	if ps.known && ps.duration >= d && !ps.signalsApp {
		return ""
	}
	switch {
	case ps.kind == "none" || ps.kind == "sleep" || ps.signalsApp:
		if !t.release().HasSleepAction() {
			return "" // the release has no sleep action to write
		}
		return fmt.Sprintf("container %s: lifecycle.preStop.sleep.seconds: %d", t.c.Name, setSleep(t.c, d))
	case ps.kind == "exec" && ps.known:
		secs := ceilSeconds(d)
		cmd := t.c.Lifecycle.PreStop.Exec.Command
		done := false
		for i, arg := range cmd {
			if m := sleepRE.FindStringSubmatchIndex(arg); m != nil && !done {
				cmd[i] = arg[:m[2]] + strconv.FormatInt(secs, 10) + arg[m[3]:]
				done = true
			}
		}
		if !done {
			return ""
		}
		return fmt.Sprintf("container %s: lifecycle.preStop.exec sleeps %d s (%q)", t.c.Name, secs, strings.Join(cmd, " "))
	}
	return ""
}

// graceSlack is what a grace period keeps above the preStop hook for the
// app's own drain: the recipe's (harness/recipe: the echo server's drain
// of 10 s, plus 5).
const graceSlack = recipe.Drain + recipe.GraceSlack

// ensureGrace keeps the grace period at least graceSlack above a preStop
// hook the fix lengthened (the grace period includes the hook's time).
func ensureGrace(t *target, preStop time.Duration) string {
	if t.wl.grace() >= preStop+graceSlack {
		return ""
	}
	g := ceilSeconds(preStop + graceSlack)
	t.wl.template.Spec.TerminationGracePeriodSeconds = &g
	return fmt.Sprintf("terminationGracePeriodSeconds: %d", g)
}

func fixGrace(t *target) string {
	ps := containerPreStop(t.c)
	g := ceilSeconds(max(30*time.Second, ps.duration+graceSlack))
	t.wl.template.Spec.TerminationGracePeriodSeconds = &g
	return fmt.Sprintf("terminationGracePeriodSeconds: %d", g)
}

// fixSpread spreads the Pods one per node as the bundled hardened workload
// does (fixtures: DoNotSchedule, nodeTaintsPolicy Honor so a cordoned node
// is no domain, matchLabelKeys pod-template-hash so each ReplicaSet spreads
// on its own during a rollout). On a release whose scheduler ignores
// nodeTaintsPolicy (before 1.26, kubeversion.Version.SpreadHonorsTaints) a
// cordoned node would be an empty domain that keeps every rescheduled Pod
// Pending: there the spread is ScheduleAnyway.
func fixSpread(t *target) string {
	honor := corev1.NodeInclusionPolicyHonor
	sel := t.wl.selector
	if sel == nil {
		sel = &metav1.LabelSelector{MatchLabels: t.wl.template.Labels}
	}
	unsatisfiable := corev1.DoNotSchedule
	if !t.release().SpreadHonorsTaints() {
		unsatisfiable = corev1.ScheduleAnyway
	}
	tsc := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: unsatisfiable,
		LabelSelector: sel.DeepCopy(), NodeTaintsPolicy: &honor}
	if t.wl.kind == "Deployment" {
		tsc.MatchLabelKeys = []string{"pod-template-hash"}
	}
	t.wl.template.Spec.TopologySpreadConstraints = append(t.wl.template.Spec.TopologySpreadConstraints, tsc)
	return fmt.Sprintf("topologySpreadConstraints: one per node (kubernetes.io/hostname, maxSkew 1, %s, nodeTaintsPolicy Honor)", unsatisfiable)
}

// fixSpreadCountsTainted (ZD013) leaves the nodes the Pods do not tolerate
// out of every DoNotSchedule spread's domains (nodeTaintsPolicy: Honor);
// before 1.26, whose scheduler cannot, it makes the spread ScheduleAnyway:
// a preference still spreads the Pods and never keeps one Pending.
func fixSpreadCountsTainted(t *target) string {
	honors := t.release().SpreadHonorsTaints()
	var fixed []string
	for i := range t.wl.template.Spec.TopologySpreadConstraints {
		c := &t.wl.template.Spec.TopologySpreadConstraints[i]
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if !honors {
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
			fixed = append(fixed, fmt.Sprintf("topologySpreadConstraints[%d]", i))
			continue
		}
		if c.NodeTaintsPolicy == nil || *c.NodeTaintsPolicy != corev1.NodeInclusionPolicyHonor {
			honor := corev1.NodeInclusionPolicyHonor
			c.NodeTaintsPolicy = &honor
			fixed = append(fixed, fmt.Sprintf("topologySpreadConstraints[%d]", i))
		}
	}
	if len(fixed) == 0 {
		return ""
	}
	if !honors {
		return strings.Join(fixed, ", ") + ": whenUnsatisfiable ScheduleAnyway"
	}
	return strings.Join(fixed, ", ") + ": nodeTaintsPolicy Honor"
}

func fixPDBs(t *target, what string, f func(*policyv1.PodDisruptionBudget)) string {
	n := 0
	for _, o := range t.pdbs {
		if p, ok := o.Obj.(*policyv1.PodDisruptionBudget); ok {
			f(p)
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d PodDisruptionBudget(s): %s", n, what)
}

// fixNoReadiness gives the serving container a readiness probe that needs
// no path: a TCP connect to the port the Service sends to, as often and as
// patient as the hardened recipe's (harness/recipe ServingProbePeriod and
// ServingProbeFailureThreshold). It cannot tell a listening app that
// cannot serve, but it keeps a Pod out of rotation until it listens and
// takes it out once it stops, which is ZD030's drop.
func fixNoReadiness(t *target) string {
	if t.c.ReadinessProbe != nil {
		return ""
	}
	port, ok := servingPort(t)
	if !ok {
		return ""
	}
	t.c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}},
		PeriodSeconds:    int32(recipe.ServingProbePeriod / time.Second),
		FailureThreshold: recipe.ServingProbeFailureThreshold,
	}
	return fmt.Sprintf("container %s: readinessProbe tcpSocket port %s, every %s, unready after %d failures",
		t.c.Name, port.String(), recipe.ServingProbePeriod, recipe.ServingProbeFailureThreshold)
}

// servingPort is the serving container's port the Service sends to: a
// target port the container declares (by name or number), else the first
// Service port's target (a container need not declare the ports it
// listens on).
func servingPort(t *target) (intstr.IntOrString, bool) {
	var number *intstr.IntOrString
	for _, sp := range t.svc.Spec.Ports {
		if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
			// A TCP probe of a UDP port never succeeds: the Pod would
			// never be ready.
			continue
		}
		tp := TargetPort(sp)
		for _, cp := range t.c.Ports {
			if (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) && Declares(cp, tp) {
				return tp, true
			}
		}
		// A name the container does not declare cannot be probed; a
		// number can, declared or not.
		if number == nil && tp.Type == intstr.Int {
			number = &tp
		}
	}
	if number == nil {
		return intstr.IntOrString{}, false
	}
	return *number, true
}

func fixRollout(t *target) string {
	d, ok := t.wl.obj.Obj.(*appsv1.Deployment)
	if !ok {
		return ""
	}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one}}
	return "strategy: RollingUpdate, maxUnavailable 0, maxSurge 1"
}

// setReplicas raises the replicas (or an HPA's minReplicas, which owns
// them) to n.
func setReplicas(w *workload, n int32) bool {
	if w.hpa != nil {
		h := w.hpa.Obj.(*autoscalingv2.HorizontalPodAutoscaler)
		h.Spec.MinReplicas = &n
		if h.Spec.MaxReplicas < n {
			h.Spec.MaxReplicas = n
		}
		return true
	}
	switch o := w.obj.Obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	default:
		return false
	}
	return true
}

func setMinReady(w *workload, secs int32) bool {
	switch o := w.obj.Obj.(type) {
	case *appsv1.Deployment:
		o.Spec.MinReadySeconds = secs
	case *appsv1.StatefulSet:
		o.Spec.MinReadySeconds = secs
	case *appsv1.DaemonSet:
		o.Spec.MinReadySeconds = secs
	default:
		return false
	}
	return true
}
