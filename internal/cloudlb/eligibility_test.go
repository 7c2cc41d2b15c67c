package cloudlb

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
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
	r126, _ := RulesFor(26)
	cases := []struct {
		profile string
		rules   ServiceControllerRules
		svc     *corev1.Service
		want    string
		why     map[string]string // node -> substring of the reason
	}{
		// NotReady b2 stays from 1.27 on (KEP-3458) and left Cluster Services before.
		{"generic", LatestRules(), svc(nil), "a1,a2,b1,b2", map[string]string{"cp": "control-plane"}},
		{"generic", r126, svc(nil), "a1,a2,b1", map[string]string{"b2": "not Ready"}},
		{"gcp-nlb", LatestRules(), svc(nil), "a1,a2,b1,b2", nil},
		{"gke-legacy", LatestRules(), svc(nil), "a1,b1,b2", map[string]string{"a2": "cordoned"}},
		{"azure-basic", LatestRules(), svc(nil), "a1,a2", map[string]string{"b1": `"pool-b"`}},
		{"azure-basic", LatestRules(), svc(map[string]string{"service.beta.kubernetes.io/azure-load-balancer-mode": "pool-b"}), "b1,b2", map[string]string{"a1": `Service's pool "pool-b"`}},
		{"azure-basic", LatestRules(), svc(map[string]string{"zerodrop.dev/lb-pool": "pool-b"}), "b1,b2", nil},
	}
	for _, c := range cases {
		t.Run(c.profile+"/"+c.rules.String(), func(t *testing.T) {
			got, excluded := EligibleNodes(ps[c.profile], c.rules, c.svc, nodes)
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

func tainted(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: taintToBeDeletedCAS, Effect: corev1.TaintEffectNoSchedule})
}

func excludeLabel(v string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[labelExcludeLB] = v }
}

// TestServiceControllerRules pins each version's row to what its
// k8s.io/cloud-provider controllers/service/controller.go does: which nodes a
// Service gets, per traffic policy, and which changes re-sync.
func TestServiceControllerRules(t *testing.T) {
	local := &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}}
	cluster := &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster}}
	cases := []struct {
		minor   int
		node    *corev1.Node
		svc     *corev1.Service
		want    string // substring of the reason; "" = handed over
		comment string
	}{
		{34, testNode("n", notReady), cluster, "", "KEP-3458: NotReady nodes stay"},
		{27, testNode("n", notReady), local, "", "StableLoadBalancerNodeSet on by default"},
		{26, testNode("n", notReady), cluster, "not Ready", "allNodePredicates for Cluster"},
		{26, testNode("n", notReady), local, "", "etpLocalNodePredicates leave readiness out"},
		{24, testNode("n", notReady), local, "not Ready", "one predicate for every policy"},
		{34, testNode("n", tainted), cluster, taintToBeDeletedCAS, "nodeUnTaintedPredicate"},
		{23, testNode("n", tainted), cluster, taintToBeDeletedCAS, "taint predicate since v0.23"},
		{22, testNode("n", tainted), cluster, "", "no taint predicate before v0.23"},
		{34, testNode("n", excludeLabel("false")), cluster, "", "ParseBool: false keeps the node"},
		{34, testNode("n", excludeLabel("yes")), cluster, "exclude-from-external-load-balancers", "unparsable value excludes"},
		{33, testNode("n", excludeLabel("false")), cluster, "exclude-from-external-load-balancers", "the key alone excluded"},
		{34, testNode("n", cordoned), cluster, "", "cordoned nodes stay since 1.19"},
	}
	for _, c := range cases {
		r, ok := RulesFor(c.minor)
		if !ok {
			t.Fatalf("no rules for 1.%d", c.minor)
		}
		got := string(r.Excluded(c.svc, c.node))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("1.%d %s (%s): excluded %q, want %q", c.minor, c.svc.Spec.ExternalTrafficPolicy, c.comment, got, c.want)
		}
	}
	if _, ok := RulesFor(18); ok {
		t.Error("1.18 must be reported as unknown (the controller lived in kubernetes/kubernetes then)")
	}

	resync := []struct {
		minor    int
		old, cur *corev1.Node
		want     bool
	}{
		{34, testNode("n"), testNode("n", tainted), false},
		{34, testNode("n"), testNode("n", notReady), false},
		{34, testNode("n"), testNode("n", excludeLabel("true")), true},
		{34, testNode("n"), testNode("n", excludeLabel("false")), false},
		{33, testNode("n"), testNode("n", excludeLabel("false")), true},
		{27, testNode("n"), testNode("n", tainted), false},
		{26, testNode("n"), testNode("n", tainted), true},
		{26, testNode("n"), testNode("n", notReady), true},
		{34, testNode("n"), testNode("n", cordoned), false},
	}
	for _, c := range resync {
		r, _ := RulesFor(c.minor)
		if got := r.Resyncs(c.old, c.cur); got != c.want {
			t.Errorf("1.%d: re-sync on %+v -> %+v = %v, want %v", c.minor, c.old.Spec, c.cur.Spec, got, c.want)
		}
	}
}

// updateNode applies edit to the node called name in cs.
func updateNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, edit nodeOpt) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(n)
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
