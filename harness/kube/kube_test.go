package kube

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

type events struct {
	mu sync.Mutex
	l  []zdv1.Event
}

func (e *events) Event(ev zdv1.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.l = append(e.l, ev)
	return nil
}

func (e *events) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.l {
		out = append(out, ev.Type)
	}
	return out
}

func i32(v int32) *int32 { return &v }

func TestRolloutDone(t *testing.T) {
	base := func(mut func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Generation: 2},
			Spec:   appsv1.DeploymentSpec{Replicas: i32(3)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}}
		mut(d)
		return d
	}
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		done    bool
		wantErr bool
	}{
		{"complete", base(func(*appsv1.Deployment) {}), true, false},
		{"old generation", base(func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }), false, false},
		{"surge pod still there", base(func(d *appsv1.Deployment) { d.Status.Replicas = 4 }), false, false},
		{"not all updated", base(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 2 }), false, false},
		{"not all available", base(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }), false, false},
		{"progress deadline", base(func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 2
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: "stuck"}}
		}), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, state, err := rolloutDone(tt.d)
			if done != tt.done || (err != nil) != tt.wantErr {
				t.Errorf("done=%t err=%v, want done=%t err=%t (state %s)", done, err, tt.done, tt.wantErr, state)
			}
			if state == "" {
				t.Error("no state description")
			}
		})
	}
}

func TestDaemonSetDone(t *testing.T) {
	base := func(mut func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "speaker", Namespace: "metallb-system", Generation: 1},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberReady: 4}}
		mut(d)
		return d
	}
	tests := []struct {
		name string
		d    *appsv1.DaemonSet
		done bool
	}{
		{"ready everywhere", base(func(*appsv1.DaemonSet) {}), true},
		{"old generation", base(func(d *appsv1.DaemonSet) { d.Status.ObservedGeneration = 0 }), false},
		{"nothing scheduled yet", base(func(d *appsv1.DaemonSet) { d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 1} }), false},
		{"one node not updated", base(func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled = 3 }), false},
		{"one node not ready", base(func(d *appsv1.DaemonSet) { d.Status.NumberReady = 3 }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, state, err := daemonSetDone(tt.d)
			if done != tt.done || err != nil || state == "" {
				t.Errorf("done=%t err=%v state=%q, want done=%t", done, err, state, tt.done)
			}
		})
	}
}

func TestPollTimeoutSaysWhatAndLastState(t *testing.T) {
	err := poll(context.Background(), "the thing", 50*time.Millisecond, 10*time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "still 2 of 3", nil
	})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v does not wrap ErrTimeout", err)
	}
	for _, want := range []string{"the thing", "still 2 of 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCreateRefusesUnknownKinds(t *testing.T) {
	c := New(fake.NewClientset())
	err := c.Create(context.Background(), &corev1.Pod{})
	if err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Fatalf("err = %v, want unsupported", err)
	}
}

// A stand-in is a Deployment or a StatefulSet with what its Pods name.
func TestCreateEveryStandInKind(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	meta := metav1.ObjectMeta{Name: "shop", Namespace: "ns"}
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: meta}, &corev1.Secret{ObjectMeta: meta}, &corev1.ServiceAccount{ObjectMeta: meta},
		&appsv1.StatefulSet{ObjectMeta: meta}, &appsv1.Deployment{ObjectMeta: meta},
	}
	if err := New(cs).Create(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets("ns").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("statefulset: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("ns").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("serviceaccount: %v", err)
	}
}

func TestCreateAndWaitLoadBalancer(t *testing.T) {
	ctx := context.Background()
	ev := &events{}
	cs := fake.NewClientset()
	c := New(cs, WithEventSink(ev))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns"}}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, svc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLoadBalancer(ctx, "ns", "echo", 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("no address yet: err = %v, want timeout", err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.18.255.200"}}
	if _, err := cs.CoreV1().Services("ns").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip, err := c.WaitLoadBalancer(ctx, "ns", "echo", time.Second)
	if err != nil || ip != "172.18.255.200" {
		t.Fatalf("ip %q err %v", ip, err)
	}
	if got := ev.types(); len(got) != 2 || got[0] != zdv1.EventAction {
		t.Errorf("events %v, want two create actions", got)
	}
}

func TestEndpointsAndWaitReady(t *testing.T) {
	ctx := context.Background()
	tr, f := true, false
	node := "w1"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.2"}, NodeName: &node, TargetRef: &corev1.ObjectReference{Name: "b"}, Conditions: discoveryv1.EndpointConditions{Ready: &tr}},
			{Addresses: []string{"10.244.1.3"}, NodeName: &node, TargetRef: &corev1.ObjectReference{Name: "a"}, Conditions: discoveryv1.EndpointConditions{Ready: &f, Serving: &tr, Terminating: &tr}},
		},
	}
	c := New(fake.NewClientset(slice))
	eps, err := c.Endpoints(ctx, "ns", "echo")
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || eps[0].Pod != "a" || !eps[0].Terminating || eps[0].Ready || !eps[1].Ready {
		t.Fatalf("endpoints %+v", eps)
	}
	ready, err := c.WaitReadyEndpoints(ctx, "ns", "echo", 1, time.Second)
	if err != nil || len(ready) != 1 || ready[0].Pod != "b" {
		t.Fatalf("ready %+v err %v", ready, err)
	}
	if _, err := c.WaitReadyEndpoints(ctx, "ns", "echo", 2, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "a@w1 ready=false") {
		t.Fatalf("err %v should describe the endpoints seen", err)
	}
	// A Service someone else deployed: settled once every endpoint it has
	// is ready, however many; a terminating one keeps it unsettled.
	if _, err := c.WaitEndpointsSettled(ctx, "ns", "echo", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "a@w1 ready=false") {
		t.Fatalf("a terminating endpoint: err %v, want it named", err)
	}
	slice.Endpoints[1].Conditions = discoveryv1.EndpointConditions{Ready: &tr}
	c = New(fake.NewClientset(slice))
	if ready, err := c.WaitEndpointsSettled(ctx, "ns", "echo", time.Second); err != nil || len(ready) != 2 {
		t.Fatalf("two ready endpoints: ready %+v err %v", ready, err)
	}
	c = New(fake.NewClientset())
	if _, err := c.WaitEndpointsSettled(ctx, "ns", "echo", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no endpoint") {
		t.Fatalf("no endpoint: err %v", err)
	}
}

