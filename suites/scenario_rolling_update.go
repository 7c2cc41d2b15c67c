package suites

import (
	"context"
	"slices"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// rollingUpdate is kubectl rollout restart under load: the
// rolling-update-local incident (docs/incidents.md), with Cluster and Local,
// naive and hardened.
func rollingUpdate() Scenario {
	rolling := matrix(clusterPolicy, localPolicy)
	for i := range rolling {
		if rolling[i].Policy == clusterPolicy && rolling[i].Hardening == fixtures.Hardened {
			rolling[i].Smoke = true
		}
	}
	return Scenario{
		Name: "rolling-update",
		Description: "kubectl rollout restart of the workload under load. Naive: no preStop, the app exits at once, " +
			"probe defaults. Hardened: preStop covering the LB's lag, graceful drain, surge rollout, minReadySeconds.",
		Seeds:    []string{incident.RollingUpdateLocal, incident.SourceIPDilemma},
		Triggers: []incident.Trigger{incident.Rollout, incident.PodTermination},
		Own:      true,
		Cases:    slices.Concat(rolling, h2Cases(), grpcCases(), wsCases(), frontCases(), gateCases(rolloutOutrunsTargets)),
		Hazard: "a pod that exits at once on SIGTERM refuses the connections kube-proxy and the LB still send it " +
			"until its endpoint's removal reaches them; with Local, a node whose last endpoint went keeps getting " +
			"the LB's traffic until its health check fails",
		Limits: []Limit{
			{Proxy: withoutTerminatingEndpoints, NewConnections: true, Policy: localPolicy, Reason: noTerminatingEndpointsRollout},
		},
		Body: runRollingUpdate,
		// Every Pod replaced in turn; the last old one keeps serving for
		// its recipe's time; the nodes keep endpoints (surge, spread).
		Cost: func(tm Timing, k Costs, _ Cell, t cellTimes) time.Duration {
			return t.rollout(k) + t.accepting + k.Terminate + t.quiet(tm)
		},
	}
}

// rolloutOutrunsTargets is what a rollout does behind Pod targets without
// a readiness gate, whatever the old Pods' preStop: the outage the gate
// exists for.
const rolloutOutrunsTargets = "the rollout outruns the LB: a new Pod counts as Ready once its own probe passes, before " +
	"its target passed the LB's first health checks (initial, taking nothing), and each old Pod's target is " +
	"deregistered as its endpoint starts terminating, so the preStop keeps old Pods serving what the LB no longer " +
	"sends them; once the last old target left, the LB has only initial targets and answers 503 until they pass " +
	"(kubernetes-sigs/aws-load-balancer-controller docs/deploy/pod_readiness_gate.md: the outage pod readiness gates " +
	"exist for)"

// noTerminatingEndpointsRollout is why a rollout with Local can drop new
// connections on a kube-proxy without KEP-1669: the drain mechanism of
// noTerminatingEndpoints, met where the new Pods land elsewhere.
var noTerminatingEndpointsRollout = Mechanism{Opens: []string{zdv1.EventEndpointTerminating}, Text: "kube-proxy here does not send new connections to endpoints that are terminating " +
	"but still serving (KEP-1669, on by default from Kubernetes 1.26; see drain-node). In a rolling update, a node " +
	"whose old Pods all terminate before a new Pod on it is ready then has no endpoint for a new connection while the " +
	"LB still sends there (a health-checked LB until its check of the node's healthCheckNodePort fails). Whether a " +
	"node is left so depends on where the scheduler puts the new Pods, which no Deployment setting pins here (before " +
	"1.26 the hardened spread cannot be DoNotSchedule, and matchLabelKeys is honoured only from 1.27). Measured on " +
	"this suite's kind cluster, a connection per request at 200/s, 2026-11-24: Kubernetes v1.25.4 as released, " +
	"gcp-nlb 1,762 timeouts in one window of 22.7 s, from 175 ms after the last old Pod on one node began " +
	"terminating (its endpoint-terminating event: what opens these windows) until the LB marked that node unhealthy; a second run 1,371 (windows of 1.1 s and 18.4 s) and " +
	"MetalLB 1,547 in 7.7 s (0 in two runs before); v1.27.4 with ProxyTerminatingEndpoints=false, 0 in two runs on " +
	"each LB"}

func runRollingUpdate(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec { return s.spec(sc, c, fixtures.WithReplicas(3)) })
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// The restart starts in every workload at the same moment; witnesses
	// that share Pods see one restart of them.
	ws.Disrupt("rollout restart of every witness's workload")
	ws.EachWorkload(ctx, func(ctx context.Context, _ []int, r *scenario.Run) error {
		return r.Kube.RestartWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.rolloutTimeout(r))
	})
	return ws.Finish(ctx, s.settleEach(cells))
}
