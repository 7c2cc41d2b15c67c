package scenario

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/kube"
)

func TestDirName(t *testing.T) {
	for in, want := range map[string]string{
		"rolling-update/Local/hardened": "rolling-update-local-hardened",
		"Source IP (Cluster)":           "source-ip-cluster-",
	} {
		if got := DirName(strings.ToLower(in)); got != want {
			t.Errorf("DirName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSelectorIsSortedAndStable(t *testing.T) {
	got := selector(map[string]string{"b": "2", "a": "1"})
	if got != "a=1,b=2" {
		t.Errorf("selector = %q", got)
	}
}

func TestWaitServing(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	if err := WaitServing(context.Background(), srv.URL, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n.Load() < 4 {
		t.Errorf("returned after %d probes, want two 200s after the 503s", n.Load())
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	err := WaitServing(context.Background(), down.URL, 700*time.Millisecond)
	if !errors.Is(err, kube.ErrTimeout) || !strings.Contains(err.Error(), "502") {
		t.Errorf("err = %v, want a timeout naming the last status", err)
	}
}

func TestSourceAddressLoopback(t *testing.T) {
	got, err := SourceAddress("127.0.0.1")
	if err != nil || got != "127.0.0.1" {
		t.Errorf("SourceAddress(127.0.0.1) = %q, %v", got, err)
	}
}

func TestBeginRejectsBadWorkloadBeforeTouchingTheCluster(t *testing.T) {
	cs := fake.NewClientset()
	dir := t.TempDir()
	env := &Env{Clientset: cs, OutDir: dir}
	_, err := Begin(context.Background(), env, Spec{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "bad", Role: zdv1.RoleAssertion},
		Workload:     []fixtures.Option{fixtures.WithReplicas(-1)},
	})
	if err == nil {
		t.Fatal("negative replicas accepted")
	}
	if acts := cs.Actions(); len(acts) != 0 {
		t.Errorf("cluster touched: %v", acts)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestBeginFailureKeepsEvidenceAndCleansUp(t *testing.T) {
	cs := fake.NewClientset()
	dir := t.TempDir()
	env := &Env{Clientset: cs, OutDir: dir, ReadyTimeout: 300 * time.Millisecond}
	_, err := Begin(context.Background(), env, Spec{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "never-ready", Role: zdv1.RoleAssertion},
		Workload:     []fixtures.Option{fixtures.WithNamespace("zd-test")},
	})
	if err == nil || !errors.Is(err, kube.ErrTimeout) {
		t.Fatalf("err = %v, want a rollout timeout (the fake cluster runs no controllers)", err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "never-ready", "run.jsonl"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(string(b), `"kind":"end"`) || !strings.Contains(string(b), "timed out") {
		t.Errorf("run file lacks the end line with the error:\n%s", b)
	}
	if _, gerr := cs.CoreV1().Namespaces().Get(context.Background(), "zd-test", metav1.GetOptions{}); gerr == nil {
		t.Error("namespace left behind")
	}
}

// A cloud LB that never settles stops the scenario before any load, with the
// LB's reason, and the run leaves its evidence and no namespace behind.
func TestBeginWaitsForTheLB(t *testing.T) {
	cs := fakeCluster("zd-lb")
	var asked string
	dir := t.TempDir()
	env := &Env{Clientset: cs, OutDir: dir, ReadyTimeout: 5 * time.Second}
	_, err := Begin(context.Background(), env, Spec{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "lb-never-settles", Role: zdv1.RoleAssertion},
		Workload:     []fixtures.Option{fixtures.WithNamespace("zd-lb"), fixtures.WithReplicas(1)},
		LB: LBHooks{WaitSettled: func(_ context.Context, ns, name string, _ time.Duration) (string, error) {
			asked = ns + "/" + name
			return "", errors.New("cloud LB did not settle service zd-lb/echo (last: w2 should turn healthy)")
		}},
	})
	if err == nil || !strings.Contains(err.Error(), "w2 should turn healthy") {
		t.Fatalf("err = %v, want the LB's reason", err)
	}
	if asked != "zd-lb/echo" {
		t.Fatalf("WaitLB asked about %q, want zd-lb/echo", asked)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "lb-never-settles", "run.jsonl"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(string(b), "w2 should turn healthy") {
		t.Errorf("run file lacks the LB's reason:\n%s", b)
	}
	if _, gerr := cs.CoreV1().Namespaces().Get(context.Background(), "zd-lb", metav1.GetOptions{}); gerr == nil {
		t.Error("namespace left behind")
	}
}

func ptr[T any](v T) *T { return &v }

func TestLBEventsOf(t *testing.T) {
	since := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	var got []string
	sink := lbEventsOf("zd-a/echo", since, zdv1.EventFunc(func(e zdv1.Event) error {
		got = append(got, e.Message)
		return nil
	}))
	for _, e := range []zdv1.Event{
		{Time: since.Add(-time.Second), Message: "same service, earlier run", Fields: map[string]string{"service": "zd-a/echo"}},
		{Time: since.Add(time.Second), Message: "other scenario", Fields: map[string]string{"service": "zd-b/echo"}},
		{Time: since.Add(time.Second), Message: "no service"},
		{Time: since, Message: "this scenario", Fields: map[string]string{"service": "zd-a/echo"}},
	} {
		if err := sink.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, ",") != "this scenario" {
		t.Fatalf("passed %q, want only this scenario's event", got)
	}
}

// fakeCluster is a fake API server with a ready endpoint of Service echo in
// each namespace. It runs no controllers, so a created Deployment is rolled
// out and a created Service has its (loopback) address at once.
func fakeCluster(namespaces ...string) *fake.Clientset {
	ready := true
	var objs []runtime.Object
	for _, ns := range namespaces {
		objs = append(objs, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "echo-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr("w1"),
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("create", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.CreateAction).GetObject().(*appsv1.Deployment)
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return false, nil, nil
	})
	cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.0.0.1"}} // loopback: nothing else may be aimed at
		return false, nil, nil
	})
	return cs
}

// A load that never got an answer says where the Service sends it on the
// Pods: the targetPort and what the EndpointSlices resolved it to, or that
// they resolved nothing (a name no container declares).
func TestPodPortHint(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}}}}
	port, name := int32(8080), "http"
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		port int32
		want string
	}{
		{"resolved", []runtime.Object{svc, es}, 80, "sends port 80 to the Pods' port web (endpoints: 8080): if nothing answers there"},
		{"a name nothing declares", []runtime.Object{svc}, 80, "which no endpoint has: a targetPort name the Pods' containers do not declare"},
		{"no such port", []runtime.Object{svc}, 443, "has no port 443"},
		{"no Service", nil, 80, ""},
	} {
		got := podPortHint(ctx, fake.NewClientset(tc.objs...), "ns", "web", tc.port)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
