package observe

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestEndpointChanges(t *testing.T) {
	ready := endpointState{Pod: "p1", Node: "n1", Ready: true, Serving: true}
	terminating := endpointState{Pod: "p1", Node: "n1", Ready: false, Serving: true, Terminating: true}
	gone := endpointState{Pod: "p1", Node: "n1", Ready: false, Serving: false, Terminating: true}
	unready := endpointState{Pod: "p1", Node: "n1", Ready: false, Serving: false}
	tests := []struct {
		name      string
		prev, now map[string]endpointState
		want      []string
	}{
		{"new ready endpoint", nil, map[string]endpointState{"p1": ready}, []string{zdv1.EventEndpointAdded}},
		{"new unready endpoint is not added", nil, map[string]endpointState{"p1": unready}, nil},
		{"ready to terminating (KEP-1669)", map[string]endpointState{"p1": ready}, map[string]endpointState{"p1": terminating}, []string{zdv1.EventEndpointTerminating}},
		{"ready to unready", map[string]endpointState{"p1": ready}, map[string]endpointState{"p1": unready}, []string{zdv1.EventEndpointRemoved}},
		{"ready endpoint vanishes", map[string]endpointState{"p1": ready}, nil, []string{zdv1.EventEndpointRemoved}},
		{"terminating endpoint vanishes", map[string]endpointState{"p1": terminating}, nil, []string{zdv1.EventEndpointRemoved}},
		{"terminating stops serving", map[string]endpointState{"p1": terminating}, map[string]endpointState{"p1": gone}, []string{zdv1.EventEndpointStoppedServing}},
		{"no change", map[string]endpointState{"p1": ready}, map[string]endpointState{"p1": ready}, nil},
		{"unready back to ready", map[string]endpointState{"p1": unready}, map[string]endpointState{"p1": ready}, []string{zdv1.EventEndpointAdded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := endpointChanges("ns/svc", tt.prev, tt.now)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d changes %+v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i].typ != tt.want[i] {
					t.Errorf("change %d: got %s, want %s", i, got[i].typ, tt.want[i])
				}
				if got[i].fields["node"] != "n1" || got[i].fields["service"] != "ns/svc" {
					t.Errorf("change %d: fields %v lack node/service", i, got[i].fields)
				}
			}
		})
	}
}

func TestNodeChanges(t *testing.T) {
	tests := []struct {
		name    string
		prev    nodeState
		known   bool
		now     nodeState
		deleted bool
		want    []string
	}{
		{"new node", nodeState{}, false, nodeState{ready: true}, false, []string{zdv1.EventNodeAdded}},
		{"cordon", nodeState{ready: true}, true, nodeState{ready: true, unschedulable: true}, false, []string{zdv1.EventCordon}},
		{"uncordon", nodeState{ready: true, unschedulable: true}, true, nodeState{ready: true}, false, []string{zdv1.EventUncordon}},
		{"not ready", nodeState{ready: true}, true, nodeState{}, false, []string{zdv1.EventNote}},
		{"deleted", nodeState{ready: true}, true, nodeState{ready: true}, true, []string{zdv1.EventNodeRemoved}},
		{"heartbeat only", nodeState{ready: true}, true, nodeState{ready: true}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeChanges("n1", tt.prev, tt.known, tt.now, tt.deleted)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].typ != tt.want[i] || got[i].object != "node/n1" {
					t.Errorf("change %d: got %s %s, want %s node/n1", i, got[i].typ, got[i].object, tt.want[i])
				}
			}
		})
	}
}

func TestPodChanges(t *testing.T) {
	tests := []struct {
		name    string
		prev    podState
		known   bool
		now     podState
		deleted bool
		want    []string
	}{
		{"created unready", podState{}, false, podState{node: "n1"}, false, []string{zdv1.EventNote}},
		{"created ready", podState{}, false, podState{node: "n1", ready: true}, false, []string{zdv1.EventNote, zdv1.EventPodReady}},
		{"becomes ready", podState{node: "n1"}, true, podState{node: "n1", ready: true}, false, []string{zdv1.EventPodReady}},
		{"terminating and unready at once", podState{node: "n1", ready: true}, true, podState{node: "n1", terminating: true}, false, []string{zdv1.EventPodTerminating, zdv1.EventPodUnready}},
		{"deleted", podState{node: "n1"}, true, podState{node: "n1"}, true, []string{zdv1.EventPodDeleted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podChanges("ns/p", tt.prev, tt.known, tt.now, tt.deleted)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].typ != tt.want[i] {
					t.Errorf("change %d: got %s, want %s", i, got[i].typ, tt.want[i])
				}
			}
		})
	}
}

type recorder struct {
	mu     sync.Mutex
	events []zdv1.Event
}

func (r *recorder) Event(e zdv1.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) waitFor(t *testing.T, typ, object string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.events {
			if e.Type == typ && e.Object == object {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("no %s event for %s within 5s; got %+v", typ, object, r.events)
}

// TestObserverBaselineAndChanges drives a fake clientset (unit test only): the
// initial state produces no events, changes made after Start do.
func TestObserverBaselineAndChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := true
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Labels: map[string]string{PoolLabel: "pool-a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-abc", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: strPtr("w1"),
			TargetRef:  &corev1.ObjectReference{Name: "p1"},
			Conditions: discoveryv1.EndpointConditions{Ready: &tr, Serving: &tr}}},
	}
	client := fake.NewClientset(node, slice)
	rec := &recorder{}
	o := New(client, Target{Namespace: "ns", Service: "svc", PodSelector: "app=echo"}, rec)
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	baseline := len(rec.events)
	rec.mu.Unlock()
	if baseline != 0 {
		t.Fatalf("baseline produced %d events", baseline)
	}
	node = node.DeepCopy()
	node.Spec.Unschedulable = true
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, zdv1.EventCordon, "node/w1")

	f := false
	slice = slice.DeepCopy()
	slice.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: &f, Serving: &tr, Terminating: &tr}
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, zdv1.EventEndpointTerminating, "endpoint/ns/svc/p1")
	if d := o.Describe(); d == "" {
		t.Error("Describe is empty")
	}
}

func TestStartRejectsBadTarget(t *testing.T) {
	client := fake.NewClientset()
	if err := New(client, Target{}, nil).Start(context.Background()); err == nil {
		t.Error("empty namespace accepted")
	}
	if err := New(client, Target{Namespace: "ns", PodSelector: "a in (("}, nil).Start(context.Background()); err == nil {
		t.Error("bad selector accepted")
	}
}

func strPtr(s string) *string { return &s }
