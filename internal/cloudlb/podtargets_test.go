package cloudlb

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// podProfile is gclb-neg-like (or AWS-like with register ready) with
// millisecond timing.
func podProfile(name, register string) profiles.Profile {
	return profiles.Profile{Name: name, Mode: profiles.ModeL7,
		HealthCheck: profiles.HealthCheck{Target: profiles.TargetPod, Path: "/ready", Interval: profiles.Duration(20 * time.Millisecond),
			Timeout: profiles.Duration(10 * time.Millisecond), HealthyThreshold: 1, UnhealthyThreshold: 2},
		Pods:              &profiles.Pods{Register: register},
		Flows:             profiles.Flows{OnUnhealthy: profiles.FlowClose, OnRemoved: profiles.FlowClose, CloseAction: profiles.CloseReset, IdleTimeout: profiles.Duration(time.Minute)},
		NoHealthyBackends: profiles.NoHealthyDrop,
		L7:                &profiles.L7{Backends: profiles.L7BackendPods, KeepAlive: true, IdleConnTimeout: profiles.Duration(time.Minute), MaxIdleConnsPerNode: 1}}
}

// startPodLB runs a controller until the test ends, with the stock
// profiles and prof as name, over cs, checking with check.
func startPodLB(t *testing.T, cs *fake.Clientset, name string, prof profiles.Profile, check Checker) (context.Context, *Controller, *fakeL4, *fakeL7, *eventLog) {
	t.Helper()
	pool, _ := ParseVIPRange("10.0.0.200-10.0.0.201")
	l4, l7, evs := &fakeL4{}, &fakeL7{}, &eventLog{}
	ps, _ := profiles.Stock()
	ps[name] = prof
	ctl, err := NewController(cs, WithProfiles(ps), WithVIPPool(pool), WithL4(l4), WithL7(l7), WithChecker(check), WithEventSink(evs),
		WithProgrammingDelay(programDelay))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctx, ctl, l4, l7, evs
}

// webService is default/web, a LoadBalancer Service of port http 80 whose
// LB profile is profile.
func webService(profile string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: profile}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
}

// webSlice is web's EndpointSlice with eps, their port http 8080.
func webSlice(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
}

func podEndpoint(pod, ip, node string, ready, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr(node),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "default"},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready, Terminating: &terminating}}
}

func (f *fakeL7) backends(port uint16) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.last {
		if s.Port == port {
			return fmt.Sprint(s.Backends)
		}
	}
	return "none"
}

func TestPodTargetsRegisterCheckAndDeregister(t *testing.T) {
	for _, c := range []struct {
		register string
		// notReadyRegistered: the not-ready Pod c is a target (checked,
		// failing) rather than left out.
		notReadyRegistered bool
	}{
		{profiles.RegisterReady, false},
		{profiles.RegisterNotTerminating, true},
	} {
		t.Run(c.register, func(t *testing.T) {
			// Local, whose node rules a Pod-targeted LB has no use for.
			svc := webService("neg")
			svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, 32000
			slice := webSlice(
				podEndpoint("web-a", "10.244.1.5", "n1", true, false),
				podEndpoint("web-b", "10.244.2.7", "n2", true, false),
				podEndpoint("web-c", "10.244.2.9", "n2", false, false),
			)
			n1, n2 := kNode("n1", "10.0.0.1"), kNode("n2", "10.0.0.2")
			n1.Spec.PodCIDR, n2.Spec.PodCIDR = "10.244.1.0/24", "10.244.2.0/24"
			cs := fake.NewSimpleClientset(svc, slice, n1, n2)
			var hmu sync.Mutex
			checked := map[string]bool{}
			healthy := map[string]bool{"http://10.244.1.5:8080/ready": true, "http://10.244.2.7:8080/ready": true}
			check := func(_ context.Context, url string) cloudlbv1.CheckResult {
				hmu.Lock()
				defer hmu.Unlock()
				checked[url] = true
				r := cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: healthy[url], Status: 503}
				if r.OK {
					r.Status = 200
				}
				return r
			}
			ctx, ctl, l4, l7, evs := startPodLB(t, cs, "neg", podProfile("neg", c.register), check)

			// The proxy sends to the Pods' own addresses and ports, not to nodes,
			// and the LB routes each node's Pod range through that node.
			waitFor(t, "both ready Pods are backends", func() bool {
				return l7.backends(80) == "[10.244.1.5:8080 10.244.2.7:8080]"
			})
			l4.mu.Lock()
			routes := l4.last.PodCIDRs
			l4.mu.Unlock()
			if routes[netip.MustParsePrefix("10.244.2.0/24")] != netip.MustParseAddr("10.0.0.2") || len(routes) != 2 {
				t.Fatalf("Pod routes = %v", routes)
			}
			hmu.Lock()
			gotC := checked["http://10.244.2.9:8080/ready"]
			hmu.Unlock()
			if gotC != c.notReadyRegistered {
				t.Errorf("not-ready Pod checked = %v, want %v (pods.register %s)", gotC, c.notReadyRegistered, c.register)
			}
			st := ctl.State()
			if len(st) != 1 || !st[0].Settled() || fmt.Sprint(st[0].Active) != "[web-a web-b]" {
				t.Fatalf("state = %+v", st)
			}
			if e := evs.find(zdv1.EventLBTargetHealthy, "pod/default/web-a"); e == nil || e.Fields["pod"] != "web-a" {
				t.Fatalf("no lb-target-healthy for pod web-a: %+v", e)
			}
			if e := evs.find(zdv1.EventLBBackendAdded, "pod/default/web-b"); e == nil || e.Fields["ip"] != "10.244.2.7" || e.Fields["node"] != "n2" {
				t.Fatalf("lb-backend-added for web-b: %+v", e)
			}

			// web-b terminates: both rules deregister it at once, before any
			// check fails.
			slice.Endpoints[1] = podEndpoint("web-b", "10.244.2.7", "n2", false, true)
			if _, err := cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "web-b deregistered", func() bool { return l7.backends(80) == "[10.244.1.5:8080]" })
			e := evs.find(zdv1.EventLBBackendRemoved, "pod/default/web-b")
			if e == nil || !strings.Contains(e.Fields["reason"], "terminating") {
				t.Fatalf("lb-backend-removed for web-b: %+v", e)
			}
			if evs.find(zdv1.EventLBTargetUnhealthy, "pod/default/web-b") != nil {
				t.Fatal("web-b left on a failed check; it should leave on its deregistration")
			}

			// web-a stops answering its check: it leaves after two failures.
			hmu.Lock()
			healthy = map[string]bool{}
			hmu.Unlock()
			waitFor(t, "web-a unhealthy", func() bool { return l7.backends(80) == "[]" })
			if e := evs.find(zdv1.EventLBTargetUnhealthy, "pod/default/web-a"); e == nil || e.Fields["threshold"] != "2" {
				t.Fatalf("lb-target-unhealthy for web-a: %+v", e)
			}
		})
	}
}

