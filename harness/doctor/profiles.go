package doctor

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop/harness/contract"
)

// LBProfile is the health-check timing of a node-based load balancer: how
// long it keeps sending new connections to a node whose health check fails
// (RemovalLag) and how long before it uses a node that turned healthy.
// With externalTrafficPolicy Local the health check is kube-proxy's
// healthCheckNodePort, which fails as soon as the node's last local endpoint
// is gone, so RemovalLag is the window in which a terminating Pod must keep
// serving (the rolling-update-local and source-ip-dilemma incidents).
type LBProfile struct {
	Name               string        `json:"name"`
	Aliases            []string      `json:"aliases,omitempty"`
	Interval           time.Duration `json:"interval"`
	Timeout            time.Duration `json:"timeout"`
	HealthyThreshold   int           `json:"healthyThreshold"`
	UnhealthyThreshold int           `json:"unhealthyThreshold"`
	// SinglePool: the backend is one node pool, not every node (AKS Basic
	// LB, incident nodepool-backend).
	SinglePool bool `json:"singlePool,omitempty"`
	// L7: an HTTP proxy that keeps connections to the nodes open and reuses
	// them (GCE Ingress, incident keepalive-unready).
	L7 bool `json:"l7,omitempty"`
	// FollowsServing: no health check; nodes are picked from the
	// EndpointSlices' serving condition (MetalLB), so a terminating Pod that
	// stays ready keeps its node in the LB until it exits.
	FollowsServing bool `json:"followsServing,omitempty"`
	// Source is where the numbers come from.
	Source string `json:"source"`
}

// RemovalLag is interval x unhealthy threshold.
func (p LBProfile) RemovalLag() time.Duration {
	return p.Interval * time.Duration(p.UnhealthyThreshold)
}

// AdditionLag is interval x healthy threshold.
func (p LBProfile) AdditionLag() time.Duration {
	return p.Interval * time.Duration(p.HealthyThreshold)
}

// Describe is "8s x 3 = 24s" or "no health check".
func (p LBProfile) Describe() string {
	if p.Interval == 0 || p.UnhealthyThreshold == 0 {
		return "no health check"
	}
	return fmt.Sprintf("%v x %d = %v", p.Interval, p.UnhealthyThreshold, p.RemovalLag())
}

// MarshalJSON writes durations as text ("8s") and adds the lags.
func (p LBProfile) MarshalJSON() ([]byte, error) {
	type plain LBProfile
	return json.Marshal(struct {
		plain
		Interval    string `json:"interval"`
		Timeout     string `json:"timeout"`
		RemovalLag  string `json:"removalLag"`
		AdditionLag string `json:"additionLag"`
	}{plain(p), p.Interval.String(), p.Timeout.String(), p.RemovalLag().String(), p.AdditionLag().String()})
}

// DefaultProfile is used when neither the flag nor the Service picks one.
const DefaultProfile = "generic"

// The numbers below are the defaults each provider's Kubernetes integration
// creates for a Service of type LoadBalancer with externalTrafficPolicy
// Local, read from the provider's source code (the stored public copies the
// `search` tool returned). Annotations on the Service override them; see
// applyAnnotations.
var profiles = []LBProfile{
	{
		Name: "generic", Interval: 10 * time.Second, Timeout: 2 * time.Second,
		HealthyThreshold: 2, UnhealthyThreshold: 3,
		Source: "zerodrop's own middle ground (10s x 3), not any vendor's default; the same numbers as fixtures.GenericLB " +
			"and the generic profile of the cloud-style LB (issue 9)",
	},
	{
		Name: "gcp-nlb", Aliases: []string{"gcp", "gke", "gke-legacy"},
		Interval: 8 * time.Second, Timeout: time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3,
		Source: "kubernetes/ingress-gce pkg/healthchecksl4/healthchecksl4.go: gceHcCheckIntervalSeconds=8, " +
			"gceHcTimeoutSeconds=1, gceHcHealthyThreshold=1, gceHcUnhealthyThreshold=3 " +
			"(\"3 * 8 = 24 seconds before the LB will steer traffic away\"); the same constants in the legacy GCE cloud provider",
	},
	{
		Name: "azure-lb", Aliases: []string{"azure", "azure-basic", "aks"},
		Interval: 5 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 2,
		Source: "kubernetes-sigs/cloud-provider-azure pkg/consts/consts.go: HealthProbeDefaultProbeInterval=5, " +
			"HealthProbeDefaultNumOfProbe=2 (annotations azure-load-balancer-health-probe-interval / -num-of-probe); " +
			"back in rotation after one successful probe, as the cloud-style LB's azure-lb profile reads Azure's docs",
	},
	{
		Name: "aws-nlb", Aliases: []string{"aws", "eks"},
		Interval: 10 * time.Second, Timeout: 10 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2,
		Source: "kubernetes/cloud-provider-aws pkg/providers/v1/aws.go buildNLBHealthCheckConfiguration: with " +
			"externalTrafficPolicy Local an HTTP check on the healthCheckNodePort, Interval 10, Timeout 10, " +
			"HealthyThreshold 2, UnhealthyThreshold 2 (Cluster: 30s, thresholds 3)",
	},
	{
		Name: "aws-elb", Aliases: []string{"aws-clb"},
		Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 6,
		Source: "kubernetes/cloud-provider-aws pkg/providers/v1: defaultElbHCInterval=10, defaultElbHCTimeout=5, " +
			"defaultElbHCHealthyThreshold=2, defaultElbHCUnhealthyThreshold=6 (Classic ELB, the default without aws-load-balancer-type: nlb)",
	},
	{
		Name: "gclb", Aliases: []string{"gce-ingress"}, L7: true,
		Interval: 60 * time.Second, Timeout: 60 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 10,
		Source: "kubernetes/ingress controllers/gce/healthchecks/healthchecks.go (the GCE Ingress of the keepalive-unready incident's time): " +
			"DefaultHealthCheckInterval=60s, DefaultTimeout=60s, DefaultHealthyThreshold=1, DefaultUnhealthyThreshold=10",
	},
	{
		Name: "metallb", Aliases: []string{"kind"}, FollowsServing: true,
		Source: "MetalLB has no health check: its speakers follow EndpointSlices and, with Local, announce only from " +
			"nodes with an endpoint that is ready or serving (metallb v0.15.2 internal/k8s/epslices.EndpointCanServe), " +
			"so the lag is endpoint propagation, not an interval, and a terminating endpoint keeps its node announced",
	},
}

