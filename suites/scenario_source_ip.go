package suites

import (
	"context"
	"fmt"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// sourceIP checks the client address each pod sees: Local must keep it,
// Cluster hides it (the nodepool-backend and source-ip-dilemma incidents);
// behind an HTTP proxy (gclb) the Pod's peer is the proxy with either
// policy, and the client's address must arrive in X-Forwarded-For; behind
// an L4 LB with Pod targets (aws-nlb-ip) the Pod's peer is the LB with
// either policy.
func sourceIP() Scenario {
	return Scenario{
		Name:        "source-ip",
		Description: "Does the pod see the load generator's address? Local must preserve it; Cluster SNATs it away; behind an HTTP proxy it must arrive in X-Forwarded-For; an NLB with IP targets translates it away with either policy.",
		Seeds:       []string{incident.NodepoolBackend, incident.SourceIPDilemma},
		Triggers:    []incident.Trigger{incident.Placement},
		Cases: []Case{
			{Policy: localPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion, Smoke: true},
			{Policy: clusterPolicy, Hardening: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion},
		},
		Body: runSourceIP,
	}
}

// proxiesHTTP picks the LB models that proxy HTTP themselves (gclb): the
// Pod's peer is the proxy, whatever the Service's policy.
func proxiesHTTP(m Model) bool { return m.Profile.Mode == profiles.ModeL7 }

func runSourceIP(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec {
		sp := s.spec(sc, c, fixtures.WithReplicas(2))
		// Nothing is disrupted: a request that fails is the ground moving.
		sp.Criteria.Undisturbed = true
		return sp
	})
	ws.Each(ctx, func(ctx context.Context, i int, r *scenario.Run) error {
		host, err := scenario.SourceAddress(r.Address)
		if err != nil {
			return err
		}
		return r.SetCriteria(fmt.Sprintf("the load generator reaches %s from %s", r.Address, host), sourceIPCriteria(cells[i], host))
	})
	return ws.Finish(ctx, settleFor(s.Timing.Observe))
}

// sourceIPCriteria is what the Pods of cell c must see of a client at host.
func sourceIPCriteria(c Cell, host string) func(*zdv1.Criteria) {
	return func(cr *zdv1.Criteria) {
		switch {
		case proxiesHTTP(c.Model):
			// An HTTP proxy ends the client's connection and opens its own
			// to the node, so the Pod's peer is the proxy with either
			// policy (Google's front ends send from 35.191.0.0/16 and
			// 130.211.0.0/22 to instance-group backends:
			// cloud.google.com/load-balancing/docs/firewall-rules), and the
			// client's address travels in the X-Forwarded-For header the
			// proxy appends (cloud.google.com/load-balancing/docs/https,
			// "X-Forwarded-For header"; the cloud LB's proxy does the same,
			// internal/cloudlb).
			cr.ForwardedClientIP = host
			cr.ForbiddenClientIP = host
		case podTargets(c.Model) && !proxiesHTTP(c.Model):
			// An L4 LB with Pod targets translates each connection to the
			// Pod and, by default, to its own address too, whatever the
			// policy: an NLB's IP target groups over TCP have client IP
			// preservation off (AWS NLB guide, "Edit target group
			// attributes", Client IP preservation; kubernetes-sigs/
			// aws-load-balancer-controller pkg/service/
			// model_build_target_group.go buildPreserveClientIPFlag), and
			// nothing carries the address unless proxy protocol v2 is on.
			cr.ForbiddenClientIP = host
		case c.Policy == localPolicy:
			// Local must keep the client's address.
			cr.ExpectedClientIP = host
		default:
			// Cluster replaces it with a node's (incident
			// nodepool-backend: "better load balancing, but we lose the
			// proper source IP").
			cr.ForbiddenClientIP = host
		}
	}
}
