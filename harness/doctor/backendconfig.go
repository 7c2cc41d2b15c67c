package doctor

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// A GKE BackendConfig (cloud.google.com/v1; kubernetes/ingress-gce
// pkg/apis/backendconfig/v1) lets a Service choose the health check of the
// backend service GKE builds for it: ingress-gce applies spec.healthCheck
// over the default check (pkg/translator/healthchecks.go,
// UpdateFromBackendConfig). The doctor reads that part, the one that
// decides when a node leaves the LB, and judges a Service that names one
// against its LB profile with that check (profiles.Profile
// WithBackendConfig), as zerodrop's cloud LB runs it.

// backendConfigOf is the BackendConfig object o decoded as (typedTarget):
// the rules read spec.healthCheck only, and a fix that adds or changes one
// writes it back whole.
func backendConfigOf(o *Object) *unstructured.Unstructured {
	u, _ := o.Obj.(*unstructured.Unstructured)
	if u == nil || u.GetKind() != profiles.BackendConfigKind || apiGroup(u.GetAPIVersion()) != profiles.BackendConfigGroup {
		return nil
	}
	return u
}

// withBackendConfig is choice with the check each of its profiles that
// honours a BackendConfig runs for the Service so, when so names one the
// input holds; what cannot be read that way is a problem (ZD091), and the
// profile's default check stands. A BackendConfig that asks a fixed node
// port counts only when that port is the Service's own healthCheckNodePort,
// pinned in spec.healthCheckNodePort, or, for a Cluster Service,
// kube-proxy's node-wide /healthz (profiles.KubeProxyHealthzPort):
// otherwise the doctor cannot tell what answers there.
func withBackendConfig(so *Object, ix *index, choice lbChoice, problems []string) (lbChoice, []string) {
	svc := so.Obj.(*corev1.Service)
	if _, named := svc.Annotations[profiles.BackendConfigAnnotation]; !named {
		return choice, problems
	}
	name, err := profiles.ServiceBackendConfig(svc)
	changed := false
	for i, p := range choice.profiles {
		if !p.Profile.BackendConfig {
			continue
		}
		keep := func(why string) {
			problems = appendOnce(problems, fmt.Sprintf("%s; judged by profile %s's default check (%s)", why, p.Name, p.Describe()))
		}
		if err != nil {
			keep(err.Error())
			continue
		}
		if name == "" {
			continue
		}
		ref := "BackendConfig " + so.Namespace + "/" + name
		bo := ix.backendConfig(so.Namespace, name)
		if bo == nil {
			keep(fmt.Sprintf("annotation %s names %s, which is not in the input", profiles.BackendConfigAnnotation, ref))
			continue
		}
		hc, found, derr := profiles.DecodeBackendConfigHealthCheck(backendConfigOf(bo).Object)
		if derr != nil {
			keep(ref + " " + derr.Error())
			continue
		}
		if !found {
			continue
		}
		eff, werr := p.Profile.WithBackendConfig(hc)
		if werr != nil {
			keep(ref + ": " + werr.Error())
			continue
		}
		// kube-proxy's node-wide /healthz answers a Cluster Service's
		// check for the node (ZD026's fix); a Local one's must be its own
		// healthCheckNodePort.
		nodeWide := svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal && eff.HealthCheck.Port == profiles.KubeProxyHealthzPort
		if h := eff.HealthCheck; h.Target == profiles.TargetFixedPort && !eff.AsksKubeProxy(svc.Spec.HealthCheckNodePort) && !nodeWide {
			pinned := "not pinned: the API server picks one when the Service is created"
			if svc.Spec.HealthCheckNodePort != 0 {
				pinned = fmt.Sprint(svc.Spec.HealthCheckNodePort)
			}
			keep(fmt.Sprintf("%s asks node port %d, which is not this Service's healthCheckNodePort (%s), so the doctor "+
				"cannot tell what answers there", ref, h.Port, pinned))
			continue
		}
		lp := fromProfile(eff)
		lp.Source = ref + " over profile " + p.Name + " (kubernetes/ingress-gce pkg/translator/healthchecks.go UpdateFromBackendConfig); " + lp.Source
		choice.profiles[i] = lp
		changed = true
	}
	if changed {
		choice.how += "; health check from the Service's BackendConfig " + name
		sort.SliceStable(choice.profiles, func(i, j int) bool { return choice.profiles[i].RemovalLag() > choice.profiles[j].RemovalLag() })
	}
	return choice, problems
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// checkThroughNodePort (ZD007): with Local behind an LB whose check goes
// through the Service's NodePort (gclb's default instance-group check),
// kube-proxy gives the check, like the traffic, to the node's terminating
// endpoint while it serves (KEP-1669; kubernetes v1.37.2
// pkg/proxy/topology.go CategorizeEndpoints), so the node's check fails
// only after the Pod exits, and the LB keeps sending for its whole lag
// after that. A node that loses its last Pod for good (a drain, a
// scale-down, a rollout that places the new Pod elsewhere) drops what the
// LB sends it meanwhile, whatever the preStop. Where the LB lets the
// Service choose its check (a BackendConfig), pointing it at kube-proxy's
// healthCheckNodePort gives the L4 LBs' mechanism (harness/recipe).
func checkThroughNodePort(t *target) []result {
	lb := t.profile.RecipeLB()
	if !t.local || !lb.ChecksThroughNodePort {
		return nil
	}
	msg := fmt.Sprintf("behind %s the LB checks each node through the Service's NodePort (%s), and with "+
		"externalTrafficPolicy Local kube-proxy gives that check to a terminating Pod while it serves: a node that "+
		"loses its last Pod (a drain, a scale-down, a rollout that starts the new Pod elsewhere) keeps getting new "+
		"connections for up to %s after the Pod exits, which it drops, whatever the preStop",
		t.profile.Name, t.profile.Describe(), seconds(t.profile.RemovalLag()))
	if lb.BackendConfig {
		msg += "; name a BackendConfig whose healthCheck.port is the Service's healthCheckNodePort (pinned in " +
			"spec.healthCheckNodePort), so the LB asks kube-proxy, which fails as the last Pod starts terminating"
	} else {
		msg += "; the LB offers no way to point the check elsewhere: keep more than one Pod per node, or use " +
			"container-native (Pod) backends"
	}
	return []result{{sev: Error, obj: t.svcObj, line: t.svcObj.FirstLine([]any{"metadata", "annotations"}, []any{"spec"}), msg: msg}}
}

// fixCheckThroughNodePort (ZD007's fix, on the Service and a BackendConfig
// the input holds): the Service's healthCheckNodePort pinned (kept if set,
// else pinnedHealthCheckNodePort), the Service naming a BackendConfig, and
// that BackendConfig's check the recipe's kube-proxy check on that port. A
// BackendConfig the Service names but the input lacks is the user's to
// change; adders makes one when the Service names none.
func fixCheckThroughNodePort(t *target) string {
	r := t.recipe(corev1.ServiceExternalTrafficPolicyLocal)
	// Only a LoadBalancer Service has a healthCheckNodePort (the API
	// server refuses one elsewhere): behind an Ingress the fix is the user's.
	if r.LBCheck == nil || !t.local || t.svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return ""
	}
	svc := t.svc
	name, err := profiles.ServiceBackendConfig(svc)
	if err != nil {
		return ""
	}
	var changes []string
	if svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = pinnedHealthCheckNodePort(t.svcObj)
		changes = append(changes, fmt.Sprintf("spec.healthCheckNodePort: %d (pinned so the BackendConfig can name it; "+
			"if the API server refuses it as taken, pick another free port of the NodePort range and change both)", svc.Spec.HealthCheckNodePort))
	}
	if name == "" {
		name = svc.Name
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[profiles.BackendConfigAnnotation] = `{"default":"` + name + `"}`
		changes = append(changes, fmt.Sprintf("annotation %s: %s", profiles.BackendConfigAnnotation, svc.Annotations[profiles.BackendConfigAnnotation]))
	}
	if bo := t.bcs(t.svcObj.Namespace, name); bo != nil {
		profiles.SetBackendConfigHealthCheck(backendConfigOf(bo), r.LBCheck.BackendConfig(svc.Spec.HealthCheckNodePort))
		changes = append(changes, fmt.Sprintf("BackendConfig %s/%s: %s", t.svcObj.Namespace, name, describeLBCheck(*r.LBCheck, svc.Spec.HealthCheckNodePort)))
	}
	if len(changes) == 0 {
		return ""
	}
	return strings.Join(changes, "; ")
}

