package cloudlb

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"zerodrop/clusters/lb/profiles"
)

type nodeOpt func(*corev1.Node)

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func pool(p string) nodeOpt {
	return func(n *corev1.Node) { n.Labels["zerodrop.dev/pool"] = p }
}
func controlPlane(n *corev1.Node) { n.Labels[labelControlPlane] = "" }

func testNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func TestEligibleNodes(t *testing.T) {
	ps, err := profiles.Stock()
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*corev1.Node{
		testNode("cp", controlPlane),
		testNode("a1", pool("pool-a")),
		testNode("a2", pool("pool-a"), cordoned),
		testNode("b1", pool("pool-b")),
		testNode("b2", pool("pool-b"), notReady),
	}
	svc := func(ann map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", Annotations: ann}}
	}
	cases := []struct {
		profile string
		svc     *corev1.Service
		want    string
		why     map[string]string // node -> substring of the reason
	}{
		{"generic", svc(nil), "a1,a2,b1", map[string]string{"cp": "control-plane", "b2": "not Ready"}},
		{"gcp-nlb", svc(nil), "a1,a2,b1", nil},
		{"gke-legacy", svc(nil), "a1,b1", map[string]string{"a2": "cordoned"}},
		{"azure-basic", svc(nil), "a1,a2", map[string]string{"b1": `"pool-b"`}},
		{"azure-basic", svc(map[string]string{"service.beta.kubernetes.io/azure-load-balancer-mode": "pool-b"}), "b1", map[string]string{"a1": `Service's pool "pool-b"`}},
		{"azure-basic", svc(map[string]string{"zerodrop.dev/lb-pool": "pool-b"}), "b1", nil},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			got, excluded := EligibleNodes(ps[c.profile], c.svc, nodes)
			if strings.Join(got, ",") != c.want {
				t.Fatalf("eligible = %v, want %s (excluded %v)", got, c.want, excluded)
			}
			for n, sub := range c.why {
				if !strings.Contains(string(excluded[n]), sub) {
					t.Errorf("reason for %s = %q, want it to mention %q", n, excluded[n], sub)
				}
			}
		})
	}
}
