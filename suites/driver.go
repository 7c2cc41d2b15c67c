package suites

// The Ginkgo driver (zerodrop_e2e_test.go, build tag e2e) is a thin layer:
// what it does besides Ginkgo lives here, where go vet and the unit tests
// see it.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/clusters/lb/profiles"
	"zerodrop/harness/lb"
	"zerodrop/harness/runfile"
	"zerodrop/harness/verdict"
)

// reach connects to the cluster of kubeconfig and returns its Kubernetes
// version; an error means there is no reachable cluster there.
func reach(ctx context.Context, kubeconfig string) (kubernetes.Interface, string, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, "", err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, "", fmt.Errorf("API server of %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 0
	cs, err = kubernetes.NewForConfig(cfg)
	return cs, v.GitVersion, err
}

// toolVersion is the version the Makefile stamps (ZERODROP_VERSION, from git
// describe); "dev" when run otherwise.
func toolVersion() string { return or(os.Getenv("ZERODROP_VERSION"), "dev") }

// brokenRun records a run that could not complete as an ERROR scenario, so
// the report says what broke instead of leaving a gap.
func brokenRun(sc Scenario, c Case, err error) zdv1.Scenario {
	return zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Name: sc.Name + "/" + c.Name(), Role: c.Role, Description: sc.Description, Seeds: sc.Seeds,
			PlatformLimit: c.PlatformLimit},
		Verdict: zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{
			Check: "run", Status: zdv1.Error, Message: err.Error(),
		}}},
	}
}

// summary is the verdict with its numbers and failure windows, for the
// Ginkgo output and failure messages.
func summary(s zdv1.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s] %s: %d requests, %d dropped, %d failure windows\n",
		s.Name, s.Role, s.Outcome(), s.Results.Total, s.Results.Dropped, len(s.FailureWindows))
	if s.PlatformLimit != "" {
		fmt.Fprintf(&b, "  platform limit: %s\n", s.PlatformLimit)
	}
	for _, r := range s.Verdict.Reasons {
		fmt.Fprintf(&b, "  %-4s %s: %s\n", r.Status, r.Check, r.Message)
	}
	for _, w := range s.FailureWindows {
		fmt.Fprintf(&b, "  window %s\n", verdict.WindowText(w))
		for _, e := range w.NearestEvents {
			fmt.Fprintf(&b, "    %+8.0fms %-10s %-22s %s %s\n", e.OffsetMs, e.Source, e.Type, e.Object, e.Message)
		}
	}
	return b.String()
}

// configureCloudLB wires the cloud-style LB (LB=cloud): its health-check
// timing drives the hardened profile and the settle times, and its own
// events (backend added/removed, node healthy/unhealthy) go into every run
// file next to the Kubernetes events.
func configureCloudLB(ctx context.Context, s *Suite, progress func(string)) error {
	stock, err := profiles.Stock()
	if err != nil {
		return fmt.Errorf("cloud LB profiles: %w", err)
	}
	p, ok := stock[s.Settings.LBProfile]
	if !ok || !p.Emulated() {
		return fmt.Errorf("LB_PROFILE=%q is not a profile the cloud LB runs; stock profiles it runs: %s",
			s.Settings.LBProfile, strings.Join(stock.Emulated(), ", "))
	}
	s.LB = p
	// Every Service names the profile its workload was tuned for, so the LB
	// applies that timing whatever default the cluster was created with.
	s.LBProfileFor = func(string) string { return p.Name }
	if s.Settings.Provider != "kind" {
		return nil
	}
	found, err := lb.FindKind(ctx, s.Settings.ClusterName, "kind")
	if err != nil {
		return fmt.Errorf("find the cloud LB of cluster %q: %w", s.Settings.ClusterName, err)
	}
	if found == nil {
		return fmt.Errorf("LB=cloud but no cloud LB container runs for cluster %q; create the cluster with LB=cloud (make cluster LB=cloud)", s.Settings.ClusterName)
	}
	url := found.AdminURL()
	progress(fmt.Sprintf("cloud LB %s at %s, profile %s (%s x %d to remove a node)",
		found.Container, url, p.Name, time.Duration(p.HealthCheck.Interval), p.HealthCheck.UnhealthyThreshold))
	s.Env.LBEvents = func(ctx context.Context, sink runfile.EventSink) error {
		return lb.SubscribeEvents(ctx, url, sink, s.Env.Logger)
	}
	s.Env.WaitLB = func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
		st, err := lb.WaitSettled(ctx, url, namespace+"/"+name, timeout)
		return st.Summary(), err
	}
	return nil
}
