package cloudlb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// mapConfigs is BackendConfigs from a map "ns/name" -> health check.
type mapConfigs struct {
	mu sync.Mutex
	m  map[string]profiles.BackendConfigHealthCheck
}

func (m *mapConfigs) HealthCheck(ns, name string) (profiles.BackendConfigHealthCheck, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	hc, ok := m.m[ns+"/"+name]
	return hc, ok, nil
}

func TestCheckProfile(t *testing.T) {
	ps, err := profiles.Stock()
	if err != nil {
		t.Fatal(err)
	}
	fast := profiles.BackendConfigHealthCheck{CheckIntervalSec: ptr[int64](5), TimeoutSec: ptr[int64](5), UnhealthyThreshold: ptr[int64](2), Port: ptr[int64](32000)}
	bcs := &mapConfigs{m: map[string]profiles.BackendConfigHealthCheck{"web/fast": fast, "web/tcp": {Type: ptr("TCP")}}}
	svc := func(ann string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "web", Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000}}}}
		if ann != "" {
			s.Annotations[profiles.BackendConfigAnnotation] = ann
		}
		return s
	}
	tests := []struct {
		name    string
		prof    string
		ann     string
		bcs     BackendConfigs
		target  profiles.HealthTarget
		note    string
		applied bool
	}{
		{"no annotation", "gclb", "", bcs, profiles.TargetNodePort, "", false},
		{"applied", "gclb", `{"default":"fast"}`, bcs, profiles.TargetFixedPort, "as BackendConfig fast asks: GET / on node port 32000 every 5s (timeout 5s), healthy after 1, unhealthy after 2 (10s)", true},
		{"by port", "gclb", `{"ports":{"80":"fast"},"default":"tcp"}`, bcs, profiles.TargetFixedPort, "as BackendConfig fast asks", true},
		{"missing object", "gclb", `{"default":"gone"}`, bcs, profiles.TargetNodePort, "BackendConfig web/gone does not exist", false},
		{"refused check", "gclb", `{"default":"tcp"}`, bcs, profiles.TargetNodePort, "HTTP checks only", false},
		{"no CRD in the cluster", "gclb", `{"default":"fast"}`, nil, profiles.TargetNodePort, "serves no backendconfigs.cloud.google.com", false},
		{"bad annotation", "gclb", `fast`, bcs, profiles.TargetNodePort, "keeps profile gclb's health check", false},
		{"an L4 LB ignores it", "gke-l4", `{"default":"fast"}`, bcs, profiles.TargetKubeProxy, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := checkProfile(ps[tt.prof], svc(tt.ann), tt.bcs)
			if got.HealthCheck.Target != tt.target || (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("target %s, note %q; want %s and a note with %q", got.HealthCheck.Target, note, tt.target, tt.note)
			}
			if applied := got.RemovalLag() != ps[tt.prof].RemovalLag(); applied != tt.applied {
				t.Errorf("lag %s (profile %s): applied %v, want %v", got.RemovalLag(), ps[tt.prof].RemovalLag(), applied, tt.applied)
			}
		})
	}
}

// spec.healthCheck is read strictly: a misspelt field is an error.
func TestHealthCheckOf(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "fast", "namespace": "web"},
		"spec": map[string]any{"healthCheck": map[string]any{"checkIntervalSec": int64(5), "requestPath": "/healthz"}, "timeoutSec": int64(30)}}}
	hc, err := healthCheckOf(u)
	if err != nil || hc.CheckIntervalSec == nil || *hc.CheckIntervalSec != 5 || hc.RequestPath == nil || *hc.RequestPath != "/healthz" {
		t.Fatalf("healthCheckOf = %+v, %v", hc, err)
	}
	u.Object["spec"].(map[string]any)["healthCheck"].(map[string]any)["checkIntervalSecs"] = int64(5)
	if _, err := healthCheckOf(u); err == nil || !strings.Contains(err.Error(), "checkIntervalSecs") {
		t.Errorf("a misspelt field: %v, want an error naming it", err)
	}
	delete(u.Object, "spec")
	if hc, err := healthCheckOf(u); err != nil || hc != (profiles.BackendConfigHealthCheck{}) {
		t.Errorf("no healthCheck: %+v, %v; want the default check", hc, err)
	}
}

// A Local Service behind gclb whose BackendConfig points the check at its
// healthCheckNodePort is checked there, on the BackendConfig's timing, and
// the LB says so once in its events.
func TestControllerAppliesBackendConfig(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{
			contract.LBProfileAnnotation: "gclb", profiles.BackendConfigAnnotation: `{"default":"fast"}`}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort: 32000, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Endpoints:  []discoveryv1.Endpoint{{NodeName: ptr("a"), Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	cs := fake.NewSimpleClientset(svc, slice, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"))
	var mu sync.Mutex
	asked := map[string]bool{}
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		mu.Lock()
		defer mu.Unlock()
		asked[url] = true
		ok := url == "http://10.0.0.1:32000/healthz"
		r := cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: ok, Status: 503}
		if ok {
			r.Status = 200
		}
		return r
	}
	bcs := &mapConfigs{m: map[string]profiles.BackendConfigHealthCheck{"default/fast": {
		CheckIntervalSec: ptr[int64](1), TimeoutSec: ptr[int64](1), UnhealthyThreshold: ptr[int64](2), Port: ptr[int64](32000), RequestPath: ptr("/healthz")}}}
	pool, _ := ParseVIPRange("10.0.0.200-10.0.0.201")
	l4, l7, evs := &fakeL4{}, &fakeL7{}, &eventLog{}
	c, err := NewController(cs, WithVIPPool(pool), WithL4(l4), WithL7(l7), WithChecker(check), WithEventSink(evs),
		WithProgrammingDelay(programDelay), withBackendConfigReader(bcs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, "a the only L7 backend", func() bool {
		l7.mu.Lock()
		defer l7.mu.Unlock()
		return len(l7.last) == 1 && fmt.Sprint(l7.last[0].Backends) == fmt.Sprint([]netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:31000")})
	})
	mu.Lock()
	for u := range asked {
		if !strings.Contains(u, ":32000/healthz") {
			t.Errorf("the LB asked %s; the BackendConfig points every check at :32000/healthz", u)
		}
	}
	mu.Unlock()
	var notes []string
	for _, e := range evs.snapshot() {
		if e.Type == zdv1.EventNote && strings.Contains(e.Message, "BackendConfig") {
			notes = append(notes, e.Message)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "GET /healthz on node port 32000 every 1s") {
		t.Errorf("notes about the BackendConfig %q, want one naming the check", notes)
	}
	cancel()
	<-done
}

// The CRD is installed once and waited for until established; one that
// never gets there is a timeout that says what it waited for.
func TestEnsureBackendConfigCRD(t *testing.T) {
	lists := map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"}
	ctx := context.Background()
	if err := EnsureBackendConfigCRD(ctx, dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists), 300*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "BackendConfig CRD backendconfigs.cloud.google.com to be established") || !errors.Is(err, waitfor.ErrTimeout) {
		t.Errorf("a CRD never established: %v, want a timeout naming it", err)
	}
	ready := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "backendconfigs.cloud.google.com"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, ready)
	if err := EnsureBackendConfigCRD(ctx, dyn, time.Second); err != nil {
		t.Errorf("an established CRD someone installed: %v", err)
	}
}
