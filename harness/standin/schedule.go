package standin

import (
	"fmt"
	"slices"
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

// SpreadStalls says why the stand-in's Pods cannot be placed again on
// these nodes after a disruption ("" when they can): rollout for the first
// surge Pod of a rollout, drain for the Pods of a node drained alone.
//
// A required spread per node (whenUnsatisfiable DoNotSchedule,
// topologyKey kubernetes.io/hostname) counts as a domain every node that
// matches the Pods' node affinity, and with nodeTaintsPolicy Ignore (the
// default) also the nodes whose taints the Pods do not tolerate, cordoned
// ones included (k8s.io/kubernetes v1.37.2
// pkg/scheduler/framework/plugins/podtopologyspread/common.go,
// filterTopologySpreadConstraints; filtering.go: a node is rejected when
// its matching Pods + 1 - the global minimum exceed maxSkew; the doctor's
// ZD013 reads the same rule from the manifest alone). Such a node never
// gets a Pod, so the minimum stays 0, and once the nodes that take the
// Pods hold maxSkew each a new Pod fits nowhere: a rollout's surge Pod when
// a tainted node is among them, and the Pods of a drained node in any case,
// since the drain cordons it. fit are the nodes that take the Pods
// (Placeable). The replicas are assumed spread as evenly as the
// constraint allows (the best case). A Deployment that may go below its
// replicas (maxUnavailable above 0 once resolved) removes an old Pod
// first, and a StatefulSet replaces in place, so neither rollout stalls,
// nor does one whose constraint's matchLabelKeys name pod-template-hash
// (it counts the new ReplicaSet's Pods only).
func (s *StandIn) SpreadStalls(nodes []corev1.Node, fit []string) (rollout, drain string) {
	if len(fit) == 0 {
		return "", ""
	}
	tpl, _, _ := s.Spec()
	pod := &corev1.Pod{Spec: tpl.Spec}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	takes := map[string]bool{}
	for _, n := range fit {
		takes[n] = true
	}
	surges := false
	if d, ok := s.WorkloadObj.(*appsv1.Deployment); ok {
		surge, unavailable, err := doctor.RolloutFenceposts(d.Spec.Strategy, s.Replicas)
		surges = err == nil && unavailable == 0 && surge > 0
	}
	for _, c := range tpl.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule || c.TopologyKey != corev1.LabelHostname || c.MaxSkew < 1 {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil || sel.Empty() || !sel.Matches(labels.Set(tpl.Labels)) {
			continue
		}
		if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
			continue // a node whose taints are not tolerated is no domain
		}
		// Spread evenly, the emptiest node that takes Pods holds
		// replicas / len(fit) of them.
		least := int(s.Replicas) / len(fit)
		if least < int(c.MaxSkew) {
			continue
		}
		// Domains the constraint counts that never take a Pod.
		var empty []string
		for i := range nodes {
			n := &nodes[i]
			if takes[n.Name] {
				continue
			}
			if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
				if ok, err := req.Match(n); err != nil || !ok {
					continue
				}
			}
			empty = append(empty, n.Name)
		}
		sort.Strings(empty)
		full := fmt.Sprintf("with %d replicas on %d nodes (%s) each holds at least %d, maxSkew %d", s.Replicas, len(fit), strings.Join(fit, ", "), least, c.MaxSkew)
		if rollout == "" && surges && len(empty) > 0 && !slices.Contains(c.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey) {
			rollout = fmt.Sprintf("its required spread per node (nodeTaintsPolicy %s) counts %s, which takes none of the Pods, as a domain holding 0: "+
				"%s, so the surge Pod of a rollout with maxUnavailable 0 fits nowhere and the rollout waits forever "+
				"(nodeTaintsPolicy: Honor, the doctor's ZD013 fix, leaves such nodes out)", policyName(c.NodeTaintsPolicy), strings.Join(empty, ", "), full)
		}
		if drain == "" {
			drain = fmt.Sprintf("its required spread per node (nodeTaintsPolicy %s) counts the drained node, cordoned, as a domain holding 0: "+
				"%s, so the drained node's Pods fit nowhere and stay Pending until it is uncordoned "+
				"(nodeTaintsPolicy: Honor, the doctor's ZD013 fix, leaves such nodes out)", policyName(c.NodeTaintsPolicy), full)
		}
	}
	return rollout, drain
}

func policyName(p *corev1.NodeInclusionPolicy) string {
	if p == nil {
		return string(corev1.NodeInclusionPolicyIgnore) + ", the default"
	}
	return string(*p)
}
