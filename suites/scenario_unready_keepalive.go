package suites

import (
	"context"
	"fmt"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// unreadyKeepalive turns the busiest pod unready under load and counts what it
// still answers after its endpoint is gone (the keepalive-unready incident).
func unreadyKeepalive() Scenario {
	return Scenario{
		Name: "unready-keepalive",
		Description: "One pod is marked unready through its admin port while load runs; count what it still serves " +
			"after its endpoint is removed, with keep-alive on and off.",
		Seeds:    []string{incident.KeepaliveUnready},
		Triggers: []incident.Trigger{incident.ReadinessFlip},
		Own:      true,
		Cases: []Case{
			{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleDocumentation},
			{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleAssertion},
		},
		Hazard: "a NAT applies to new connections only (kube-proxy's, or an L4 LB's own translation to a Pod target: an " +
			"NLB with IP targets deregisters the Pod with its endpoint and lets its connections drain for the " +
			"deregistration delay, 300 s by default, and keeps them after it), so a reused keep-alive connection (the " +
			"client's, or an L7 LB's to the node) keeps reaching the pod it was first sent to after that pod's endpoint is gone",
		Prevented: []Prevention{{
			On: proxiedPodTargets,
			Why: "the LB proxies each request to the Pod itself, so no NAT outlives the Pod's readiness, on kept-alive " +
				"connections either: an LB that registers ready endpoints only deregisters the Pod with its endpoint " +
				"(aws-alb-ip: measured 2026-11-27, lb-backend-removed 3 ms after endpoint-removed, no request after), and " +
				"one that keeps unready Pods registered checks each with its own readiness probe (GKE builds a NEG's check " +
				"from it: kubernetes/ingress-gce pkg/translator/healthchecks.go ApplyProbeSettingsToHC) and drops it one " +
				"check interval x unhealthyThreshold later (gclb-neg, 2026-11-27: the victim answered 17 requests in the " +
				"1.03 s between its endpoint's removal and the LB's lb-target-unhealthy, none after). A readiness probe " +
				"slower than the suite's grace would let it answer longer there, for the check's lag, not for the life of " +
				"a connection",
		}},
		// The Pod turned unready must carry the witness's own kept-alive
		// connections: over shared Pods the busiest Pod of one witness
		// may hold none of another's, which would then measure nothing.
		OwnPods: "the Pod turned unready is the witness's own busiest, which must carry its keep-alive connections",
		Body:    runUnreadyKeepalive,
		Cost: func(tm Timing, k Costs, _ Cell, _ cellTimes) time.Duration {
			return k.Terminate + tm.Observe
		},
	}
}

// unreadyLanes is how many kept-alive connections the load uses in turn:
// over 3 Pods, each very likely holds some, and at 50/s each connection
// carries a request every 120 ms, far inside the generator's idle timeout.
const unreadyLanes = 6

func runUnreadyKeepalive(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	// A fast readiness probe, so the endpoint goes within seconds of the flip
	// and the run measures the keep-alive effect rather than probe timing.
	fast := &fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		sp := s.spec(sc, c, fixtures.WithReplicas(3), fixtures.WithReadiness(fast))
		sp.Connections = 12
		if c.KeepAlive {
			// Kept-alive connections used in turn: with Go's own pool one
			// connection carries almost every request and the others idle
			// out (load.WithRotation), so whether the Pod turned unready
			// still held a busy connection was chance (2026-11-26: 2 of 9
			// columns reproduced, one run after 8 of 8). In turn, each of
			// the Pod's connections stays busy after its endpoint goes,
			// which is what the incident's proxy did.
			sp.RotateConnections = unreadyLanes
		}
		return sp
	})
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	// Every witness turns its own busiest pod unready at the same moment.
	ws.Disrupt("every witness turns its busiest pod unready")
	ws.Each(ctx, func(ctx context.Context, _ int, r *scenario.Run) error {
		pods, err := r.ExpectPods(ctx)
		if err != nil {
			return err
		}
		// With keep-alive a few connections carry the load and a pod may get
		// none; an idle pod turning unready measures nothing.
		served := r.Snapshot().ByPod
		names := make([]string, 0, len(pods))
		for _, p := range pods {
			names = append(names, p.Name)
		}
		victim := busiest(names, served)
		if served[victim] == 0 {
			return fmt.Errorf("unready-keepalive: no pod answered during the first %s of load (per pod: %v); nothing to turn unready", s.Timing.Baseline, served)
		}
		_ = r.Events().Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "pod/" + r.Target.Namespace + "/" + victim,
			Message: fmt.Sprintf("chosen to turn unready: it answered %d of the %d requests so far (per pod: %v)", served[victim], sumCounts(served), served)})
		// What the pod answers once its endpoint is gone is the hazard: none
		// may reach it after kube-proxy had time to apply the removal.
		grace := s.Timing.KubeProxyGrace
		err = r.SetCriteria("pod "+victim+" turns unready: count what it answers after its endpoint is removed", func(cr *zdv1.Criteria) {
			cr.ServedAfterRemoval = &zdv1.AfterRemovalLimit{Pod: victim, GraceMs: float64(grace / time.Millisecond), Max: 0}
		})
		if err != nil {
			return err
		}
		if err := r.Kube.SetEchoReady(ctx, r.Target.Namespace, victim, r.Target.AdminPort, false); err != nil {
			return err
		}
		_, err = r.Kube.WaitReadyEndpoints(ctx, r.Target.Namespace, r.Target.Service, len(pods)-1, s.Timing.EndpointRemoval)
		return err
	})
	return ws.Finish(ctx, settleFor(s.Timing.Observe))
}
