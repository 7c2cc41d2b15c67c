package cloudlb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

type fakeL4 struct {
	mu   sync.Mutex
	last DPConfig
}

func (f *fakeL4) Apply(_ context.Context, cfg DPConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = cfg
	return nil
}

func (f *fakeL4) service(key string) (DPService, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.last.Services {
		if s.Key == key {
			return s, true
		}
	}
	return DPService{}, false
}

type fakeL7 struct {
	mu   sync.Mutex
	last []L7Service
}

func (f *fakeL7) Apply(_ context.Context, s []L7Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = s
	return nil
}

type eventLog struct {
	mu sync.Mutex
	ev []zdv1.Event
}

func (l *eventLog) Event(e zdv1.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, e)
	return nil
}

func (l *eventLog) snapshot() []zdv1.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]zdv1.Event(nil), l.ev...)
}

func (l *eventLog) find(typ, object string) *zdv1.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.ev {
		if l.ev[i].Type == typ && l.ev[i].Object == object {
			e := l.ev[i]
			return &e
		}
	}
	return nil
}

// fastProfile is gcp-nlb-like with millisecond timing.
func fastProfile(name string, excludeCordoned bool) profiles.Profile {
	return profiles.Profile{Name: name, Mode: profiles.ModeL4,
		HealthCheck:       profiles.HealthCheck{Target: profiles.TargetKubeProxy, Interval: profiles.Duration(20 * time.Millisecond), Timeout: profiles.Duration(10 * time.Millisecond), HealthyThreshold: 1, UnhealthyThreshold: 2},
		Eligibility:       profiles.Eligibility{ExcludeUnschedulable: excludeCordoned},
		Flows:             profiles.Flows{OnUnhealthy: profiles.FlowKeep, OnRemoved: profiles.FlowClose, CloseAction: profiles.CloseDrop, IdleTimeout: profiles.Duration(time.Minute)},
		NoHealthyBackends: profiles.NoHealthyDrop}
}

func kNode(name, ip string) *corev1.Node {
	n := testNode(name)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	return n
}

// programDelay keeps the controller tests fast; TestProgrammingDelay checks
// the delay itself.
const programDelay = 50 * time.Millisecond

func TestControllerLocalServiceFollowsHealthChecks(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "fast"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort: 32000, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr("metallb.io/other")}}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Endpoints:  []discoveryv1.Endpoint{{NodeName: ptr("a"), Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	cs := fake.NewSimpleClientset(svc, other, slice, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"))

	var hmu sync.Mutex
	healthy := map[string]bool{"http://10.0.0.1:32000/healthz": true} // only a has a local endpoint
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		hmu.Lock()
		defer hmu.Unlock()
		r := cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: healthy[url], Status: 503}
		if r.OK {
			r.Status = 200
		}
		return r
	}
	pool, _ := ParseVIPRange("10.0.0.200-10.0.0.201")
	l4, l7, evs := &fakeL4{}, &fakeL7{}, &eventLog{}
	ps, _ := profiles.Stock()
	ps["fast"] = fastProfile("fast", false)
	c, err := NewController(cs, WithProfiles(ps), WithVIPPool(pool), WithL4(l4), WithL7(l7), WithChecker(check), WithEventSink(evs),
		WithProgrammingDelay(programDelay))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	waitFor(t, "status.loadBalancer.ingress", func() bool {
		s, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == "10.0.0.200"
	})
	waitFor(t, "a active, b not", func() bool {
		s, ok := l4.service("default/web")
		return ok && fmt.Sprint(s.Active) == "[a]" && fmt.Sprint(s.Ports) == "[80/tcp]"
	})
	if s, _ := cs.CoreV1().Services("default").Get(ctx, "mine", metav1.GetOptions{}); len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Fatal("the controller took a Service of another loadBalancerClass")
	}
	st := c.State()
	if len(st) != 1 || fmt.Sprint(st[0].EndpointNodes) != "[a]" || fmt.Sprint(st[0].Active) != "[a]" {
		t.Fatalf("state = %+v", st)
	}
	if e := evs.find(zdv1.EventLBNodeHealthy, "node/a"); e == nil || !strings.Contains(e.Fields["check"], "-> 200") {
		t.Fatalf("no lb-node-healthy event for a with its check: %+v", e)
	}
	if evs.find(zdv1.EventLBBackendAdded, "node/a") == nil {
		t.Fatal("no lb-backend-added event for a")
	}

	// The endpoint moves to b: a fails, b passes.
	hmu.Lock()
	healthy = map[string]bool{"http://10.0.0.2:32000/healthz": true}
	hmu.Unlock()
	waitFor(t, "b active, a draining (gcp keeps flows on unhealthy nodes)", func() bool {
		s, _ := l4.service("default/web")
		return fmt.Sprint(s.Active) == "[b]" && fmt.Sprint(s.Draining) == "[a]"
	})
	e := evs.find(zdv1.EventLBNodeUnhealthy, "node/a")
	if e == nil || e.Fields["threshold"] != "2" || !strings.Contains(e.Fields["results"], "503") {
		t.Fatalf("lb-node-unhealthy event lacks the check results: %+v", e)
	}
	if e := evs.find(zdv1.EventLBBackendRemoved, "node/a"); e == nil || !strings.Contains(e.Message, "failed health check") {
		t.Fatalf("lb-backend-removed for a: %+v", e)
	}

	// Deleting the Service releases its address and forgets it.
	if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "service forgotten", func() bool { _, ok := l4.service("default/web"); return !ok && len(c.State()) == 0 })
	cancel()
	<-done
}

