package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// GKE's BackendConfig (API group cloud.google.com, version v1) lets a
// Service tune the health check ingress-gce builds for its backend service.
// A Service names one with an annotation, for all its ports or per port
// (kubernetes/ingress-gce pkg/annotations/service.go, BackendConfigKey):
//
//	cloud.google.com/backend-config: '{"default": "web"}'
//	cloud.google.com/backend-config: '{"ports": {"80": "web"}}'
//
// and each field it sets replaces the default check's
// (pkg/translator/healthchecks.go, UpdateFromBackendConfig); a port also
// makes the check ask that fixed port on the node instead of the Service's
// NodePort (portSpecification USE_FIXED_PORT).
const (
	BackendConfigAnnotation = "cloud.google.com/backend-config"
	BackendConfigGroup      = "cloud.google.com"
	BackendConfigVersion    = "v1"
	BackendConfigResource   = "backendconfigs"
	BackendConfigKind       = "BackendConfig"
)

// BackendConfigHealthCheck is spec.healthCheck of a BackendConfig
// (kubernetes/ingress-gce pkg/apis/backendconfig/v1 HealthCheckConfig):
// every field optional, in seconds, as the GCE API takes them.
type BackendConfigHealthCheck struct {
	CheckIntervalSec   *int64  `json:"checkIntervalSec,omitempty"`
	TimeoutSec         *int64  `json:"timeoutSec,omitempty"`
	HealthyThreshold   *int64  `json:"healthyThreshold,omitempty"`
	UnhealthyThreshold *int64  `json:"unhealthyThreshold,omitempty"`
	Type               *string `json:"type,omitempty"`
	Port               *int64  `json:"port,omitempty"`
	RequestPath        *string `json:"requestPath,omitempty"`
}

// BackendConfigName returns the BackendConfig a Service's annotation names
// for servicePort ("" when it names none): the port's own entry, else the
// default.
func BackendConfigName(annotation string, servicePort int32) (string, error) {
	if strings.TrimSpace(annotation) == "" {
		return "", nil
	}
	var a struct {
		Default string            `json:"default"`
		Ports   map[string]string `json:"ports"`
	}
	if err := json.Unmarshal([]byte(annotation), &a); err != nil {
		return "", fmt.Errorf("annotation %s %q: want {\"default\": NAME} or {\"ports\": {PORT: NAME}}: %w", BackendConfigAnnotation, annotation, err)
	}
	if n, ok := a.Ports[fmt.Sprint(servicePort)]; ok {
		return n, nil
	}
	return a.Default, nil
}

// WithBackendConfig returns the profile with hc applied to the health check
// of both traffic policies (ingress-gce builds one check per backend
// service, whatever the Service's policy). Only profiles that honour a
// BackendConfig (BackendConfig: true) take one; a check the cloud LB cannot
// run is an error, so a Service never gets a check other than the one it
// asked for.
func (p Profile) WithBackendConfig(hc BackendConfigHealthCheck) (Profile, error) {
	if !p.BackendConfig {
		return p, fmt.Errorf("profile %s does not honour a BackendConfig (only GKE's Ingress LBs do)", p.Name)
	}
	c := p.HealthCheck
	var errs []error
	sec := func(field string, v *int64, set func(time.Duration)) {
		if v == nil {
			return
		}
		if *v < 1 || *v > 300 {
			errs = append(errs, fmt.Errorf("healthCheck.%s %d: want 1 to 300 seconds", field, *v))
			return
		}
		set(time.Duration(*v) * time.Second)
	}
	sec("checkIntervalSec", hc.CheckIntervalSec, func(d time.Duration) { c.Interval = Duration(d) })
	sec("timeoutSec", hc.TimeoutSec, func(d time.Duration) { c.Timeout = Duration(d) })
	count := func(field string, v *int64, set func(int)) {
		if v == nil {
			return
		}
		if *v < 1 || *v > 10 {
			errs = append(errs, fmt.Errorf("healthCheck.%s %d: want 1 to 10", field, *v))
			return
		}
		set(int(*v))
	}
	count("healthyThreshold", hc.HealthyThreshold, func(n int) { c.HealthyThreshold = n })
	count("unhealthyThreshold", hc.UnhealthyThreshold, func(n int) { c.UnhealthyThreshold = n })
	if hc.Type != nil && !strings.EqualFold(*hc.Type, "HTTP") {
		errs = append(errs, fmt.Errorf("healthCheck.type %q: the cloud LB runs HTTP checks only", *hc.Type))
	}
	if hc.RequestPath != nil {
		if !strings.HasPrefix(*hc.RequestPath, "/") {
			errs = append(errs, fmt.Errorf("healthCheck.requestPath %q: want an absolute path", *hc.RequestPath))
		}
		c.Path = *hc.RequestPath
	}
	if hc.Port != nil {
		if *hc.Port < 1 || *hc.Port > 65535 {
			errs = append(errs, fmt.Errorf("healthCheck.port %d: want 1 to 65535", *hc.Port))
		} else {
			c.Target, c.Port = TargetFixedPort, int(*hc.Port)
		}
	}
	if c.Timeout.D() > c.Interval.D() {
		// GCE refuses a check whose timeout exceeds its interval.
		errs = append(errs, fmt.Errorf("healthCheck.timeoutSec %v exceeds checkIntervalSec %v", c.Timeout.D(), c.Interval.D()))
	}
	if err := errors.Join(errs...); err != nil {
		return p, fmt.Errorf("BackendConfig for profile %s: %w", p.Name, err)
	}
	return p.WithCheck(c), nil
}