func TestPodTargetsFromSlices(t *testing.T) {
	ready, notReady := true, false
	s1 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}, {Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolUDP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "a"}, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
			{Addresses: []string{"10.244.1.6"}}, // no Pod named: its address names it; nil ready means ready
		}}
	// The same Pod in a second slice (a slice being replaced) counts once,
	// ready if either says so.
	s2 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
		Ports:     []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "a"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
	v6 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}}
	got := podTargets([]*discoveryv1.EndpointSlice{s1, s2, v6})
	if len(got) != 2 || got[0].Name != "10.244.1.6" || got[1].Name != "a" || !got[1].Ready || !got[0].Ready {
		t.Fatalf("targets = %+v", got)
	}
	if got[1].Ports["http"] != 8080 || len(got[1].Ports) != 1 {
		t.Fatalf("ports = %v; want the TCP port only", got[1].Ports)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "other", Port: 81}}}}
	if _, err := podProbeURL(podProfile("p", profiles.RegisterReady), svc, got[1]); err == nil {
		t.Fatal("a Pod without the Service port's endpoint port got a check URL")
	}
	tcp := podProfile("p", profiles.RegisterReady)
	tcp.HealthCheck.Path = ""
	svc.Spec.Ports[0].Name = "http"
	if u, err := podProbeURL(tcp, svc, got[1]); err != nil || u != "tcp://10.244.1.5:8080" {
		t.Fatalf("TCP check URL = %q, %v", u, err)
	}
}

func TestPodTargetsCheckFromReadinessProbe(t *testing.T) {
	svc := webService("neg")
	slice := webSlice(podEndpoint("web-a", "10.244.1.5", "n1", true, false))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "echo", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1,
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}},
	}}}}
	n1 := kNode("n1", "10.0.0.1")
	n1.Spec.PodCIDR = "10.244.1.0/24"
	cs := fake.NewSimpleClientset(svc, slice, pod, n1)
	var mu sync.Mutex
	asked := map[string]bool{}
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		mu.Lock()
		defer mu.Unlock()
		asked[url] = true
		return cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: true, Status: 200}
	}
	prof := podProfile("neg", profiles.RegisterNotTerminating)
	prof.HealthCheck.FromReadinessProbe = true
	prof.HealthCheck.Interval = profiles.Duration(time.Hour) // replaced by the probe's 1 s
	_, _, _, l7, evs := startPodLB(t, cs, "neg", prof, check)
	waitFor(t, "the Pod a backend", func() bool { return l7.backends(80) == "[10.244.1.5:8080]" })
	mu.Lock()
	gotProbe, gotDefault := asked["http://10.244.1.5:8080/readyz"], asked["http://10.244.1.5:8080/ready"]
	mu.Unlock()
	if !gotProbe || gotDefault {
		t.Fatalf("asked %v; want the readiness probe's path /readyz only", asked)
	}
	var note string
	for _, e := range evs.snapshot() {
		if strings.Contains(e.Message, "readiness probe of Pod web-a") {
			note = e.Message
		}
	}
	if !strings.Contains(note, "GET /readyz on each Pod's serving port every 1s") {
		t.Fatalf("no note of the inferred check: %q", note)
	}
}

