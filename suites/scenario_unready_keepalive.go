package suites

import (
	"context"
	"fmt"
	"time"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
)

// unreadyKeepalive turns the busiest pod unready under load and counts what it
// still answers after its endpoint is gone (the keepalive-unready incident).
func unreadyKeepalive() Scenario {
	return Scenario{
		Name: "unready-keepalive",
		Description: "One pod is marked unready through its admin port while load runs; count what it still serves " +
			"after its endpoint is removed, with keep-alive on and off.",
		Seeds: []string{incident.KeepaliveUnready},
		Cases: []Case{
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleDocumentation},
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleAssertion},
		},
		Body: runUnreadyKeepalive,
	}
}

func runUnreadyKeepalive(ctx context.Context, s *Suite, sc Scenario, c Case) (zdv1.Scenario, error) {
	// A fast readiness probe, so the endpoint goes within seconds of the flip
	// and the run measures the keep-alive effect rather than probe timing.
	fast := &fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	sp := s.spec(sc, c, fixtures.WithReplicas(3), fixtures.WithReadiness(fast))
	sp.Connections = 12
	run, err := s.Begin(ctx, sp)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	pods, err := run.ExpectPods(ctx)
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if len(pods) == 0 {
		return zdv1.Scenario{}, fmt.Errorf("unready-keepalive: no pods of %s", run.Config.Name)
	}
	if err := run.Settle(ctx, s.Timing.Baseline); err != nil {
		return zdv1.Scenario{}, err
	}
	// The victim is the pod with the most answers so far: with keep-alive a
	// few connections carry the load and a pod may get none, and an idle pod
	// turning unready measures nothing.
	served := run.Snapshot().ByPod
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	victim := busiest(names, served)
	if served[victim] == 0 {
		return zdv1.Scenario{}, fmt.Errorf("unready-keepalive: no pod answered during the first 5s of load (per pod: %v); nothing to turn unready", served)
	}
	_ = run.Events().Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "pod/" + run.Config.Namespace + "/" + victim,
		Message: fmt.Sprintf("chosen to turn unready: it answered %d of the %d requests so far (per pod: %v)", served[victim], sumCounts(served), served)})
	// What the pod answers once its endpoint is gone is the hazard: none
	// may reach it after kube-proxy had time to apply the removal.
	grace := s.Timing.KubeProxyGrace
	err = run.SetCriteria("pod "+victim+" turns unready: count what it answers after its endpoint is removed", func(cr *zdv1.Criteria) {
		cr.ServedAfterRemoval = &zdv1.AfterRemovalLimit{Pod: victim, GraceMs: float64(grace / time.Millisecond), Max: 0}
	})
	if err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Kube.SetEchoReady(ctx, run.Config.Namespace, victim, false); err != nil {
		return zdv1.Scenario{}, err
	}
	if _, err := run.Kube.WaitReadyEndpoints(ctx, run.Config.Namespace, run.Config.Name, len(pods)-1, s.Timing.EndpointRemoval); err != nil {
		return zdv1.Scenario{}, err
	}
	if err := run.Settle(ctx, s.Timing.Observe); err != nil {
		return zdv1.Scenario{}, err
	}
	return run.Finish(ctx)
}
