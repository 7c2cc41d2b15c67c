package kubevip

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"zerodrop.dev/zerodrop/apis/contract"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in, first, last, err string
	}{
		{in: "172.22.254.221-172.22.254.252", first: "172.22.254.221", last: "172.22.254.252"},
		{in: " 10.0.0.1 - 10.0.0.1 ", first: "10.0.0.1", last: "10.0.0.1"},
		{in: "10.0.0.1", err: "want first-last"},
		{in: "10.0.0.9-10.0.0.1", err: "not above"},
		{in: "10.0.0.1-fd00::1", err: "IPv4"},
		{in: "x-10.0.0.1", err: "ParseAddr"},
		{in: "", err: "want first-last"},
	} {
		first, last, err := ParseRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRange(%q) err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || first.String() != tc.first || last.String() != tc.last {
			t.Errorf("ParseRange(%q) = %s, %s, %v; want %s, %s", tc.in, first, last, err, tc.first, tc.last)
		}
	}
}

func TestPick(t *testing.T) {
	a := netip.MustParseAddr
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	first, last := a("10.0.0.1"), a("10.0.0.3")
	for _, tc := range []struct {
		name   string
		used   []string
		handed map[string]handout
		now    time.Time
		want   string // "" for none free
	}{
		{name: "the first never handed out", now: t0, want: "10.0.0.1"},
		{name: "used ones are skipped", used: []string{"10.0.0.1"}, now: t0, want: "10.0.0.2"},
		{name: "never handed out before handed out", handed: map[string]handout{"10.0.0.1": {at: t0, named: true}}, now: t0, want: "10.0.0.2"},
		{name: "of the released, the least recently handed out", now: t0.Add(time.Minute),
			handed: map[string]handout{"10.0.0.1": {at: t0.Add(2 * time.Second), named: true}, "10.0.0.2": {at: t0.Add(time.Second), named: true}, "10.0.0.3": {at: t0.Add(3 * time.Second), named: true}},
			want:   "10.0.0.2"},
		{name: "handed out, not yet named: taken while pending", now: t0.Add(time.Minute), used: []string{"10.0.0.2", "10.0.0.3"},
			handed: map[string]handout{"10.0.0.1": {at: t0}}},
		{name: "handed out, never named: free after pending", now: t0.Add(11 * time.Minute), used: []string{"10.0.0.2", "10.0.0.3"},
			handed: map[string]handout{"10.0.0.1": {at: t0}}, want: "10.0.0.1"},
		{name: "all used", used: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, now: t0},
	} {
		used := map[netip.Addr]bool{}
		for _, u := range tc.used {
			used[a(u)] = true
		}
		handed := map[netip.Addr]handout{}
		for k, v := range tc.handed {
			handed[a(k)] = v
		}
		got, ok := pick(first, last, tc.now, 10*time.Minute, used, handed)
		if tc.want == "" {
			if ok {
				t.Errorf("%s: picked %s, want none", tc.name, got)
			}
			continue
		}
		if !ok || got.String() != tc.want {
			t.Errorf("%s: picked %s (%v), want %s", tc.name, got, ok, tc.want)
		}
	}
}

func rangeCM(r string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.KubeVIPConfigMap, Namespace: "kube-system"}, Data: map[string]string{"range": r}}
}

func TestAssign(t *testing.T) {
	ctx := context.Background()
	taken := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "a",
		Annotations: map[string]string{contract.KubeVIPAddressAnnotation: "10.0.0.1"}}}
	cs := fake.NewClientset(rangeCM("10.0.0.1-10.0.0.3"), taken)
	addrs := NewAddresses(cs, contract.KubeVIPConfigMap)
	var got []string
	for i := range 2 {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "b"}}
		if err := addrs.Assign(ctx, svc); err != nil {
			t.Fatalf("Assign %d: %v", i, err)
		}
		got = append(got, svc.Annotations[contract.KubeVIPAddressAnnotation])
	}
	if strings.Join(got, ",") != "10.0.0.2,10.0.0.3" {
		t.Errorf("assigned %v, want 10.0.0.2 and 10.0.0.3 (10.0.0.1 is named by a Service)", got)
	}
	// Every address is named or pending: the next Service gets an error
	// that says so, not a shared address.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "b"}}
	if err := addrs.Assign(ctx, svc); err == nil || !strings.Contains(err.Error(), "every address") {
		t.Errorf("Assign on a full range: %v, %v; want an error", svc.Annotations, err)
	}
	// A Service that names its own keeps it.
	own := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: "b", Annotations: map[string]string{contract.KubeVIPAddressAnnotation: "10.9.9.9"}}}
	if err := addrs.Assign(ctx, own); err != nil || own.Annotations[contract.KubeVIPAddressAnnotation] != "10.9.9.9" {
		t.Errorf("Assign changed a Service's own address: %v, %v", own.Annotations, err)
	}
	// Without the provider's ConfigMap: ErrNotInstalled.
	if err := NewAddresses(fake.NewClientset(), contract.KubeVIPConfigMap).Assign(ctx, &corev1.Service{}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Assign without kube-vip: %v, want ErrNotInstalled", err)
	}
}