// KubeProxyCheck is the check that lets an LB whose default check of a
// Local Service goes through the NodePort (gclb) see a node's last local
// endpoint terminate: kube-proxy's answer on the Service's
// healthCheckNodePort (TargetFixedPort; Port is that port once the Service
// has one), with the timing GKE's own L4 LBs give that same port (the
// gke-l4 profile's healthCheck: kubernetes/ingress-gce
// pkg/l4/healthchecks/healthchecksl4.go, written once there). kube-proxy
// answers any path there (kubernetes v1.37.2
// pkg/proxy/healthcheck/service_health.go, hcHandler.ServeHTTP).
func KubeProxyCheck() HealthCheck {
	h := MustStock("gke-l4").HealthCheck
	h.Target, h.Port = TargetFixedPort, 0
	if h.Path == "" {
		h.Path = "/healthz"
	}
	return h
}

// BackendConfig is h as a BackendConfig's spec.healthCheck asking port on
// every node: what a Service writes to get h from an LB that honours one
// (WithBackendConfig applied to it gives h back, on port).
func (h HealthCheck) BackendConfig(port int32) BackendConfigHealthCheck {
	sec := func(d Duration) *int64 { v := int64(d.D() / time.Second); return &v }
	n := func(v int) *int64 { x := int64(v); return &x }
	typ, path, p := "HTTP", h.Path, int64(port)
	return BackendConfigHealthCheck{CheckIntervalSec: sec(h.Interval), TimeoutSec: sec(h.Timeout),
		HealthyThreshold: n(h.HealthyThreshold), UnhealthyThreshold: n(h.UnhealthyThreshold),
		Type: &typ, Port: &p, RequestPath: &path}
}

// WithCheck returns the profile with h as its check for both traffic
// policies: what a BackendConfig does (ingress-gce builds one check per
// backend service, whatever the Service's policy).
func (p Profile) WithCheck(h HealthCheck) Profile {
	p.HealthCheck, p.ClusterHealthCheck = h, nil
	return p
}

// ServiceBackendConfig returns the BackendConfig svc's annotation names for
// the backend the LB serves (the Service's first TCP port, the one an
// Ingress or the cloud LB sends to), "" when it names none.
func ServiceBackendConfig(svc *corev1.Service) (string, error) {
	ann := svc.Annotations[BackendConfigAnnotation]
	if strings.TrimSpace(ann) == "" {
		return "", nil
	}
	var port int32
	for _, p := range svc.Spec.Ports {
		if p.Protocol == corev1.ProtocolTCP || p.Protocol == "" {
			port = p.Port
			break
		}
	}
	return BackendConfigName(ann, port)
}

// DecodeBackendConfigHealthCheck reads spec.healthCheck of a BackendConfig
// object (its decoded JSON) strictly: a misspelt field is an error, not a
// default check nobody asked for. found is false when it sets none.
func DecodeBackendConfigHealthCheck(obj map[string]any) (hc BackendConfigHealthCheck, found bool, err error) {
	spec, _ := obj["spec"].(map[string]any)
	raw, ok := spec["healthCheck"]
	if !ok || raw == nil {
		return hc, false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return hc, true, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hc); err != nil {
		return hc, true, fmt.Errorf("spec.healthCheck: %w", err)
	}
	return hc, true, nil
}

// BackendConfigObject is BackendConfig namespace/name asking hc, as the API
// takes it (cloud.google.com/v1): what the hardened workload and the
// doctor's fix both write.
func BackendConfigObject(namespace, name string, hc BackendConfigHealthCheck) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(BackendConfigGroup + "/" + BackendConfigVersion)
	u.SetKind(BackendConfigKind)
	u.SetNamespace(namespace)
	u.SetName(name)
	SetBackendConfigHealthCheck(u, hc)
	return u
}

// SetBackendConfigHealthCheck makes u's spec.healthCheck hc, keeping the
// rest of its spec (DecodeBackendConfigHealthCheck reads it back).
func SetBackendConfigHealthCheck(u *unstructured.Unstructured, hc BackendConfigHealthCheck) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&hc)
	if err == nil {
		err = unstructured.SetNestedMap(u.Object, m, "spec", "healthCheck")
	}
	if err != nil {
		// A struct of pointers to numbers and strings always converts,
		// and SetNestedMap fails only on a spec that is not a map, which
		// a decoded BackendConfig cannot have.
		panic(fmt.Sprintf("profiles: BackendConfig %s/%s spec.healthCheck: %v", u.GetNamespace(), u.GetName(), err))
	}
}

// AsksKubeProxy reports whether p, as a Local Service with the given
// healthCheckNodePort meets it, checks that port: kube-proxy answers
// there (a BackendConfig whose healthCheck.port is the Service's
// healthCheckNodePort, WithBackendConfig).
func (p Profile) AsksKubeProxy(healthCheckNodePort int32) bool {
	h := p.HealthCheck
	return h.Target == TargetFixedPort && healthCheckNodePort != 0 && h.Port == int(healthCheckNodePort)
}
