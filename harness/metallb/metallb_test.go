package metallb

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"zerodrop.dev/zerodrop/harness/kube"
)

func TestParseAnnouncement(t *testing.T) {
	for _, tc := range []struct {
		msg, node, proto string
		ok               bool
	}{
		{`announcing from node "zerodrop-worker2" with protocol "layer2"`, "zerodrop-worker2", "layer2", true},
		{`announcing from node "n1" with protocol "bgp"`, "n1", "bgp", true},
		{`announcing from node "" with protocol "layer2"`, "", "", false},
		{`announcing from node zerodrop-worker with protocol layer2`, "", "", false},
		{`IP allocated`, "", "", false},
	} {
		node, proto, ok := ParseAnnouncement(tc.msg)
		if node != tc.node || proto != tc.proto || ok != tc.ok {
			t.Errorf("ParseAnnouncement(%q) = %q, %q, %v; want %q, %q, %v", tc.msg, node, proto, ok, tc.node, tc.proto, tc.ok)
		}
	}
}

func event(name, svc, reason, msg string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: "ns", Name: svc},
		Reason:         reason, Message: msg, LastTimestamp: metav1.NewTime(at),
	}
}

func TestAnnouncer(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	cs := fake.NewClientset(
		event("a", "web", AnnounceReason, `announcing from node "w1" with protocol "layer2"`, t0),
		event("b", "web", AnnounceReason, `announcing from node "w3" with protocol "layer2"`, t0.Add(time.Minute)),
		event("c", "web", "IPAllocated", `Assigned IP ["172.25.255.200"]`, t0.Add(2*time.Minute)),
		event("d", "other", AnnounceReason, `announcing from node "w2" with protocol "layer2"`, t0.Add(3*time.Minute)),
		event("e", "bgp", AnnounceReason, `announcing from node "w2" with protocol "bgp"`, t0),
		event("f", "odd", AnnounceReason, `announced somewhere`, t0),
	)
	c := kube.New(cs)
	ctx := context.Background()
	if got, err := Announcer(ctx, c, "ns", "web"); err != nil || got != "w3" {
		t.Errorf("Announcer(web) = %q, %v; want w3 (the latest announcement, not another Service's)", got, err)
	}
	for svc, want := range map[string]string{"none": "no \"nodeAssigned\" event", "bgp": "not layer2", "odd": "cannot read"} {
		if _, err := Announcer(ctx, c, "ns", svc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Announcer(%s) error = %v, want it to say %q", svc, err, want)
		}
	}
}