func TestControllerCordonOnLegacyProfile(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "legacy"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"))
	ps := profiles.Set{"legacy": fastProfile("legacy", true), "generic": fastProfile("generic", false)}
	var urls sync.Map
	tc := startController(t, cs, WithProfiles(ps), WithChecker(func(_ context.Context, url string) cloudlbv1.CheckResult {
		urls.Store(url, true)
		return okCheck(context.Background(), url)
	}))
	ctx, l4, evs := tc.ctx, tc.l4, tc.evs
	waitFor(t, "both active", func() bool { s, _ := l4.service("default/web"); return fmt.Sprint(s.Active) == "[a b]" })
	if _, ok := urls.Load("http://10.0.0.1:10256/healthz"); !ok {
		t.Fatal("a Cluster service must be checked on kube-proxy's :10256/healthz")
	}
	n, _ := cs.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "cordoned a dropped at once", func() bool {
		s, _ := l4.service("default/web")
		return fmt.Sprint(s.Active) == "[b]" && len(s.Draining) == 0
	})
	if e := evs.find(zdv1.EventLBBackendRemoved, "node/a"); e == nil || !strings.Contains(e.Fields["reason"], "cordoned") {
		t.Fatalf("removal event must say the node was cordoned: %+v", e)
	}
}

func ptr[T any](v T) *T { return &v }

// A new VIP takes traffic only once kube-proxy has had the programming delay
// to see the status that carries it.
func TestProgrammingDelay(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "fast"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"))
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		return cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: true, Status: 200}
	}
	ps, _ := profiles.Stock()
	ps["fast"] = fastProfile("fast", false)
	const delay = time.Second
	tc := startController(t, cs, WithProfiles(ps), WithChecker(check), WithProgrammingDelay(delay))
	ctx, l4, evs := tc.ctx, tc.l4, tc.evs
	waitFor(t, "status.loadBalancer.ingress", func() bool {
		s, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) == 1
	})
	written := time.Now()
	for time.Since(written) < delay/2 {
		if _, ok := l4.service("default/web"); ok {
			t.Fatalf("the data plane carried the service %v after its status was written, before the %v delay", time.Since(written), delay)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, "service in the data plane after the delay", func() bool {
		_, ok := l4.service("default/web")
		return ok
	})
	if e := evs.find(zdv1.EventNote, "service/default/web"); e == nil {
		t.Error("no event for the service")
	}
	found := false
	evs.mu.Lock()
	for _, e := range evs.ev {
		if strings.Contains(e.Message, "LB forwards 10.0.0.200 for service default/web from now on") {
			found = true
		}
	}
	evs.mu.Unlock()
	if !found {
		t.Error("no 'LB forwards ... from now on' event")
	}
}

