package standin

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"zerodrop.dev/zerodrop/harness/doctor"
)

// view is what the knobs read of a workload, its Service and PDBs; the
// user's input and the stand-in are both read through it, so "kept" means
// the same getter returned equal values on both.
type view struct {
	kind     string
	replicas *int32
	minReady int32
	// strategy is the Deployment's strategy, or the StatefulSet's update
	// strategy and pod management policy.
	strategy any
	tpl      *corev1.PodTemplateSpec
	svc      *corev1.Service
	pdbs     []policyv1.PodDisruptionBudgetSpec
}

// replicasOrDefault is the replicas with the API default (1) when unset,
// so an unset count and the stand-in's explicit 1 read as the same knob.
func replicasOrDefault(r *int32) *int32 {
	if r == nil {
		one := int32(1)
		return &one
	}
	return r
}

func deploymentView(d *appsv1.Deployment) view {
	return view{kind: "Deployment", replicas: replicasOrDefault(d.Spec.Replicas), minReady: d.Spec.MinReadySeconds,
		strategy: d.Spec.Strategy, tpl: d.Spec.Template.DeepCopy()}
}

func statefulSetView(s *appsv1.StatefulSet) view {
	return view{kind: "StatefulSet", replicas: replicasOrDefault(s.Spec.Replicas), minReady: s.Spec.MinReadySeconds,
		strategy: struct {
			UpdateStrategy      appsv1.StatefulSetUpdateStrategy
			PodManagementPolicy appsv1.PodManagementPolicyType
		}{s.Spec.UpdateStrategy, s.Spec.PodManagementPolicy}, tpl: s.Spec.Template.DeepCopy()}
}

func pdbSpecs(objs []*doctor.Object) []policyv1.PodDisruptionBudgetSpec {
	var out []policyv1.PodDisruptionBudgetSpec
	for _, o := range objs {
		out = append(out, *o.Obj.(*policyv1.PodDisruptionBudget).Spec.DeepCopy())
	}
	return out
}

// Knob is one setting that decides whether a disruption drops requests.
type Knob struct {
	Name string
	// Why it decides drops.
	Why string
	get func(v view) any
}

// KnobState is one knob of a built stand-in: kept as written, or not.
type KnobState struct {
	Name string `json:"name"`
	Kept bool   `json:"kept"`
	Was  string `json:"was,omitempty"`
	Now  string `json:"now,omitempty"`
}

// podKnobs are the Pod-level knobs; containerKnobs are read per container.
var podKnobs = []Knob{
	{"replicas", "how many endpoints a disruption can take away", func(v view) any { return v.replicas }},
	{"update strategy", "how many Pods a rollout replaces at once (maxSurge, maxUnavailable, partition)", func(v view) any { return v.strategy }},
	{"minReadySeconds", "how long a new Pod must be ready before a rollout moves on", func(v view) any { return v.minReady }},
	{"Pod labels", "what the Service and the PDBs select", func(v view) any { return v.tpl.Labels }},
	{"terminationGracePeriodSeconds", "how long a terminating Pod may keep serving", func(v view) any { return v.tpl.Spec.TerminationGracePeriodSeconds }},
	{"affinity", "which nodes and pools the Pods share", func(v view) any { return v.tpl.Spec.Affinity }},
	{"topologySpreadConstraints", "how evenly Pods spread over nodes (Local's per-node shares)", func(v view) any { return v.tpl.Spec.TopologySpreadConstraints }},
	{"tolerations", "which tainted nodes the Pods stay on", func(v view) any { return v.tpl.Spec.Tolerations }},
	{"nodeSelector", "which pool the Pods live in", func(v view) any { return v.tpl.Spec.NodeSelector }},
	{"readinessGates", "extra conditions a Pod needs to be ready", func(v view) any { return v.tpl.Spec.ReadinessGates }},
	{"PodDisruptionBudgets", "how many Pods a drain may evict at once", func(v view) any { return v.pdbs }},
	{"Service type", "LoadBalancer", func(v view) any { return v.svc.Spec.Type }},
	{"externalTrafficPolicy", "Local: only nodes with a ready endpoint take traffic", func(v view) any { return v.svc.Spec.ExternalTrafficPolicy }},
	{"internalTrafficPolicy", "where in-cluster traffic goes", func(v view) any { return v.svc.Spec.InternalTrafficPolicy }},
	{"Service annotations", "the LB's health check and draining settings", func(v view) any { return v.svc.Annotations }},
	{"Service ports", "which container port the LB reaches", func(v view) any { return servicePorts(v.svc) }},
	{"Service selector", "which Pods are endpoints", func(v view) any { return v.svc.Spec.Selector }},
	{"sessionAffinity", "whether a client sticks to one endpoint", func(v view) any {
		return []any{v.svc.Spec.SessionAffinity, v.svc.Spec.SessionAffinityConfig}
	}},
	{"publishNotReadyAddresses", "whether unready Pods stay endpoints", func(v view) any { return v.svc.Spec.PublishNotReadyAddresses }},
}

var containerKnobs = []Knob{
	{"ports", "what the Service's target port names", nil},
	{"readinessProbe", "when a Pod stops being an endpoint", nil},
	{"livenessProbe", "when a Pod is restarted", nil},
	{"startupProbe", "when the other probes begin", nil},
	{"lifecycle", "the preStop hook that holds SIGTERM back", nil},
}

// Knobs lists every knob the stand-in keeps (container knobs once; they are
// read per container).
func Knobs() []Knob {
	out := append([]Knob(nil), podKnobs...)
	for _, k := range containerKnobs {
		out = append(out, Knob{Name: "containers[*]." + k.Name, Why: k.Why})
	}
	return out
}

func containerKnob(name string, c *corev1.Container) any {
	switch name {
	case "ports":
		return c.Ports
	case "readinessProbe":
		return c.ReadinessProbe
	case "livenessProbe":
		return c.LivenessProbe
	case "startupProbe":
		return c.StartupProbe
	case "lifecycle":
		return c.Lifecycle
	}
	panic("standin: unknown container knob " + name)
}

// servicePorts are the Service's ports without the node ports the
// cluster allocates.
func servicePorts(s *corev1.Service) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, p := range s.Spec.Ports {
		p.NodePort = 0
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		out = append(out, p)
	}
	return out
}

// compare reads every knob of in and out.
func compare(in, out view) []KnobState {
	var states []KnobState
	add := func(name string, a, b any) {
		st := KnobState{Name: name, Kept: equality.Semantic.DeepEqual(a, b)}
		if !st.Kept {
			st.Was, st.Now = show(a), show(b)
		}
		states = append(states, st)
	}
	for _, k := range podKnobs {
		add(k.Name, k.get(in), k.get(out))
	}
	for i := range in.tpl.Spec.Containers {
		ci := &in.tpl.Spec.Containers[i]
		var co *corev1.Container
		if i < len(out.tpl.Spec.Containers) {
			co = &out.tpl.Spec.Containers[i]
		}
		for _, k := range containerKnobs {
			var b any
			if co != nil {
				b = containerKnob(k.Name, co)
			}
			add(fmt.Sprintf("containers[%s].%s", ci.Name, k.Name), containerKnob(k.Name, ci), b)
		}
	}
	return states
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
