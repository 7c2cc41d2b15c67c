package doctor

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// Annotations with which a Service behind an AWS LB chooses its targets'
// health check (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go
// ServiceAnnotationLoadBalancerHealthCheckPort and its siblings; the AWS
// Load Balancer Controller reads the same names, docs/guide/service/
// annotations.md "Health Check"): by default a TCP connect to the traffic
// port for externalTrafficPolicy Cluster.
const (
	annAWSCheckPort     = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"
	annAWSCheckProtocol = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol"
	annAWSCheckPath     = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"
)

// checkScaleDownUnseen is ZD026: a Cluster Service behind a node-targeted
// LB whose check does not ask kube-proxy's node-wide /healthz. The cluster
// autoscaler taints the node it removes, which fails that /healthz
// (profiles.KubeProxyHealthzPort), and drains and deletes it without the
// exclusion label; a check on the traffic port keeps passing there (kube-
// proxy forwards it to the other nodes' Pods), so the empty node stays a
// backend until its Node is deleted, and what is in flight through it
// when the machine goes is lost (suites, limit autoscalerTaintUnseen:
// measured aws-nlb 1, azure-lb 2, gclb 46 timeouts for a hardened workload).
func checkScaleDownUnseen(t *target) []result {
	p := t.profile.Profile
	if t.local || t.podDirect || t.profile.PodBackends || t.profile.FollowsServing || p.Mode == profiles.ModeAnnounce {
		return nil
	}
	hc := p.HealthCheckFor(corev1.ServiceExternalTrafficPolicyCluster)
	if asksKubeProxy(hc) || awsCheckAsksKubeProxy(t.svc, p) {
		return nil
	}
	msg := fmt.Sprintf("with externalTrafficPolicy Cluster %s checks each node %s, which keeps passing on a node the "+
		"cluster autoscaler is removing (kube-proxy forwards the check to the other nodes' Pods): its taint fails only "+
		"kube-proxy's :%d/healthz, and it does not label the node out of the LBs, so the emptied node stays a backend "+
		"until its Node is deleted and what is in flight through it when the machine goes is lost; %s",
		t.profile.Name, describeTarget(hc), profiles.KubeProxyHealthzPort, scaleDownFix(p))
	return []result{{sev: Warning, obj: t.svcObj, line: t.svcObj.FirstLine([]any{"spec", "externalTrafficPolicy"}, []any{"metadata", "annotations"}, []any{"spec"}), msg: msg}}
}

// asksKubeProxy: the check is kube-proxy's answer for the node, as the
// profile says or as a fixed port (a GKE BackendConfig's healthCheck.port)
// on kube-proxy's /healthz.
func asksKubeProxy(hc profiles.HealthCheck) bool {
	return hc.Target == profiles.TargetKubeProxy || (hc.Target == profiles.TargetFixedPort && hc.Port == profiles.KubeProxyHealthzPort)
}

// awsCheckAsksKubeProxy: the Service points an AWS LB's check at
// kube-proxy's /healthz: the port annotation names KubeProxyHealthzPort
// and the protocol is HTTP(S) (a TCP connect there passes whatever
// kube-proxy answers).
func awsCheckAsksKubeProxy(svc *corev1.Service, p profiles.Profile) bool {
	if !strings.HasPrefix(p.Name, "aws-") {
		return false
	}
	port, err := strconv.Atoi(strings.TrimSpace(svc.Annotations[annAWSCheckPort]))
	proto := strings.ToLower(strings.TrimSpace(svc.Annotations[annAWSCheckProtocol]))
	return err == nil && port == profiles.KubeProxyHealthzPort && (proto == "http" || proto == "https")
}

func describeTarget(hc profiles.HealthCheck) string {
	switch hc.Target {
	case profiles.TargetTrafficPort:
		return "with a TCP connect to the Service's NodePort"
	case profiles.TargetNodePort:
		return fmt.Sprintf("with GET %s on the Service's NodePort", hc.Path)
	case profiles.TargetFixedPort:
		return fmt.Sprintf("on port %d", hc.Port)
	}
	return "(" + string(hc.Target) + ")"
}

// scaleDownFix says how this LB's check can ask kube-proxy instead, where
// the vendor lets the Service or the cluster choose.
func scaleDownFix(p profiles.Profile) string {
	switch {
	case strings.HasPrefix(p.Name, "aws-"):
		return fmt.Sprintf("point the check at kube-proxy: annotations %s: \"%d\", %s: http, %s: /healthz",
			annAWSCheckPort, profiles.KubeProxyHealthzPort, annAWSCheckProtocol, annAWSCheckPath)
	case p.Name == "azure-lb":
		// AKS, ManagedClusterLoadBalancerProfile
		// clusterServiceLoadBalancerHealthProbeMode "Shared": "All External
		// Traffic Policy Cluster services in a Standard Load Balancer will
		// have a dedicated health probe targeting the backend nodes'
		// kube-proxy health check port 10256" (Azure Resource Manager
		// containerservice API reference); the Basic SKU has no such mode.
		return "on AKS, set the cluster's load balancer profile clusterServiceLoadBalancerHealthProbeMode: Shared " +
			"(one probe on each node's kube-proxy :10256/healthz for every Cluster Service)"
	case p.BackendConfig:
		return fmt.Sprintf("name a BackendConfig whose healthCheck asks port %d, requestPath /healthz", profiles.KubeProxyHealthzPort)
	}
	return "use externalTrafficPolicy Local (the check then asks kube-proxy's healthCheckNodePort), or remove nodes " +
		"with a tool that labels them node.kubernetes.io/exclude-from-external-load-balancers first (Karpenter)"
}