// A fail-open LB spreads new flows over every eligible node until one passes
// its checks; then every node without a verdict leaves at once. The evidence
// must say that this is the end of fail-open, not a health failure of the
// node that leaves (it once read "not yet healthy" for a node about to pass).
func TestFailOpenEnds(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "fo"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"))
	var mu sync.Mutex
	bUp, bPasses := false, 0
	release := make(chan struct{}) // b's second passing check waits for it
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		mu.Lock()
		up := bUp
		if up && strings.Contains(url, "10.0.0.2") {
			bPasses++
			if bPasses == 2 {
				mu.Unlock()
				<-release
				mu.Lock()
			}
		}
		defer mu.Unlock()
		ok := strings.Contains(url, "10.0.0.1") || up
		r := cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: ok, Status: 503}
		if ok {
			r.Status = 200
		}
		return r
	}
	prof := fastProfile("fo", false)
	prof.HealthCheck.HealthyThreshold = 2
	prof.NoHealthyBackends = profiles.NoHealthyFailOpen
	prof.Flows.OnUnhealthy = profiles.FlowDrain
	prof.Flows.DrainTimeout = profiles.Duration(time.Minute)
	tc := startController(t, cs, WithProfiles(profiles.Set{"fo": prof, "generic": prof}), WithChecker(check))
	l4, evs := tc.l4, tc.evs
	state := func() cloudlbv1.ServiceState { return stateOf(tc.c, "default/web") }

	waitFor(t, "a alone active once it passed twice", func() bool {
		s, _ := l4.service("default/web")
		return fmt.Sprint(s.Active) == "[a]" && fmt.Sprint(s.Draining) == "[b]"
	})
	if e := evs.find(zdv1.EventLBBackendAdded, "node/b"); e == nil || e.Fields["failOpen"] != "true" {
		t.Fatalf("b was added while failing open; the event must say so: %+v", e)
	}
	e := evs.find(zdv1.EventLBBackendRemoved, "node/b")
	if e == nil || !strings.HasPrefix(e.Fields["reason"], "fail-open over (a passed its health check); failed health check") {
		t.Fatalf("b's removal must name the end of fail-open and b's own check: %+v", e)
	}
	var opened, closed bool
	evs.mu.Lock()
	for _, e := range evs.ev {
		opened = opened || strings.HasPrefix(e.Message, "LB fails open for service default/web")
		closed = closed || strings.HasPrefix(e.Message, "LB stops failing open for service default/web: a passed")
	}
	evs.mu.Unlock()
	if !opened || !closed {
		t.Fatalf("want notes for the start (%t) and the end (%t) of fail-open", opened, closed)
	}
	// b fails kube-proxy's healthz although a Cluster service should pass on
	// every node: not settled, and b is named.
	waitFor(t, "b pending, not settled", func() bool {
		s := state()
		return !s.Settled() && !s.FailingOpen && fmt.Sprint(s.Pending) == "[b]" && s.Health["b"].Expected && !s.Health["b"].Healthy
	})

	mu.Lock()
	bUp = true
	mu.Unlock()
	waitFor(t, "b pending while it passes once", func() bool { return fmt.Sprint(state().Pending) == "[b]" })
	if state().Settled() {
		t.Fatal("settled while b's verdict is pending")
	}
	close(release)
	waitFor(t, "b back and settled", func() bool {
		s := state()
		return fmt.Sprint(s.Active) == "[a b]" && s.Settled()
	})
}

// A profile that drops when no node is healthy never fails open: with every
// check failing, no node becomes a backend and no fail-open note appears.
func TestNoFailOpenWhenProfileDrops(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "drop"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}}},
	}
	cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"))
	check := func(_ context.Context, url string) cloudlbv1.CheckResult {
		return cloudlbv1.CheckResult{Time: time.Now(), URL: url, OK: false, Status: 503}
	}
	prof := fastProfile("drop", false) // NoHealthyBackends: drop
	tc := startController(t, cs, WithProfiles(profiles.Set{"drop": prof, "generic": prof}), WithChecker(check))
	l4, evs := tc.l4, tc.evs
	var last cloudlbv1.ServiceState
	waitFor(t, "both nodes checked (and failed) several times, with the VIP forwarded", func() bool {
		if s := stateOf(tc.c, "default/web"); s.Service != "" {
			last = s
		}
		a, b := last.Health["a"].Last, last.Health["b"].Last
		return last.Forwarding && a != nil && b != nil && time.Since(a.Time) < time.Second && len(evs.snapshot()) > 0
	})
	time.Sleep(100 * time.Millisecond) // five more check intervals
	if s := stateOf(tc.c, "default/web"); s.Service != "" {
		last = s
	}
	if last.FailingOpen || len(last.Active) != 0 {
		t.Fatalf("profile drops when no node is healthy, yet failingOpen=%t active=%v", last.FailingOpen, last.Active)
	}
	if s, _ := l4.service("default/web"); len(s.Active) != 0 {
		t.Fatalf("data plane got backends %v with every check failing", s.Active)
	}
	if e := evs.find(zdv1.EventLBBackendAdded, "node/a"); e != nil {
		t.Fatalf("a became a backend without passing a check: %+v", e)
	}
	for _, e := range evs.snapshot() {
		if strings.Contains(e.Message, "fails open") {
			t.Fatalf("fail-open note for a profile that drops: %s", e.Message)
		}
	}
}

