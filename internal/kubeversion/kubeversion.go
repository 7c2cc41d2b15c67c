// Package kubeversion reads Kubernetes release versions as the project meets
// them: a node image's /kind/version ("v1.37.2"), an API server's gitVersion
// (distributions add "-gke.1200" or "+k3s1"), and a user's "1.34".
package kubeversion

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a release's major and minor, what version-dependent behaviour
// is keyed by.
type Version struct{ Major, Minor int }

var re = regexp.MustCompile(`^v?1\.(\d{1,3})(?:\.\d+(?:[-+][0-9A-Za-z.+-]*)?)?$`)

// Parse reads "1.34", "v1.34.2", "v1.35.0-rc.1", "v1.34.2-gke.1200" or
// "v1.34.2+k3s1" (surrounding space ignored).
func Parse(s string) (Version, error) {
	m := re.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("kubernetes version %q: want 1.MINOR or v1.MINOR.PATCH, e.g. 1.34 or v1.34.2", s)
	}
	minor, err := strconv.Atoi(m[1])
	if err != nil {
		return Version{}, fmt.Errorf("kubernetes version %q: minor %q: %w", s, m[1], err)
	}
	return Version{Major: 1, Minor: minor}, nil
}

// AtLeast reports whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// HasSleepAction reports whether release v has the kubelet's own preStop
// sleep (lifecycle sleep action) on by default: PodLifecycleSleepAction is
// alpha in 1.29 and beta, on by default, from 1.30 (k8s.io/kubernetes
// pkg/features/kube_features.go); the field is absent from older APIs. The
// zero Version (release unknown) counts as current.
func (v Version) HasSleepAction() bool { return v == (Version{}) || v.AtLeast(1, 30) }

// SpreadHonorsTaints reports whether release v's scheduler can leave the
// nodes a Pod does not tolerate (a cordoned node's unschedulable taint, a
// control plane's) out of a topology spread's domains when the constraint
// asks so (nodeTaintsPolicy: Honor): NodeInclusionPolicyInPodTopologySpread
// is alpha, off, in 1.25 and beta, on by default, from 1.26 (GA in 1.33;
// k8s.io/kubernetes pkg/features/kube_features.go). With the gate off the
// API server drops the field and the scheduler counts every node
// (v1.25.4 pkg/scheduler/framework/plugins/podtopologyspread/common.go,
// filterTopologySpreadConstraints: "If NodeTaintsPolicy is nil, we treat
// NodeTaintsPolicy as Ignore"). The zero Version counts as current.
func (v Version) SpreadHonorsTaints() bool { return v == (Version{}) || v.AtLeast(1, 26) }

// ProxiesTerminatingByDefault reports whether release v's kube-proxy sends
// a new connection to an endpoint that is terminating but still serving
// when no ready endpoint is where it looks (KEP-1669), unless told not to:
// feature gate ProxyTerminatingEndpoints, beta and on by default from 1.26
// (kubernetes/kubernetes PR 113363), GA and locked on in 1.28, later
// removed (PR 122134; absent from v1.33.4's pkg/features/kube_features.go).
// The zero Version (release unknown) counts as current.
func (v Version) ProxiesTerminatingByDefault() bool { return v == (Version{}) || v.AtLeast(1, 26) }

// ProxiesTerminatingLocked reports whether release v's kube-proxy always
// does so: the gate is GA (locked) or gone from 1.28.
func (v Version) ProxiesTerminatingLocked() bool { return v == (Version{}) || v.AtLeast(1, 28) }
