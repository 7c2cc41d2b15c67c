package standin

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"zerodrop.dev/zerodrop/harness/doctor"
)

// Placeable returns the nodes the stand-in's Pods may run on as the
// scheduler's filters would have it for node selection: nodeSelector and
// required node affinity (nodeaffinity.GetRequiredNodeAffinity, the
// scheduler's own helper) and NoSchedule/NoExecute taints the Pods do not
// tolerate. Resources are not requested by the stand-in, and unschedulable
// (cordoned) nodes are left out. When none fits, why says what each node
// lacks, so the user can label a test pool or widen the placement.
func (s *StandIn) Placeable(nodes []corev1.Node) (fit []string, why string) {
	tpl, _, _ := s.Spec()
	pod := &corev1.Pod{Spec: tpl.Spec}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	var reasons []string
	for i := range nodes {
		n := &nodes[i]
		if n.Spec.Unschedulable {
			reasons = append(reasons, n.Name+": cordoned")
			continue
		}
		ok, err := req.Match(n)
		if err != nil {
			return nil, fmt.Sprintf("the Pods' node affinity is invalid: %v", err)
		}
		if !ok {
			reasons = append(reasons, n.Name+": "+missingLabels(tpl.Spec.NodeSelector, n))
			continue
		}
		taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(n.Spec.Taints, tpl.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		})
		if untolerated {
			reasons = append(reasons, fmt.Sprintf("%s: taint %s=%s:%s not tolerated", n.Name, taint.Key, taint.Value, taint.Effect))
			continue
		}
		fit = append(fit, n.Name)
	}
	sort.Strings(fit)
	if len(fit) == 0 {
		why = strings.Join(reasons, "; ")
	}
	return fit, why
}

func missingLabels(sel map[string]string, n *corev1.Node) string {
	var miss []string
	for k, v := range sel {
		if n.Labels[k] != v {
			miss = append(miss, k+"="+v)
		}
	}
	sort.Strings(miss)
	if len(miss) == 0 {
		return "its labels do not satisfy the required node affinity"
	}
	return "lacks " + strings.Join(miss, ", ")
}

// OnePerNode reports whether the Pods' required anti-affinity keeps two of
// them off one node (topologyKey kubernetes.io/hostname, a selector that
// matches the Pods' own labels, in their own namespace): then N replicas
// need N nodes that fit, and a rollout RolloutNodes.
func (s *StandIn) OnePerNode() bool {
	tpl, _, _ := s.Spec()
	aff := tpl.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		return false
	}
	for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || len(term.Namespaces) > 0 || term.NamespaceSelector != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(tpl.Labels)) {
			return true
		}
	}
	return false
}

// RolloutNodes is how many nodes that take the Pods a rollout needs to
// progress when OnePerNode holds: a Deployment that may not go below its
// replicas (maxUnavailable 0 once resolved) must place its surge Pods
// first, each on a node of its own; otherwise, or for a StatefulSet (which
// replaces a Pod in place), the replicas' own.
func (s *StandIn) RolloutNodes() int {
	d, ok := s.WorkloadObj.(*appsv1.Deployment)
	if !ok {
		return int(s.Replicas)
	}
	surge, unavailable, err := doctor.RolloutFenceposts(d.Spec.Strategy, s.Replicas)
	if err != nil || unavailable > 0 {
		return int(s.Replicas)
	}
	return int(s.Replicas + surge)
}
