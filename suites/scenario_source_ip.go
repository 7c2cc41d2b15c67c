package suites

import (
	"context"
	"fmt"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/clusters/lb/profiles"
	"zerodrop/fixtures"
	"zerodrop/harness/incident"
	"zerodrop/harness/scenario"
)

// sourceIP checks the client address each pod sees: Local must keep it,
// Cluster hides it (the nodepool-backend and source-ip-dilemma incidents).
func sourceIP() Scenario {
	return Scenario{
		Name:        "source-ip",
		Description: "Does the pod see the load generator's address? Local must preserve it; Cluster SNATs it away.",
		Seeds:       []string{incident.NodepoolBackend, incident.SourceIPDilemma},
		Triggers:    []incident.Trigger{incident.Placement},
		Cases: []Case{
			{Policy: localPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion, Smoke: true},
			{Policy: clusterPolicy, Profile: fixtures.Hardened, KeepAlive: true, Role: zdv1.RoleAssertion},
		},
		Limits: []Limit{{On: proxiesHTTP, Policy: localPolicy, Reason: proxyReplacesSource}},
		Body:   runSourceIP,
	}
}

// proxiesHTTP picks the LB models that proxy HTTP themselves (gclb): the
// Pod's peer is the proxy, whatever the Service's policy.
func proxiesHTTP(m Model) bool { return m.Profile.Mode == profiles.ModeL7 }

// proxyReplacesSource is why Local cannot keep the client's address at
// the Pod behind an L7 proxy. It concerns addresses, not drops: no event
// opens its windows.
var proxyReplacesSource = Mechanism{Text: "The LB is an HTTP proxy: it ends the client's connection and opens its own " +
	"to the node, so the Pod's peer is the proxy with either traffic policy (Google's front ends send from " +
	"35.191.0.0/16 and 130.211.0.0/22 to instance-group backends: cloud.google.com/load-balancing/docs/firewall-rules), " +
	"and externalTrafficPolicy Local keeps only that address. The client's own address travels in the " +
	"X-Forwarded-For header the proxy appends (cloud.google.com/load-balancing/docs/https, \"X-Forwarded-For " +
	"header\"; this suite's cloud LB does the same, internal/cloudlb), which the load generator does not read yet. " +
	"Measured on 2026-11-26 (zerodrop 62f21a1, the first full matrix with gclb): source-ip/gclb/local/hardened, all " +
	"750 answers from the proxy's address 172.19.0.6, none from the client's 172.19.0.1"}

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
		// Local must keep the client's address; Cluster replaces it with a
		// node's (incident nodepool-backend: "better load balancing, but we
		// lose the proper source IP").
		return r.SetCriteria(fmt.Sprintf("the load generator reaches %s from %s", r.Address, host), func(cr *zdv1.Criteria) {
			if cells[i].Policy == localPolicy {
				cr.ExpectedClientIP = host
			} else {
				cr.ForbiddenClientIP = host
			}
		})
	})
	return ws.Finish(ctx, settleFor(s.Timing.Observe))
}
