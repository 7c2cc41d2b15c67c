package suites

import (
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/harness/incident"
)

// consolidation is Karpenter removing a node it consolidates (the
// consolidation incident): taint karpenter.sh/disrupted, the exclusion
// label, a drain at the PDBs' pace, the machine terminated, the Node
// deleted.
func consolidation() Scenario {
	d := departure{What: "Karpenter consolidation", Exclude: "karpenter", Drain: true, By: "Karpenter's disruption",
		Taint: &corev1.Taint{Key: contract.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule}}
	return d.scenario(Scenario{
		Name: "consolidation",
		Description: "Karpenter consolidates a node that holds endpoints: taint " + contract.TaintKarpenterDisrupted +
			", label it out of the LBs, drain it at the PDBs' pace, terminate the machine, delete the node, under load.",
		Seeds:  []string{incident.Consolidation},
		Hazard: evictionHazard,
		Prevented: evictionRace("2026-11-28: 1-4 on metallb, gcp-nlb, gclb and azure-lb with Cluster; 0 on aws-nlb and " +
			"aws-nlb-ip, and with Local on gclb and azure-lb; a second run 1-8 on every LB"),
		Limits: exclusionLimits(),
	})
}

// consolidationAutoscaler is the cluster autoscaler's scale-down of the
// same node: taint ToBeDeletedByClusterAutoscaler (no exclusion label), a
// drain, the machine deleted.
func consolidationAutoscaler() Scenario {
	d := departure{What: "cluster autoscaler scale-down", Drain: true, By: "the cluster autoscaler's scale-down",
		Taint: &corev1.Taint{Key: contract.TaintToBeDeletedByClusterAutoscaler, Effect: corev1.TaintEffectNoSchedule}}
	return d.scenario(Scenario{
		Name: "consolidation-autoscaler",
		Description: "The cluster autoscaler scales down a node that holds endpoints: taint " +
			contract.TaintToBeDeletedByClusterAutoscaler + ", drain it at the PDBs' pace, delete the machine and the node, under load.",
		Seeds:     []string{incident.Consolidation},
		Hazard:    evictionHazard,
		Prevented: evictionRace("2026-11-28: 1-5 on every LB, 95 and 786 on gclb, 366 on metallb with Local"),
		Limits: append(drainLimits(),
			Limit{On: taintUnseen, Policy: clusterPolicy, Reason: autoscalerTaintUnseen},
			Limit{LB: contract.LBMetalLB, Policy: clusterPolicy, Reason: metallbAnnouncerDeparts}),
	})
}
