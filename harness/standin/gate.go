package standin

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// GateFor gives the stand-in's Pods the readiness gate of the LB under
// test, p, where the user's Pods would carry that vendor's gate (GateChange
// says where), each addition a Change. The test LB injects nothing itself:
// the gate is written into the template. An LB with no gate, or a workload
// its vendor would not gate, is left as built (without the user's gates,
// which only their own controller sets).
func (s *StandIn) GateFor(p profiles.Profile) {
	ch, ok := s.GateChange(p)
	if !ok {
		return
	}
	tpl := s.template()
	tpl.Spec.ReadinessGates = append(tpl.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(ch.Now)})
	s.Changes = append(s.Changes, ch)
}

// GateChange is the change GateFor makes for p, and whether it makes one:
// p has a gate the Pods do not carry yet, and the user's Pods would carry
// that vendor's: the template names one of the same domain (AWS names one
// per target group binding, target-health.elbv2.k8s.aws/<binding>, which
// the test LB cannot match by name), or the vendor injects it into every
// Pod it targets (GKE NEG), or into the Pods of a namespace labelled so
// and the input's Namespace is.
func (s *StandIn) GateChange(p profiles.Profile) (Change, bool) {
	g := p.ReadinessGate()
	if g == nil || s.hasGate(g.ConditionType) || s.template() == nil {
		return Change{}, false
	}
	domain := func(c string) string { d, _, _ := strings.Cut(c, "/"); return d }
	var why string
	switch i := slices.IndexFunc(s.Gates, func(c string) bool { return domain(c) == domain(g.ConditionType) }); {
	case i >= 0:
		why = fmt.Sprintf("the user's Pods name %s, which their LB controller sets; the test LB (profile %s) sets %s the same way, once its check of the Pod passes",
			s.Gates[i], p.Name, g.ConditionType)
	case g.Injected == profiles.GateInjectedAlways:
		why = fmt.Sprintf("the LB's controller injects this gate into every Pod it targets (profile %s); the test LB sets it once its check of the Pod passes", p.Name)
	case g.InjectedIn(s.NamespaceLabels):
		why = fmt.Sprintf("the user's namespace is labelled %s, so the LB's controller injects this gate (profile %s); the test LB sets it once its check of the Pod passes",
			g.NamespaceLabel, p.Name)
	default:
		return Change{}, false
	}
	return Change{Object: strings.ToLower(s.Kind) + "/" + s.Namespace + "/" + s.Name,
		Field: "spec.template.spec.readinessGates", Now: g.ConditionType, Why: why}, true
}

// hasGate reports whether the stand-in's Pod template names condition.
func (s *StandIn) hasGate(condition string) bool {
	tpl := s.template()
	return tpl != nil && slices.ContainsFunc(tpl.Spec.ReadinessGates, func(r corev1.PodReadinessGate) bool { return string(r.ConditionType) == condition })
}

// template is the stand-in workload's Pod template.
func (s *StandIn) template() *corev1.PodTemplateSpec {
	switch w := s.WorkloadObj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	}
	return nil
}

// Gated reports whether the stand-in's Pods carry p's readiness gate in a
// cell on p (GateFor), so a new Pod is Ready only once the LB's first
// checks of it passed.
func (s *StandIn) Gated(p profiles.Profile) bool {
	g := p.ReadinessGate()
	if g == nil {
		return false
	}
	_, adds := s.GateChange(p)
	return adds || s.hasGate(g.ConditionType)
}