// TestControllerNodeRulesFollowVersion runs the same node changes under the
// service controller rules of Kubernetes 1.26 and 1.34: a node that turns
// NotReady leaves a Cluster Service's LB on 1.26 and stays on 1.34
// (KEP-3458); a node tainted ToBeDeletedByClusterAutoscaler leaves at once on
// 1.26 but on 1.34 only at the next re-sync (here: another node labelled for
// exclusion), with an event saying why it stayed.
func TestControllerNodeRulesFollowVersion(t *testing.T) {
	for _, minor := range []int{26, 34} {
		t.Run(fmt.Sprintf("1.%d", minor), func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{contract.LBProfileAnnotation: "fast"}},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000}}},
			}
			cs := fake.NewSimpleClientset(svc, kNode("a", "10.0.0.1"), kNode("b", "10.0.0.2"), kNode("c", "10.0.0.3"), kNode("d", "10.0.0.4"))
			ps := profiles.Set{"fast": fastProfile("fast", false), "generic": fastProfile("generic", false)}
			tc := startController(t, cs, WithProfiles(ps), WithKubernetesMinor(minor))
			ctx, l4, evs := tc.ctx, tc.l4, tc.evs
			waitFor(t, "all four active", func() bool { s, _ := l4.service("default/web"); return fmt.Sprint(s.Active) == "[a b c d]" })
			update := func(name string, edit nodeOpt) { updateNode(ctx, t, cs, name, edit) }
			update("b", notReady)
			update("c", tainted)
			if minor == 26 {
				waitFor(t, "NotReady b and tainted c gone at once", func() bool { s, _ := l4.service("default/web"); return fmt.Sprint(s.Active) == "[a d]" })
				return
			}
			waitFor(t, "the stale-node event for c", func() bool {
				e := evs.find(zdv1.EventNote, "node/c")
				return e != nil && strings.Contains(e.Message, "stays a backend") && e.Fields["rulesSince"] == "1.34"
			})
			time.Sleep(100 * time.Millisecond) // several health-check rounds: nothing may move
			if s, _ := l4.service("default/web"); fmt.Sprint(s.Active) != "[a b c d]" {
				t.Fatalf("1.34 changed the node set without a re-sync: %v", s.Active)
			}
			update("d", excludeLabel("true"))
			waitFor(t, "re-sync drops tainted c and labelled d, keeps NotReady b", func() bool {
				s, _ := l4.service("default/web")
				return fmt.Sprint(s.Active) == "[a b]"
			})
		})
	}
}

// testController is a cloud LB running on a fake cluster for one test.
type testController struct {
	c   *Controller
	l4  *fakeL4
	evs *eventLog
	ctx context.Context // cancelled when the test ends
}

// startController runs a controller with the fakes every test uses (VIP
// pool 10.0.0.200-201, fake L4/L7, an event log, programDelay, every check
// passing); opts come after those, so a test's own WithChecker or
// WithProgrammingDelay replaces the default.
func startController(t *testing.T, cs kubernetes.Interface, opts ...Option) *testController {
	t.Helper()
	pool, err := ParseVIPRange("10.0.0.200-10.0.0.201")
	if err != nil {
		t.Fatal(err)
	}
	tc := &testController{l4: &fakeL4{}, evs: &eventLog{}}
	base := []Option{WithVIPPool(pool), WithL4(tc.l4), WithL7(&fakeL7{}), WithEventSink(tc.evs),
		WithProgrammingDelay(programDelay), WithChecker(okCheck)}
	tc.c, err = NewController(cs, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tc.ctx = ctx
	go func() { _ = tc.c.Run(ctx) }()
	return tc
}

// okCheck is a health check that always passes.
func okCheck(_ context.Context, url string) cloudlbv1.CheckResult {
	return cloudlbv1.CheckResult{URL: url, OK: true, Status: 200}
}

// stateOf is the controller's state of one Service (zero when it has none).
func stateOf(c *Controller, key string) cloudlbv1.ServiceState {
	for _, s := range c.State() {
		if s.Service == key {
			return s
		}
	}
	return cloudlbv1.ServiceState{}
}
