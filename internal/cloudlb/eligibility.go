package cloudlb

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"zerodrop/clusters/lb/profiles"
)

// Standard labels that keep a node out of every cloud LB (the service controller
// honours them on every version).
const (
	labelExcludeLB      = "node.kubernetes.io/exclude-from-external-load-balancers"
	labelControlPlane   = "node-role.kubernetes.io/control-plane"
	taintToBeDeletedCAS = "ToBeDeletedByClusterAutoscaler"
)

// Ineligible says why a node is not a backend; empty when it is one.
type Ineligible string

// NodeEligibility decides whether node may back svc under the profile, and why not.
// Rules: control-plane and exclude-labelled nodes never; NotReady nodes never;
// cordoned nodes only when the profile excludes them (pre-1.27 behaviour);
// with a pool rule, only nodes whose pool label matches the Service's pool.
func NodeEligibility(p profiles.Profile, svc *corev1.Service, node *corev1.Node) Ineligible {
	if _, ok := node.Labels[labelControlPlane]; ok {
		return "control-plane node"
	}
	if _, ok := node.Labels[labelExcludeLB]; ok {
		return Ineligible("labelled " + labelExcludeLB)
	}
	if !node.DeletionTimestamp.IsZero() {
		return "node is being deleted"
	}
	for _, t := range node.Spec.Taints {
		if t.Key == taintToBeDeletedCAS {
			return "tainted " + taintToBeDeletedCAS
		}
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "node is not Ready"
	}
	if p.Eligibility.ExcludeUnschedulable && node.Spec.Unschedulable {
		return "node is cordoned (unschedulable) and profile " + Ineligible(p.Name) + " drops cordoned nodes"
	}
	if pool := ServicePool(p, svc); pool != "" {
		if got := node.Labels[p.Eligibility.PoolLabel]; got != pool {
			return Ineligible(fmt.Sprintf("node pool %q (label %s) is not the Service's pool %q", got, p.Eligibility.PoolLabel, pool))
		}
	}
	return ""
}

// ServicePool is the nodepool a pool-scoped profile restricts svc to ("" when none).
func ServicePool(p profiles.Profile, svc *corev1.Service) string {
	e := p.Eligibility
	if e.PoolLabel == "" {
		return ""
	}
	if svc != nil {
		for _, a := range e.PoolAnnotations {
			if v := svc.Annotations[a]; v != "" {
				return v
			}
		}
	}
	return e.DefaultPool
}

// EligibleNodes returns the names of the nodes that may back svc, sorted, and the
// reason for each one left out.
func EligibleNodes(p profiles.Profile, svc *corev1.Service, nodes []*corev1.Node) (eligible []string, excluded map[string]Ineligible) {
	excluded = map[string]Ineligible{}
	for _, n := range nodes {
		if why := NodeEligibility(p, svc, n); why != "" {
			excluded[n.Name] = why
			continue
		}
		eligible = append(eligible, n.Name)
	}
	sort.Strings(eligible)
	return eligible, excluded
}
