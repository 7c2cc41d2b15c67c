package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop/clusters/lb/profiles"
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
	// PodBackends: an HTTP proxy that sends to Pods directly (GKE NEG), so
	// no kube-proxy NAT outlives a Pod's readiness.
	PodBackends bool `json:"podBackends,omitempty"`
	// ClusterCheck describes the check of externalTrafficPolicy Cluster
	// Services when it differs from the Local one ("" when the same).
	ClusterCheck string `json:"clusterCheck,omitempty"`
	// Historical says why the LB can no longer be created ("" when current).
	Historical string `json:"historical,omitempty"`
	// FollowsServing: no health check; nodes are picked from the
	// EndpointSlices' serving condition (MetalLB), so a terminating Pod that
	// stays ready keeps its node in the LB until it exits.
	FollowsServing bool `json:"followsServing,omitempty"`
	// Source is where the numbers come from.
	Source string `json:"source"`
	// Profile is the LB profile this view was made from.
	Profile profiles.Profile `json:"-"`
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
const DefaultProfile = profiles.DefaultName

// fromProfile is the doctor's view of one LB profile of clusters/lb/profiles,
// the one place every vendor number is written (with its source) for the
// doctor, the fixtures and the cloud LB alike.
func fromProfile(p profiles.Profile) LBProfile {
	h := p.HealthCheck
	var src []string
	for _, k := range slices.Sorted(maps.Keys(p.Sources)) {
		switch {
		case k == "healthCheck":
			src = append([]string{p.Sources[k]}, src...)
		case strings.HasPrefix(k, "healthCheck.") || k == "target" || k == "clusterHealthCheck":
			src = append(src, k+": "+p.Sources[k])
		}
	}
	return LBProfile{
		Name: p.Name, Aliases: append([]string(nil), p.Aliases...),
		Interval: h.Interval.D(), Timeout: h.Timeout.D(),
		HealthyThreshold: h.HealthyThreshold, UnhealthyThreshold: h.UnhealthyThreshold,
		SinglePool:     p.Eligibility.PoolLabel != "",
		L7:             p.Mode == profiles.ModeL7 && !p.PodBackends(),
		PodBackends:    p.PodBackends(),
		ClusterCheck:   clusterCheck(p),
		Historical:     p.Historical,
		FollowsServing: p.FollowsServing(),
		Source:         strings.Join(src, "; "),
		Profile:        p,
	}
}

func clusterCheck(p profiles.Profile) string {
	if p.ClusterHealthCheck == nil {
		return ""
	}
	c := *p.ClusterHealthCheck
	return fmt.Sprintf("%s %v x %d = %v", c.Target, c.Interval.D(), c.UnhealthyThreshold, c.DetectionTime())
}

// stock is the doctor's list, built once from the embedded profiles (which
// the profiles package's tests check, so an error is a build defect).
var stock = sync.OnceValue(func() []LBProfile {
	ps, err := profiles.Stock()
	if err != nil {
		panic(fmt.Sprintf("stock LB profiles are broken (a build defect): %v", err))
	}
	out := make([]LBProfile, 0, len(ps))
	for _, n := range ps.Names() {
		out = append(out, fromProfile(ps[n]))
	}
	return out
})

// Profiles returns the built-in LB profiles, sorted by name.
func Profiles() []LBProfile { return append([]LBProfile(nil), stock()...) }

// LookupProfile finds a profile by name or alias (case-insensitive).
func LookupProfile(name string) (LBProfile, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range stock() {
		if p.Name == n || slices.Contains(p.Aliases, n) {
			return p, true
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
	for _, p := range stock() {
		out = append(out, p.Name)
		out = append(out, p.Aliases...)
	}
	sort.Strings(out)
	return out
}
