package doctor

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// Unfixed is a finding that still predicts drops (an error) in what Fix
// returned: the doctor could not write its fix, and Reason says why and
// what a person must do instead.
type Unfixed struct {
	RuleID  string `json:"rule"`
	Object  string `json:"object"`
	Service string `json:"service"`
	Reason  string `json:"reason"`
}

func (u Unfixed) String() string { return u.RuleID + " " + u.Object + ": " + u.Reason }

// needsAPerson says, for each rule that can predict drops and has no fixer
// or adder, why its fix is a person's: the choice it needs is not in the
// manifests. A rule missing here falls back to its own Fix text.
var needsAPerson = map[string]string{
	"ZD011": "which node pool the Pods run in and which the LB sends to is the owner's choice, and the two must name the same pool",
	"ZD021": "which of the overlapping PodDisruptionBudgets to keep (or how to split the Pods between them) is the owner's choice; " +
		"the doctor never deletes an object",
}

// Unfixable lists every error finding of m, judged with opts as Check
// would, with why Fix could not clear it. m is what Fix returned: a
// finding Fix can clear is gone from it, so what is left is either a rule
// without a fix the doctor writes (needsAPerson) or a case its fix does
// not cover (whyNotFixed).
func Unfixable(m *Manifests, opts ...Option) []Unfixed {
	cfg := newConfig(opts)
	in := classify(m, cfg.namespace)
	ix := in.index()
	var out []Unfixed
	seen := map[string]bool{}
	for _, so := range in.services {
		v := viewService(so, ix, cfg.profile)
		if !v.judged() {
			continue
		}
		for _, wo := range ix.selected(v.svc, so.Namespace) {
			t := v.target(ix, wo, cfg.kubeMinor)
			if t == nil {
				continue
			}
			targetHits(t, wo, v.choice, func(rule Rule, h hit, obj *Object) {
				if h.res.sev < Error {
					return
				}
				u := Unfixed{RuleID: rule.ID, Object: obj.Ref(), Service: so.Ref(), Reason: whyNotFixed(rule, t, h.res)}
				if key := u.Service + "|" + u.String(); !seen[key] {
					seen[key] = true
					out = append(out, u)
				}
			})
		}
	}
	return out
}

// whyNotFixed is why Fix left rule's finding res on target t, read from
// the conditions each fixer stops at (fix.go).
func whyNotFixed(rule Rule, t *target, res result) string {
	advice := rule.Fix
	if res.fix != "" {
		advice = res.fix
	}
	if !Fixable(rule.ID) {
		if why, ok := needsAPerson[rule.ID]; ok {
			return "no automatic fix: " + why + ". " + advice
		}
		return "no automatic fix for " + rule.ID + ". " + advice
	}
	if injected := injectedBy(t.wl, t.c); injected != "" {
		return fmt.Sprintf("container %s is %s, written at admission: a fix to the manifests would not reach it. %s", t.c.Name, injected, advice)
	}
	switch rule.ID {
	case "ZD001", "ZD002", "ZD004":
		ps := containerPreStop(t.c)
		switch {
		case (ps.kind == "none" || ps.kind == "sleep" || ps.signalsApp) && !t.release().HasSleepAction():
			return fmt.Sprintf("Kubernetes 1.%d has no kubelet sleep action (1.30 and later) for the doctor to write, and the "+
				"container's hook is no shell command whose sleep it could lengthen: add a preStop that waits (a sleep in the "+
				"image's shell), or judge for 1.30 and later. %s", t.kubeMinor, advice)
		case ps.kind != "none" && ps.kind != "sleep" && !ps.signalsApp:
			return fmt.Sprintf("the preStop hook (%s) does more than wait, and the doctor lengthens only a sleep: make the hook "+
				"wait first, or have the app keep accepting as long. %s", ps, advice)
		}
	case "ZD007":
		switch {
		case t.svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
			return "the Service is not of type LoadBalancer, so it has no healthCheckNodePort for the LB's check to ask: " +
				"the check is the front end's to point at kube-proxy. " + advice
		case !t.profile.Profile.BackendConfig:
			return fmt.Sprintf("the LB (profile %s) lets no Service choose its check: keep more than one Pod per node, or "+
				"use container-native (Pod) backends. %s", t.profile.Name, advice)
		}
		if _, err := profiles.ServiceBackendConfig(t.svc); err != nil {
			return fmt.Sprintf("the Service's %s annotation cannot be read (%v): the doctor does not rewrite it. %s",
				profiles.BackendConfigAnnotation, err, advice)
		}
	case "ZD024":
		switch {
		case !severalReplicas(t):
			return "one replica: a budget keeps a Pod serving only while a second one exists, so the doctor writes none " +
				"(run at least 2 replicas, ZD012). " + advice
		case len(t.pdbs) == 0 && (t.wl.selector == nil || len(t.wl.selector.MatchLabels) == 0):
			return "the workload's selector has no matchLabels for a new budget to copy: write the budget yourself. " + advice
		}
	case "ZD030":
		if _, ok := servingPort(t); !ok {
			return "the Service sends to no TCP port the serving container declares or that is a number, so the doctor has " +
				"no port to probe: write a readiness probe of the port it serves. " + advice
		}
	case "ZD032":
		switch t.wl.obj.Obj.(type) {
		case *appsv1.Deployment:
		case *appsv1.StatefulSet:
			return "a StatefulSet cannot surge, and its replicas and budget are the owner's choice. " + advice
		default:
			return fmt.Sprintf("the doctor writes a surge rollout for Deployments only, not a %s. %s", t.wl.kind, advice)
		}
	}
	return "the doctor's fix did not clear it here. " + advice
}
