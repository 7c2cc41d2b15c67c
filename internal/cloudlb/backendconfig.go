package cloudlb

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// backendConfigs is the BackendConfig resource (GKE's, cloud.google.com/v1).
var backendConfigs = schema.GroupVersionResource{Group: profiles.BackendConfigGroup, Version: profiles.BackendConfigVersion, Resource: profiles.BackendConfigResource}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

//go:embed backendconfig.yaml
var backendConfigCRD []byte

// EnsureBackendConfigCRD installs the BackendConfig CRD unless the cluster
// has one, and waits up to timeout for it to be served: GKE clusters come
// with it, and a Service of a profile that honours BackendConfigs may name
// one. A CRD someone else installed is left as it is.
func EnsureBackendConfigCRD(ctx context.Context, dyn dynamic.Interface, timeout time.Duration) error {
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(backendConfigCRD, &crd.Object); err != nil {
		return fmt.Errorf("BackendConfig CRD: %w", err)
	}
	crds := dyn.Resource(crdResource)
	if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("install the BackendConfig CRD (%s): %w", crd.GetName(), err)
	}
	return waitfor.Until(ctx, "the BackendConfig CRD "+crd.GetName()+" to be established", timeout, 200*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return established(got), "not established yet", nil
		})
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// BackendConfigs reads spec.healthCheck of BackendConfig objects.
type BackendConfigs interface {
	// HealthCheck returns the health check of BackendConfig ns/name; found
	// is false when there is no such object.
	HealthCheck(ns, name string) (hc profiles.BackendConfigHealthCheck, found bool, err error)
}

// listerConfigs reads BackendConfigs from an informer's cache.
type listerConfigs struct{ l cache.GenericLister }

func (b listerConfigs) HealthCheck(ns, name string) (profiles.BackendConfigHealthCheck, bool, error) {
	var hc profiles.BackendConfigHealthCheck
	obj, err := b.l.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return hc, false, nil
	}
	if err != nil {
		return hc, false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return hc, false, fmt.Errorf("BackendConfig %s/%s: unexpected object %T", ns, name, obj)
	}
	hc, err = healthCheckOf(u)
	return hc, true, err
}

// healthCheckOf decodes spec.healthCheck strictly (profiles
// DecodeBackendConfigHealthCheck): a misspelt field is an error the
// Service's events show, not a default check nobody asked for.
func healthCheckOf(u *unstructured.Unstructured) (profiles.BackendConfigHealthCheck, error) {
	hc, _, err := profiles.DecodeBackendConfigHealthCheck(u.Object)
	if err != nil {
		return hc, fmt.Errorf("BackendConfig %s/%s %w", u.GetNamespace(), u.GetName(), err)
	}
	return hc, nil
}

// checkProfile returns prof with the health check svc's BackendConfig asks
// for, and a note that says which check the LB runs for it, and why ("" for
// the profile's own check with no BackendConfig named). A BackendConfig the
// LB cannot apply leaves the profile's check, and the note says so.
func checkProfile(prof profiles.Profile, svc *corev1.Service, bcs BackendConfigs) (profiles.Profile, string) {
	ann := svc.Annotations[profiles.BackendConfigAnnotation]
	if !prof.BackendConfig || ann == "" {
		return prof, ""
	}
	key := svcKey(svc)
	name, err := profiles.ServiceBackendConfig(svc)
	switch {
	case err != nil:
		return prof, fmt.Sprintf("LB keeps profile %s's health check for %s: %v", prof.Name, key, err)
	case name == "":
		return prof, ""
	case bcs == nil:
		return prof, fmt.Sprintf("LB keeps profile %s's health check for %s: it names BackendConfig %s, but the cluster serves no %s", prof.Name, key, name, backendConfigs.GroupResource())
	}
	hc, found, err := bcs.HealthCheck(svc.Namespace, name)
	if err == nil && !found {
		err = fmt.Errorf("BackendConfig %s/%s does not exist", svc.Namespace, name)
	}
	var eff profiles.Profile
	if err == nil {
		eff, err = prof.WithBackendConfig(hc)
	}
	if err != nil {
		return prof, fmt.Sprintf("LB keeps profile %s's health check for %s: %v", prof.Name, key, err)
	}
	return eff, fmt.Sprintf("LB checks %s as BackendConfig %s asks: %s", key, name, describeCheck(eff.HealthCheck))
}

// describeCheck says what a check asks, how often, and when it flips.
func describeCheck(h profiles.HealthCheck) string {
	var what string
	switch h.Target {
	case profiles.TargetFixedPort:
		what = fmt.Sprintf("GET %s on node port %d", h.Path, h.Port)
	case profiles.TargetNodePort:
		what = fmt.Sprintf("GET %s on the Service's NodePort", h.Path)
	case profiles.TargetPod:
		what = "a TCP connect to each Pod's serving port"
		if h.Path != "" {
			what = fmt.Sprintf("GET %s on each Pod's serving port", h.Path)
		}
	default:
		what = string(h.Target)
	}
	return fmt.Sprintf("%s every %s (timeout %s), healthy after %d, unhealthy after %d (%s)",
		what, h.Interval.D(), h.Timeout.D(), h.HealthyThreshold, h.UnhealthyThreshold, h.DetectionTime())
}
