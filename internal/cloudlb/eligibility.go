package cloudlb

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// Labels and taints the Kubernetes service controller reads (k8s.io/api
// core/v1 LabelNodeExcludeBalancers; k8s.io/cloud-provider
// controllers/service ToBeDeletedTaint).
const (
	labelExcludeLB      = corev1.LabelNodeExcludeBalancers
	labelControlPlane   = "node-role.kubernetes.io/control-plane"
	taintToBeDeletedCAS = contract.TaintToBeDeletedByClusterAutoscaler
)

// ServiceControllerRules is how the Kubernetes service controller of one
// minor version picks the nodes it hands to a cloud LB, and which node changes
// make it hand over a new set. Cloud LBs only ever see that set: a node the
// controller has not re-synced stays a backend whatever happened to it.
//
// Every rule is read from k8s.io/cloud-provider controllers/service/controller.go
// of the version (the module of the same minor, v0.<minor>.0); Kubernetes 1.18
// and older kept the controller in kubernetes/kubernetes pkg/controller/service.
type ServiceControllerRules struct {
	// Since is the first minor version (1.Since) the rules hold for.
	Since int
	// NotReadyCluster / NotReadyLocal: NotReady nodes are left out for
	// Services with externalTrafficPolicy Cluster / Local.
	NotReadyCluster, NotReadyLocal bool
	// Tainted: nodes with the cluster autoscaler's ToBeDeletedByClusterAutoscaler taint are left out.
	Tainted bool
	// Deleting: nodes with a deletionTimestamp are left out.
	Deleting bool
	// LabelValue: the exclusion label's value is parsed ("false" keeps the
	// node); before, the key alone excluded it.
	LabelValue bool
	// SyncOnPredicates: any change of the above re-syncs the LBs at once.
	// Without it only a change of the exclusion label (and a node's
	// arrival, departure or providerID) does: a node that turns NotReady or
	// gets the taint stays in every LB until a re-sync for another reason.
	SyncOnPredicates bool
	// Source names the code the row was read from.
	Source string
}

// serviceControllerRules, newest first. Rows before 1.19 are not listed: the
// oldest kind node images zerodrop supports are far newer.
var serviceControllerRules = []ServiceControllerRules{
	{Since: 34, Deleting: true, Tainted: true, LabelValue: true,
		Source: "k8s.io/cloud-provider v0.34 stableNodeSetPredicates (nodeNotDeletedPredicate, nodeIncludedPredicate with strconv.ParseBool, nodeUnTaintedPredicate); shouldSyncUpdatedNode re-syncs only on nodeIncludedPredicate or Spec.ProviderID changes"},
	{Since: 27, Deleting: true, Tainted: true,
		Source: "k8s.io/cloud-provider v0.27-v0.33 stableNodeSetPredicates under StableLoadBalancerNodeSet (KEP-3458: beta and on by default in 1.27, GA in 1.30); shouldSyncUpdatedNode re-syncs only on the exclusion label (and, from v0.29, Spec.ProviderID)"},
	{Since: 25, NotReadyCluster: true, Tainted: true, SyncOnPredicates: true,
		Source: "k8s.io/cloud-provider v0.25-v0.26 getNodePredicatesForService: etpLocalNodePredicates (included, untainted) for Local, allNodePredicates (+ nodeReadyPredicate) for Cluster; shouldSyncUpdatedNode re-syncs when allNodePredicates flip"},
	{Since: 23, NotReadyCluster: true, NotReadyLocal: true, Tainted: true, SyncOnPredicates: true,
		Source: "k8s.io/cloud-provider v0.23-v0.24 getNodeConditionPredicate (exclusion label, ToBeDeletedByClusterAutoscaler taint, NodeReady); shouldSyncNode re-syncs on label, unschedulable and Ready changes"},
	{Since: 19, NotReadyCluster: true, NotReadyLocal: true, SyncOnPredicates: true,
		Source: "k8s.io/cloud-provider v0.19-v0.22 getNodeConditionPredicate (exclusion label, NodeReady); shouldSyncNode re-syncs on label, unschedulable and Ready changes"},
}

