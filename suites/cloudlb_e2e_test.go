//go:build e2e

package suites

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"zerodrop/fixtures"
	"zerodrop/harness/lb"
	"zerodrop/harness/runfile"
)

// configureCloudLB wires the cloud-style LB (LB=cloud): its health-check
// timing drives the hardened profile and the settle times, and its own
// events (backend added/removed, node healthy/unhealthy) go into every run
// file next to the Kubernetes events.
func configureCloudLB(ctx context.Context, s *Suite) {
	profiles, err := lb.StockProfiles()
	Expect(err).NotTo(HaveOccurred())
	p, ok := profiles[s.Settings.LBProfile]
	Expect(ok).To(BeTrue(), "LB_PROFILE=%q is not a stock profile of clusters/lb/profiles", s.Settings.LBProfile)
	s.LBCheck = fixtures.LBHealthCheck{
		Interval:           time.Duration(p.HealthCheck.Interval),
		HealthyThreshold:   p.HealthCheck.HealthyThreshold,
		UnhealthyThreshold: p.HealthCheck.UnhealthyThreshold,
	}
	// Every Service names the profile its workload was tuned for, so the LB
	// applies that timing whatever default the cluster was created with.
	s.LBProfileFor = func(string) string { return p.Name }
	if s.Settings.Provider != "kind" {
		return
	}
	found, err := lb.FindKind(ctx, s.Settings.ClusterName, "kind")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).NotTo(BeNil(), "LB=cloud but no cloud LB container runs for cluster %q; create the cluster with LB=cloud (make cluster LB=cloud)", s.Settings.ClusterName)
	url := found.AdminURL()
	fmt.Fprintf(GinkgoWriter, "cloud LB %s at %s, profile %s (%s x %d to remove a node)\n",
		found.Container, url, p.Name, time.Duration(p.HealthCheck.Interval), p.HealthCheck.UnhealthyThreshold)
	s.Env.LBEvents = func(ctx context.Context, sink runfile.EventSink) error {
		return lb.SubscribeEvents(ctx, url, sink, s.Env.Logger)
	}
	s.Env.WaitLB = func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
		st, err := lb.WaitSettled(ctx, url, namespace+"/"+name, timeout)
		return st.Summary(), err
	}
}
