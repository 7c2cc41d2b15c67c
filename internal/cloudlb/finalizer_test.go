package cloudlb

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// The cleanup finalizer's life, as the upstream LoadBalancer e2e spec
// "should handle load balancer cleanup finalizer for service" walks it: on
// while the Service is a LoadBalancer (and before its address shows), off
// with its address when the type changes, on again when it changes back,
// off when the Service is deleted.
func TestControllerCleanupFinalizer(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "fast"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"))
	ps := profiles.Set{"fast": fastProfile("fast", false), "generic": fastProfile("generic", false)}
	tc := startController(t, cs, WithProfiles(ps))
	ctx, l4 := tc.ctx, tc.l4
	get := func() *corev1.Service {
		s, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor(t, "address and finalizer", func() bool {
		s := get()
		if len(s.Status.LoadBalancer.Ingress) > 0 && !servicehelper.HasLBFinalizer(s) {
			t.Fatalf("the address showed before the finalizer: %+v", s.ObjectMeta)
		}
		return len(s.Status.LoadBalancer.Ingress) == 1 && servicehelper.HasLBFinalizer(s)
	})
	waitFor(t, "forwarded", func() bool { _, ok := l4.service("default/web"); return ok })

	setType := func(typ corev1.ServiceType) {
		s := get()
		s.Spec.Type = typ
		if _, err := cs.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setType(corev1.ServiceTypeClusterIP)
	waitFor(t, "finalizer and address gone after type=ClusterIP", func() bool {
		s := get()
		_, forwarded := l4.service("default/web")
		return !servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 0 && !forwarded
	})
	setType(corev1.ServiceTypeLoadBalancer)
	waitFor(t, "finalizer back after type=LoadBalancer", func() bool {
		s := get()
		return servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1
	})

	// The fake clientset deletes at once whatever the finalizers; the API
	// server instead sets deletionTimestamp and waits for them.
	s := get()
	now := metav1.Now()
	s.DeletionTimestamp = &now
	s.Finalizers = append(s.Finalizers, "example.com/other")
	if _, err := cs.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "finalizer removed on deletion, the other one kept", func() bool {
		s := get()
		_, forwarded := l4.service("default/web")
		return !forwarded && slices.Equal(s.Finalizers, []string{"example.com/other"})
	})
	if e := tc.evs.find(zdv1.EventNote, "service/default/web"); e == nil {
		t.Error("no event for the service")
	}
}

// UDP ports reach the data plane next to TCP ones; a Service's ClientIP
// affinity becomes the LB's client-address hash where the vendor maps it,
// and a vendor that refuses it builds no LB.
func TestControllerPortsAndAffinity(t *testing.T) {
	mk := func(name, profile string, affinity corev1.ServiceAffinity) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: profile}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: affinity, Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP},
				{Name: "dns", Port: 53, NodePort: 31001, Protocol: corev1.ProtocolUDP},
				{Name: "sctp", Port: 9, NodePort: 31002, Protocol: corev1.ProtocolSCTP}}},
		}
	}
	sticky, ignores, refuses := fastProfile("sticky", false), fastProfile("ignores", false), fastProfile("refuses", false)
	sticky.SessionAffinity, ignores.SessionAffinity, refuses.SessionAffinity = profiles.AffinityClientIP, profiles.AffinityIgnored, profiles.AffinityRefused
	ps := profiles.Set{"sticky": sticky, "ignores": ignores, "refuses": refuses, "generic": fastProfile("generic", false)}
	cs := fake.NewSimpleClientset(kNode("a", "10.0.0.1"),
		mk("one", "sticky", corev1.ServiceAffinityClientIP), mk("two", "sticky", corev1.ServiceAffinityNone),
		mk("three", "ignores", corev1.ServiceAffinityClientIP), mk("four", "refuses", corev1.ServiceAffinityClientIP))
	pool, err := ParseVIPRange("10.0.0.200-10.0.0.210")
	if err != nil {
		t.Fatal(err)
	}
	tc := startController(t, cs, WithProfiles(ps), WithVIPPool(pool))
	for name, want := range map[string]bool{"one": true, "two": false, "three": false} {
		waitFor(t, name+" forwarded", func() bool { _, ok := tc.l4.service("default/" + name); return ok })
		s, _ := tc.l4.service("default/" + name)
		if s.ClientIP != want || fmt.Sprint(s.Ports) != "[80/tcp 53/udp]" {
			t.Errorf("%s: client-ip %t ports %v; want %t [80/tcp 53/udp]", name, s.ClientIP, s.Ports, want)
		}
	}
	if _, ok := tc.l4.service("default/four"); ok {
		t.Error("a profile that refuses ClientIP affinity built an LB for it")
	}
	waitFor(t, "refusal said", func() bool {
		e := tc.evs.find(zdv1.EventNote, "service/default/four")
		return e != nil && strings.Contains(e.Message, "unsupported load balancer affinity ClientIP")
	})
}

// The finalizer is the service controller's standard one: on a Service
// this LB never served (another controller's, here with MetalLB's address)
// it stays, and so does the address.
func TestCleanupLeavesAnotherControllersService(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Finalizers: []string{servicehelper.LoadBalancerCleanupFinalizer}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000}}},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.250"}}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"))
	tc := startController(t, cs, WithProfiles(profiles.Set{"generic": fastProfile("generic", false)}), WithClass(contract.CloudLBClass, false))
	time.Sleep(300 * time.Millisecond) // several reconciles
	s, _ := cs.CoreV1().Services("default").Get(tc.ctx, "web", metav1.GetOptions{})
	if len(s.Finalizers) != 1 || len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != "10.0.0.250" {
		t.Fatalf("the LB touched a Service it never served: finalizers %v, status %+v", s.Finalizers, s.Status.LoadBalancer)
	}
}