// RulesFor returns the service controller rules of Kubernetes 1.minor. A
// minor older than every row gets the oldest row, and ok is false.
func RulesFor(minor int) (r ServiceControllerRules, ok bool) {
	for _, r := range serviceControllerRules {
		if minor >= r.Since {
			return r, true
		}
	}
	return serviceControllerRules[len(serviceControllerRules)-1], false
}

// LatestRules are the rules of the newest version zerodrop knows.
func LatestRules() ServiceControllerRules { return serviceControllerRules[0] }

// String is "Kubernetes >= 1.27 service controller".
func (r ServiceControllerRules) String() string {
	return fmt.Sprintf("Kubernetes >= 1.%d service controller", r.Since)
}

// Excluded says why the service controller leaves node out of svc's LB; empty
// when it hands the node over.
func (r ServiceControllerRules) Excluded(svc *corev1.Service, node *corev1.Node) Ineligible {
	if r.labelExcludes(node) {
		return Ineligible(fmt.Sprintf("labelled %s=%q", labelExcludeLB, node.Labels[labelExcludeLB]))
	}
	if r.Deleting && !node.DeletionTimestamp.IsZero() {
		return "node is being deleted"
	}
	if r.Tainted {
		for _, t := range node.Spec.Taints {
			if t.Key == taintToBeDeletedCAS {
				return "tainted " + taintToBeDeletedCAS
			}
		}
	}
	local := svc != nil && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if (local && r.NotReadyLocal) || (!local && r.NotReadyCluster) {
		if !nodeReady(node) {
			return "node is not Ready"
		}
	}
	return ""
}

// Resyncs reports whether the change from old to cur makes the service
// controller hand every LB a new node set.
func (r ServiceControllerRules) Resyncs(old, cur *corev1.Node) bool {
	if !r.SyncOnPredicates {
		return r.labelExcludes(old) != r.labelExcludes(cur) || old.Spec.ProviderID != cur.Spec.ProviderID
	}
	// Every predicate change re-synced (1.19-1.24 also re-synced on any label
	// or schedulability change, which cannot change the set).
	for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
		svc := &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: policy}}
		if (r.Excluded(svc, old) == "") != (r.Excluded(svc, cur) == "") {
			return true
		}
	}
	return false
}

func (r ServiceControllerRules) labelExcludes(n *corev1.Node) bool {
	v, ok := n.Labels[labelExcludeLB]
	if !ok || !r.LabelValue {
		return ok
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Ineligible says why a node is not a backend; empty when it is one.
type Ineligible string

// IneligibleNotRegistered says why the vendor's controller does not register
// (or deregisters) a Pod target under rule (profiles.Pods.Register).
func IneligibleNotRegistered(rule string, t podTarget) Ineligible {
	if t.Terminating {
		return "endpoint terminating: deregistered"
	}
	return Ineligible("endpoint not ready: not registered (pods.register " + rule + ")")
}

// NodeEligibility decides whether node may back svc under the profile and the
// service controller's rules, and why not: the rules (ServiceControllerRules)
// first, then the cloud's own (ProfileExcludes).
func NodeEligibility(p profiles.Profile, r ServiceControllerRules, svc *corev1.Service, node *corev1.Node) Ineligible {
	if why := r.Excluded(svc, node); why != "" {
		return why
	}
	return ProfileExcludes(p, svc, node)
}

// ProfileExcludes says why the cloud itself leaves a node the service
// controller handed over out of svc's backends: control-plane nodes never
// (kubeadm labels them with the exclusion label; the role label covers
// clusters made without it), cordoned nodes when the profile keeps a
// historical rule (gke-legacy), and with a pool rule every node whose pool
// label is not the Service's pool (azure-basic). These follow the node at
// once, whatever the service controller re-syncs.
func ProfileExcludes(p profiles.Profile, svc *corev1.Service, node *corev1.Node) Ineligible {
	if _, ok := node.Labels[labelControlPlane]; ok {
		return "control-plane node"
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
func EligibleNodes(p profiles.Profile, r ServiceControllerRules, svc *corev1.Service, nodes []*corev1.Node) (eligible []string, excluded map[string]Ineligible) {
	excluded = map[string]Ineligible{}
	for _, n := range nodes {
		if why := NodeEligibility(p, r, svc, n); why != "" {
			excluded[n.Name] = why
			continue
		}
		eligible = append(eligible, n.Name)
	}
	sort.Strings(eligible)
	return eligible, excluded
}
