package profiles

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServingReadinessProbe is the readiness probe a GCE load balancer's
// controller would adopt from spec for the serving port: the probe of the
// container that declares port, when it is an HTTP GET of that port (by
// number or by the container port's name). nil when there is none
// (kubernetes/ingress-gce pkg/translator GetProbe reads the Pods the
// Service selects the same way; HTTPS and gRPC probes are not adopted by a
// plain-HTTP backend).
func ServingReadinessProbe(spec corev1.PodSpec, port int32) *corev1.Probe {
	for _, c := range spec.Containers {
		name, declared := "", false
		for _, cp := range c.Ports {
			if cp.ContainerPort == port && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) {
				name, declared = cp.Name, true
			}
		}
		if !declared || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
			continue
		}
		g := c.ReadinessProbe.HTTPGet
		if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
			continue
		}
		if (g.Port.Type == intstr.Int && g.Port.IntVal == port) || (g.Port.Type == intstr.String && name != "" && g.Port.StrVal == name) {
			return c.ReadinessProbe
		}
	}
	return nil
}

// WithReadinessProbe is p's check as GKE builds it from the serving
// container's readiness probe when the profile says it does
// (HealthCheck.FromReadinessProbe): the probe's path, its timeout, and for
// Pod targets its period as the interval (kubernetes/ingress-gce
// pkg/translator/healthchecks.go ApplyProbeSettingsToHC: "For NEG mode, we
// can support more aggressive healthcheck interval"; instance groups add
// 60 s to the period). The thresholds stay the profile's. It reports
// whether it changed anything.
func (p Profile) WithReadinessProbe(probe *corev1.Probe) (Profile, bool) {
	if !p.HealthCheck.FromReadinessProbe || probe == nil || probe.HTTPGet == nil {
		return p, false
	}
	h := p.HealthCheck
	h.Path = probe.HTTPGet.Path
	if !strings.HasPrefix(h.Path, "/") {
		h.Path = "/" + h.Path // "GCE requires a leading / for health check urls"
	}
	// The API server defaults both (periodSeconds 10, timeoutSeconds 1); a
	// probe read from a file may not have them yet.
	period, timeout := time.Duration(probe.PeriodSeconds)*time.Second, time.Duration(probe.TimeoutSeconds)*time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	if !p.PodBackends() {
		period += 60 * time.Second
	}
	h.Interval, h.Timeout = Duration(period), Duration(min(timeout, period))
	return p.WithCheck(h), true
}
