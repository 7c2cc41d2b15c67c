package doctor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// Alibaba Cloud's cloud controller manager (kubernetes/cloud-provider-
// alibaba-cloud, ACK's) reads a Service's annotations by a suffix under
// service.beta.kubernetes.io/alibaba-cloud-loadbalancer-, or under the
// alicloud- prefix it had before September 2019; the new prefix wins
// (pkg/controller/service/reconcile/annotation/annotations.go,
// AnnotationRequest.Get).
const (
	annAlibabaPrefix       = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-"
	annAlibabaLegacyPrefix = "service.beta.kubernetes.io/alicloud-loadbalancer-"
	// annAlibabaClass is the controller's own class annotation; a Service
	// that carries one, or a spec.loadBalancerClass (alibabacloud.com/nlb
	// is its NLB), gets no CLB (pkg/controller/helper/service_utils.go
	// NeedCLB).
	annAlibabaClass = "service.beta.kubernetes.io/class"
	// annAlibabaBackendType eni makes the Pods the CLB's backends
	// (service_utils.go IsENIBackendType).
	annAlibabaBackendType = "service.beta.kubernetes.io/backend-type"
	alibabaProfile        = "alibaba-slb"
)

// The health-check annotations of a CLB listener, as suffixes
// (annotations.go; pkg/controller/service/clbv1/listeners.go
// buildListenerFromServicePort copies each into the listener when set, and
// the CLB API's defaults, the profile's, apply otherwise).
const (
	aliInterval       = "health-check-interval"
	aliHealthy        = "healthy-threshold"
	aliUnhealthy      = "unhealthy-threshold"
	aliConnectTimeout = "health-check-connect-timeout" // a tcp check's
	aliTimeout        = "health-check-timeout"         // an http check's
	aliType           = "health-check-type"
	aliConnectPort    = "health-check-connect-port"
	aliSwitch         = "health-check-switch"
)

// alibabaTimingSuffixes change the timing the doctor judges by.
var alibabaTimingSuffixes = []string{aliInterval, aliHealthy, aliUnhealthy, aliConnectTimeout, aliTimeout, aliType, aliConnectPort, aliSwitch}

// alibabaAnnotation is the Service's annotation of suffix and its key,
// the new prefix's before the legacy one's, as the controller reads it.
func alibabaAnnotation(svc *corev1.Service, suffix string) (key, value string, ok bool) {
	for _, p := range []string{annAlibabaPrefix, annAlibabaLegacyPrefix} {
		if v, found := svc.Annotations[p+suffix]; found {
			return p + suffix, v, true
		}
	}
	return "", "", false
}

// alibabaCLB: the controller builds a CLB for svc (NeedCLB): no
// loadBalancerClass and no class annotation.
func alibabaCLB(svc *corev1.Service) bool {
	return svc.Spec.LoadBalancerClass == nil && svc.Annotations[annAlibabaClass] == ""
}

// alibabaWhy is why a Service with Alibaba annotations is judged as
// alibaba-slb.
func alibabaWhy(svc *corev1.Service) string {
	why := "Alibaba Cloud annotations (alibaba-cloud-loadbalancer-*): cloud-provider-alibaba-cloud's CLB (SLB) with node backends"
	if strings.EqualFold(strings.TrimSpace(svc.Annotations[annAlibabaBackendType]), "eni") {
		why = "Alibaba Cloud annotations with backend-type eni: cloud-provider-alibaba-cloud's CLB (SLB) with the Pods as backends, " +
			"which no profile models; its node-backend timing assumed"
	}
	return why
}

// withAlibabaAnnotations applies the listener's health-check annotations
// to p, an alibaba-slb view: the interval, both thresholds, the timeout of
// the check's type (tcp reads connect-timeout, http timeout) and the port
// it asks. What the doctor cannot use is reported (ZD091) and the
// profile's value stands.
func withAlibabaAnnotations(svc *corev1.Service, p LBProfile, report func(string)) (LBProfile, bool) {
	changed := false
	num := func(suffix, what string, min int) (int, bool) {
		key, v, ok := alibabaAnnotation(svc, suffix)
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			report(fmt.Sprintf("annotation %s=%q is not %s; ignored", key, v, what))
			return 0, false
		}
		return n, true
	}
	if n, ok := num(aliInterval, "a number of seconds", 1); ok {
		p.Interval, changed = time.Duration(n)*time.Second, true
	}
	if n, ok := num(aliHealthy, "a count", 1); ok {
		p.HealthyThreshold, changed = n, true
	}
	if n, ok := num(aliUnhealthy, "a count", 1); ok {
		p.UnhealthyThreshold, changed = n, true
	}
	timeout := aliConnectTimeout
	if key, v, ok := alibabaAnnotation(svc, aliType); ok {
		switch t := strings.ToLower(strings.TrimSpace(v)); t {
		case "tcp":
		case "http":
			timeout = aliTimeout
		default:
			report(fmt.Sprintf("annotation %s=%q is neither tcp nor http; judged as the default tcp check", key, v))
		}
	}
	if n, ok := num(timeout, "a number of seconds", 1); ok {
		p.Timeout, changed = time.Duration(n)*time.Second, true
	}
	if key, v, ok := alibabaAnnotation(svc, aliSwitch); ok && strings.EqualFold(strings.TrimSpace(v), "off") {
		report(fmt.Sprintf("annotation %s=%q turns the listener's health check off: the LB then leaves a node only when the "+
			"cloud controller takes it out of the vServer group, at a latency no source gives; judged by the check's timing (%s)",
			key, v, p.Describe()))
	}
	// The check asks the listener's backend port, a node's NodePort, unless
	// it names a port (-520 is the backend port: docs/usage.md).
	if key, v, ok := alibabaAnnotation(svc, aliConnectPort); ok && strings.TrimSpace(v) != "-520" {
		port, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil || port < 1 || port > 65535:
			report(fmt.Sprintf("annotation %s=%q is not a port; ignored", key, v))
		case svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 &&
			int32(port) == svc.Spec.HealthCheckNodePort:
			// kube-proxy's health server answers there for the node's
			// local endpoints, as the L4 LBs of other clouds ask it.
			p.Profile.HealthCheck.Target = profiles.TargetKubeProxy
			changed = true
		default:
			pinned := "not pinned: the API server picks one when the Service is created"
			switch {
			case svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal:
				pinned = "none: the Service is not Local"
			case svc.Spec.HealthCheckNodePort != 0:
				pinned = fmt.Sprint(svc.Spec.HealthCheckNodePort)
			}
			report(fmt.Sprintf("annotation %s=%q asks node port %d, which is not this Service's healthCheckNodePort (%s), so the "+
				"doctor cannot tell what answers there; judged as if the check asked the NodePort", key, v, port, pinned))
		}
	}
	return p, changed
}