// TestPodTargetsFailOpenSkipsInitial: with every registered Pod failing,
// an ALB-like LB spreads requests over them only once they are unhealthy;
// while they are still in their first checks it sends nothing.
func TestPodTargetsFailOpenSkipsInitial(t *testing.T) {
	svc := webService("alb")
	slice := webSlice(podEndpoint("web-a", "10.244.1.5", "n1", true, false))
	cs := fake.NewSimpleClientset(svc, slice, kNode("n1", "10.0.0.1"))
	var mu sync.Mutex
	checks := 0
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		mu.Lock()
		defer mu.Unlock()
		checks++
		return cloudlbv1.CheckResult{Time: time.Now(), URL: url, Status: 503}
	}
	prof := podProfile("alb", profiles.RegisterReady)
	prof.NoHealthyBackends = profiles.NoHealthyFailOpen
	prof.HealthCheck.Interval = profiles.Duration(300 * time.Millisecond)
	_, _, _, l7, evs := startPodLB(t, cs, "alb", prof, check)
	waitFor(t, "the proxy configured with no backend", func() bool { return l7.backends(80) == "[]" })
	mu.Lock()
	first := checks
	mu.Unlock()
	if got := l7.backends(80); first >= 2 || got != "[]" {
		t.Fatalf("after %d checks the backends are %s; an initial target takes nothing", first, got)
	}
	waitFor(t, "fail-open over the unhealthy Pod", func() bool { return l7.backends(80) == "[10.244.1.5:8080]" })
	mu.Lock()
	after := checks
	mu.Unlock()
	if after < 2 {
		t.Fatalf("failed open after %d checks; want the unhealthy threshold (2) first", after)
	}
	found := false
	for _, e := range evs.snapshot() {
		found = found || strings.Contains(e.Message, "every registered Pod failed its health check")
	}
	if !found {
		t.Fatal("no note says the LB fails open over the failed Pods")
	}
}

// TestPodTargetsReadinessGate: a Pod waiting only on the LB's gate is
// registered (AWS registers a not-ready endpoint whose containers are
// ready), and the LB sets the gate True once its check passes, and back to
// False when it fails unless the gate is sticky (GKE).
func TestPodTargetsReadinessGate(t *testing.T) {
	const gate = "target-health.example.com/web"
	for _, sticky := range []bool{false, true} {
		t.Run(fmt.Sprintf("sticky %v", sticky), func(t *testing.T) {
			svc := webService("alb")
			// Not ready: its gate is not True yet.
			slice := webSlice(podEndpoint("web-a", "10.244.1.5", "n1", false, false))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Namespace: "default"},
				Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}}, Containers: []corev1.Container{{Name: "app"}}},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
			cs := fake.NewSimpleClientset(svc, slice, pod, kNode("n1", "10.0.0.1"))
			var mu sync.Mutex
			ok := true
			check := func(_ context.Context, url string) cloudlbv1.CheckResult {
				mu.Lock()
				defer mu.Unlock()
				r := cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: ok, Status: 503}
				if ok {
					r.Status = 200
				}
				return r
			}
			prof := podProfile("alb", profiles.RegisterReady)
			prof.Pods.ReadinessGate = &profiles.ReadinessGate{ConditionType: gate, Sticky: sticky, Injected: profiles.GateInjectedNamespaceLabel}
			ctx, _, _, l7, evs := startPodLB(t, cs, "alb", prof, check)
			condition := func() corev1.ConditionStatus {
				p, err := cs.CoreV1().Pods("default").Get(ctx, "web-a", metav1.GetOptions{})
				if err != nil {
					return ""
				}
				for _, c := range p.Status.Conditions {
					if string(c.Type) == gate {
						return c.Status
					}
				}
				return ""
			}
			waitFor(t, "the gate True once the Pod passed its check", func() bool { return condition() == corev1.ConditionTrue })
			if l7.backends(80) != "[10.244.1.5:8080]" {
				t.Fatalf("backends %s; the Pod waiting on the gate should be a target", l7.backends(80))
			}
			mu.Lock()
			ok = false
			mu.Unlock()
			waitFor(t, "the Pod unhealthy", func() bool { return l7.backends(80) == "[]" })
			time.Sleep(100 * time.Millisecond)
			want := corev1.ConditionFalse
			if sticky {
				want = corev1.ConditionTrue
			}
			waitFor(t, fmt.Sprintf("the gate %s", want), func() bool { return condition() == want })
			var note string
			for _, e := range evs.snapshot() {
				if strings.Contains(e.Message, "readiness gate") {
					note = e.Message
				}
			}
			if !strings.Contains(note, gate) {
				t.Fatalf("no note of the gate: %q", note)
			}
		})
	}
}