func TestAnnouncer(t *testing.T) {
	ctx := context.Background()
	node, dur := "zerodrop-worker2", int32(5)
	lease := func(renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("web"), Namespace: "ns"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &dur, RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	if got, err := Announcer(ctx, fake.NewClientset(lease(time.Now())), "ns", "web"); err != nil || got != node {
		t.Errorf("Announcer with a current lease = %q, %v; want %s", got, err, node)
	}
	// A holder that stopped renewing (its node gone) announces nothing.
	if got, err := Announcer(ctx, fake.NewClientset(lease(time.Now().Add(-time.Minute))), "ns", "web"); err == nil {
		t.Errorf("Announcer with an expired lease = %q, want an error", got)
	}
	if got, err := Announcer(ctx, fake.NewClientset(), "ns", "web"); err == nil || !strings.Contains(err.Error(), "kubevip-web") {
		t.Errorf("Announcer without a lease = %q, %v; want an error naming the lease", got, err)
	}
}

func parkDS(requireAbsent bool) *appsv1.DaemonSet {
	exprs := []corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpDoesNotExist}}
	if requireAbsent {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: contract.KubeVIPBGPParkedLabel, Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: contract.KubeVIPBGPDaemonSet, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vip"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}},
			}}}},
		},
	}
}

func TestPark(t *testing.T) {
	pod := func(name, node string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
	}
	vip := map[string]string{"app": "vip"}
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
		// controller deletes the node's Pod once the node is labelled, as
		// the DaemonSet controller does.
		controller   bool
		wantErr      string
		notParkable  bool
		notInstalled bool
		wantLabel    bool
	}{
		{name: "waits until the node's own Pod is gone", ds: parkDS(true), controller: true, wantLabel: true},
		{name: "a Pod that stays is a timeout that names it", ds: parkDS(true), wantErr: "still there: vip-a", wantLabel: true},
		{name: "a DaemonSet that would start it again is refused", ds: parkDS(false), wantErr: "re-create the cluster", notParkable: true},
		{name: "no DaemonSet", wantErr: "no DaemonSet kube-system/" + contract.KubeVIPBGPDaemonSet, notInstalled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
				pod("vip-a", "a", vip), pod("vip-b", "b", vip), pod("other-a", "a", map[string]string{"app": "other"}),
			}
			if tc.ds != nil {
				objs = append(objs, tc.ds)
			}
			cs := fake.NewClientset(objs...)
			if tc.controller {
				cs.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
					go func() {
						_ = cs.CoreV1().Pods("kube-system").Delete(context.Background(), "vip-a", metav1.DeleteOptions{})
					}()
					return false, nil, nil
				})
			}
			_, err := Park(context.Background(), cs, contract.KubeVIPBGPDaemonSet, contract.KubeVIPBGPParkedLabel, "a", time.Second)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Park: %v, want an error with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Park: %v", err)
			}
			if errors.Is(err, ErrNotParkable) != tc.notParkable || errors.Is(err, ErrNotInstalled) != tc.notInstalled {
				t.Errorf("Park: %v, ErrNotParkable %t (want %t), ErrNotInstalled %t (want %t)", err,
					errors.Is(err, ErrNotParkable), tc.notParkable, errors.Is(err, ErrNotInstalled), tc.notInstalled)
			}
			n, err := cs.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := n.Labels[contract.KubeVIPBGPParkedLabel]; ok != tc.wantLabel {
				t.Errorf("node a labelled %s: %t, want %t", contract.KubeVIPBGPParkedLabel, ok, tc.wantLabel)
			}
			// The other node's Pod and other Pods on the node stay.
			for _, name := range []string{"vip-b", "other-a"} {
				if _, err := cs.CoreV1().Pods("kube-system").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
					t.Errorf("Pod %s: %v", name, err)
				}
			}
		})
	}
}
