// Package suites holds zerodrop's scenarios: each one reproduces an incident
// told in docs/incidents.md on a real cluster under real load. Scenarios are data (a
// registry of names, seeds, cases and bodies) so that tools can list them and
// reports can cite them; the Ginkgo driver in zerodrop_e2e_test.go (build tag
// e2e) turns each case into a labelled spec.
//
// Run them with `make e2e PROVIDER=kind` (everything, built and set up from
// scratch) or `make e2e-smoke` (the smoke subset).
package suites

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"zerodrop/harness/contract"
)

// Settings are a suite run's knobs, read from the environment so that `make`
// and CI can pass them through.
type Settings struct {
	// Provider is the cluster provider: kind or existing (PROVIDER).
	Provider string
	// ClusterName is the kind cluster's name (CLUSTER_NAME).
	ClusterName string
	// LB is the LoadBalancer implementation: metallb or cloud (LB).
	LB string
	// LBProfile is the cloud-style LB's default profile (LB_PROFILE).
	LBProfile string
	// Kubeconfig is where the cluster's kubeconfig is (ZERODROP_KUBECONFIG,
	// else KUBECONFIG for existing, else out/kubeconfig).
	Kubeconfig string
	// OutDir receives the report and every run file (ZERODROP_OUT).
	OutDir string
	// Rate is the load in requests per second (ZERODROP_RATE).
	Rate int
	// KeepCluster keeps a cluster the suite created (KEEP_CLUSTER=1).
	KeepCluster bool
	// NodeImage is the kind node image (KIND_NODE_IMAGE).
	NodeImage string
	// EchoImage is the echo-server image loaded into the cluster.
	EchoImage string
	// ReadyTimeout bounds every wait for workloads (ZERODROP_READY_TIMEOUT).
	ReadyTimeout time.Duration
}

// Known values.
var (
	providers = []string{"kind", "existing"}
	lbs       = contract.LoadBalancers()
)

// SettingsFromEnv reads and validates the settings; getenv is os.Getenv in
// real runs. repoRoot anchors relative default paths.
func SettingsFromEnv(getenv func(string) string, repoRoot string) (Settings, error) {
	s := Settings{
		Provider:     or(getenv("PROVIDER"), "kind"),
		ClusterName:  or(getenv("CLUSTER_NAME"), "zerodrop"),
		LB:           or(getenv("LB"), contract.LBMetalLB),
		LBProfile:    or(getenv("LB_PROFILE"), "generic"),
		OutDir:       or(getenv("ZERODROP_OUT"), filepath.Join(repoRoot, "out", "e2e")),
		NodeImage:    getenv("KIND_NODE_IMAGE"),
		EchoImage:    or(getenv("ECHO_IMAGE"), "zerodrop/echo-server:dev"),
		Rate:         200,
		ReadyTimeout: 4 * time.Minute,
	}
	var problems []string
	if !contains(providers, s.Provider) {
		problems = append(problems, fmt.Sprintf("PROVIDER=%q is not one of %s", s.Provider, strings.Join(providers, ", ")))
	}
	if !contains(lbs, s.LB) {
		problems = append(problems, fmt.Sprintf("LB=%q is not one of %s", s.LB, strings.Join(lbs, ", ")))
	}
	s.Kubeconfig = getenv("ZERODROP_KUBECONFIG")
	if s.Kubeconfig == "" && s.Provider == "existing" {
		s.Kubeconfig = getenv("KUBECONFIG")
	}
	if s.Kubeconfig == "" {
		s.Kubeconfig = filepath.Join(repoRoot, "out", "kubeconfig")
	}
	if v := getenv("ZERODROP_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5000 {
			problems = append(problems, fmt.Sprintf("ZERODROP_RATE=%q: want requests per second between 1 and 5000", v))
		} else {
			s.Rate = n
		}
	}
	if v := getenv("ZERODROP_READY_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("ZERODROP_READY_TIMEOUT=%q: want a positive duration such as 4m", v))
		} else {
			s.ReadyTimeout = d
		}
	}
	switch v := getenv("KEEP_CLUSTER"); v {
	case "", "0", "false":
	case "1", "true":
		s.KeepCluster = true
	default:
		problems = append(problems, fmt.Sprintf("KEEP_CLUSTER=%q: want 1 or 0", v))
	}
	if len(problems) > 0 {
		return s, fmt.Errorf("bad settings: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}