// Profiles returns the built-in LB profiles, sorted by name.
func Profiles() []LBProfile {
	out := append([]LBProfile(nil), profiles...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupProfile finds a profile by name or alias (case-insensitive).
func LookupProfile(name string) (LBProfile, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range profiles {
		if p.Name == n {
			p.Aliases = nil
			return p, true
		}
		for _, a := range p.Aliases {
			if a == n {
				// Keep the alias visible: azure-basic is the single-pool
				// Basic LB of incident nodepool-backend, gke-legacy drops cordoned nodes.
				p.Name = n + " (" + p.Name + ")"
				p.Aliases = nil
				p.SinglePool = p.SinglePool || n == "azure-basic"
				return p, true
			}
		}
	}
	return LBProfile{}, false
}

// Provider annotations that change the health check of one Service.
const (
	annAWSInterval  = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"
	annAWSUnhealthy = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold"
	annAWSHealthy   = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-healthy-threshold"
	annAzInterval   = "service.beta.kubernetes.io/azure-load-balancer-health-probe-interval"
	annAzProbes     = "service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe"
	annAzMode       = "service.beta.kubernetes.io/azure-load-balancer-mode"
	annAWSTargets   = "service.beta.kubernetes.io/aws-load-balancer-target-node-labels"
)

// serviceProfile resolves the profile for one Service: its
// zerodrop.dev/lb-profile annotation, else def; then provider annotations
// that override the timing. Problems are returned as messages for a finding.
func serviceProfile(svc *corev1.Service, def LBProfile) (LBProfile, []string) {
	p := def
	var problems []string
	if name, ok := svc.Annotations[contract.LBProfileAnnotation]; ok {
		if found, ok := LookupProfile(name); ok {
			p = found
		} else {
			problems = append(problems, fmt.Sprintf("annotation %s=%q names no known profile (known: %s); using %s",
				contract.LBProfileAnnotation, name, strings.Join(ProfileNames(), ", "), def.Name))
		}
	}
	overridden := false
	setSeconds := func(key string, dst *time.Duration) {
		if v, ok := svc.Annotations[key]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				problems = append(problems, fmt.Sprintf("annotation %s=%q is not a number of seconds; ignored", key, v))
				return
			}
			*dst = time.Duration(n) * time.Second
			overridden = true
		}
	}
	setCount := func(key string, dst *int) {
		if v, ok := svc.Annotations[key]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				problems = append(problems, fmt.Sprintf("annotation %s=%q is not a count; ignored", key, v))
				return
			}
			*dst = n
			overridden = true
		}
	}
	setSeconds(annAWSInterval, &p.Interval)
	setCount(annAWSUnhealthy, &p.UnhealthyThreshold)
	setCount(annAWSHealthy, &p.HealthyThreshold)
	setSeconds(annAzInterval, &p.Interval)
	setCount(annAzProbes, &p.UnhealthyThreshold)
	if overridden {
		p.Name += " + Service annotations"
	}
	return p, problems
}

// ProfileNames lists every accepted profile name and alias.
func ProfileNames() []string {
	var out []string
	for _, p := range profiles {
		out = append(out, p.Name)
		out = append(out, p.Aliases...)
	}
	sort.Strings(out)
	return out
}