// addBackendConfig (ZD007's adder) is the BackendConfig the fixed Service
// names when the input has none of that name.
func addBackendConfig(t *target) (*Object, string) {
	r := t.recipe(corev1.ServiceExternalTrafficPolicyLocal)
	name, err := profiles.ServiceBackendConfig(t.svc)
	if r.LBCheck == nil || err != nil || name == "" || t.svc.Spec.HealthCheckNodePort == 0 || t.bcs(t.svcObj.Namespace, name) != nil {
		return nil, ""
	}
	u := profiles.BackendConfigObject(t.svcObj.Namespace, name, r.LBCheck.BackendConfig(t.svc.Spec.HealthCheckNodePort))
	o := &Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: name, Obj: u,
		Source: Source{File: t.svcObj.Source.File}}
	return o, fmt.Sprintf("new BackendConfig %s/%s: %s", u.GetNamespace(), name, describeLBCheck(*r.LBCheck, t.svc.Spec.HealthCheckNodePort))
}

func describeLBCheck(h profiles.HealthCheck, port int32) string {
	return fmt.Sprintf("healthCheck GET %s on port %d every %s, unhealthy after %d (%s, the timing GKE's L4 LBs give "+
		"the healthCheckNodePort)", h.Path, port, h.Interval.D(), h.UnhealthyThreshold, seconds(h.DetectionTime()))
}

// pinnedHealthCheckNodePort is the port a fix pins for so's
// healthCheckNodePort: one of the default NodePort range (30000-32767,
// kubernetes v1.37.2 pkg/kubeapiserver/options/options.go
// DefaultServiceNodePortRange) chosen from the Service's name, so the fix
// of one input is always the same.
func pinnedHealthCheckNodePort(so *Object) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(so.Namespace + "/" + so.Name))
	return 30000 + int32(h.Sum32()%2768)
}