func TestCordonAndNodesInPool(t *testing.T) {
	ctx := context.Background()
	ev := &events{}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Labels: map[string]string{"zerodrop.dev/pool": "pool-a"}}}
	cs := fake.NewClientset(n)
	c := New(cs, WithEventSink(ev))
	if err := c.Cordon(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
	if !got.Spec.Unschedulable {
		t.Error("node not cordoned")
	}
	if err := c.Uncordon(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if ts := ev.types(); strings.Join(ts, ",") != "cordon,uncordon" {
		t.Errorf("events %v", ts)
	}
	names, err := c.NodesInPool(ctx, "pool-a")
	if err != nil || len(names) != 1 || names[0] != "w1" {
		t.Errorf("pool-a nodes %v err %v", names, err)
	}
	if err := c.Cordon(ctx, "nope"); err == nil {
		t.Error("cordon of a missing node succeeded")
	}
}

func TestDrainEmptyNodeCompletes(t *testing.T) {
	ctx := context.Background()
	ev := &events{}
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}})
	res := New(cs, WithEventSink(ev)).Drain(ctx, "w1", 5*time.Second)
	if !res.Completed || res.Err != nil {
		t.Fatalf("drain of an empty node: %+v", res)
	}
	if ts := strings.Join(ev.types(), ","); ts != "cordon,drain-start,drain-end" {
		t.Errorf("events %s", ts)
	}
}

func TestLastWarning(t *testing.T) {
	ev := func(name, pod, typ, reason, msg string, at time.Time, count int32) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod},
			Type: typ, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at), Count: count}
	}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := New(fake.NewClientset(
		ev("e1", "web-a", corev1.EventTypeWarning, "Failed", "old", t0, 1),
		ev("e2", "web-a", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 412", t0.Add(time.Minute), 37),
		ev("e3", "web-a", corev1.EventTypeNormal, "Started", "newer but normal", t0.Add(2*time.Minute), 1),
		ev("e4", "web-b", corev1.EventTypeWarning, "BackOff", "another pod", t0.Add(3*time.Minute), 1),
	))
	got, err := c.LastWarning(context.Background(), "ns", "web-a")
	if err != nil || got != "Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 412 (37 times)" {
		t.Errorf("LastWarning = %q, %v", got, err)
	}
	if got, err := c.LastWarning(context.Background(), "ns", "web-c"); err != nil || got != "" {
		t.Errorf("no events: %q, %v", got, err)
	}
}

// TestDeleteNamespaceTakesItsPodsAtOnce: the namespace's Pods are deleted
// with grace period 0 (a hardened Pod's shutdown would otherwise outlast
// the wait and hold the next scenario's drain), and the wait ends when the
// namespace is gone.
func TestDeleteNamespaceTakesItsPodsAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "zd-x"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-1", Namespace: "zd-x"}}
	cs := fake.NewClientset(ns, pod)
	var grace []*int64
	cs.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if d, ok := a.(k8stesting.DeleteCollectionActionImpl); ok {
			grace = append(grace, d.GetDeleteOptions().GracePeriodSeconds)
		}
		return false, nil, nil
	})
	if err := New(cs).DeleteNamespace(ctx, "zd-x", time.Second); err != nil {
		t.Fatal(err)
	}
	if len(grace) != 1 || grace[0] == nil || *grace[0] != 0 {
		t.Errorf("pods deleted with grace %v, want one delete-collection with grace period 0", grace)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "zd-x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace still there: %v", err)
	}
	// Gone already: nothing to do.
	if err := New(cs).DeleteNamespace(ctx, "zd-x", time.Second); err != nil {
		t.Errorf("deleting a namespace that is gone: %v", err)
	}
}

// A lifecycle tool's taint and label land on the node, once per key and
// effect, each with its event.
func TestTaintAndLabel(t *testing.T) {
	ctx := context.Background()
	ev := &events{}
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoExecute}}}})
	c := New(cs, WithEventSink(ev))
	ta := corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}
	for range 2 {
		if err := c.Taint(ctx, "n1", ta, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Label(ctx, "n1", corev1.LabelNodeExcludeBalancers, "true", "test"); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 2 || n.Spec.Taints[1] != ta || n.Labels[corev1.LabelNodeExcludeBalancers] != "true" {
		t.Errorf("node %+v %v", n.Spec.Taints, n.Labels)
	}
	types := ev.types()
	if want := "node-tainted node-tainted node-labelled"; strings.Join(types, " ") != want {
		t.Errorf("events %v, want %s", types, want)
	}
	if err := c.Taint(ctx, "missing", ta, "test"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("taint of a missing node: %v", err)
	}
}
