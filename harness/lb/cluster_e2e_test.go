//go:build e2e

package lb_test

// The cloud LB on a real kind cluster (make cluster LB=cloud). Each subtest is
// one behaviour the cloud LB promises and logs its figures. Needs the cluster
// (KUBECONFIG or ../../out/kubeconfig, name $ZERODROP_CLUSTER or "zerodrop")
// and the echo image (make image). Run one with -run 'Cluster/<name>'.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/lb"
	"zerodrop.dev/zerodrop/harness/load"
)

type env struct {
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	lb     *lb.KindLB
	hostIP string
	nodes  []corev1.Node
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		kc = "../../out/kubeconfig"
	}
	name := os.Getenv("ZERODROP_CLUSTER")
	if name == "" {
		name = "zerodrop"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("kubeconfig %s (make cluster LB=cloud): %v", kc, err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	l, err := lb.FindKind(ctx, name, "kind")
	if err != nil || l == nil {
		t.Fatalf("no cloud LB container for cluster %q (make cluster LB=cloud): %v", name, err)
	}
	gw, err := exec.Command("docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", "kind").Output()
	if err != nil {
		t.Fatal(err)
	}
	p, err := cluster.New("kind", cluster.WithName(name), cluster.WithKubeconfig(kc))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LoadImages(ctx, fixtures.DefaultImage); err != nil {
		t.Fatalf("load %s (make image): %v", fixtures.DefaultImage, err)
	}
	nl, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{cs: cs, dyn: dyn, lb: l, hostIP: strings.Fields(string(gw))[0], nodes: nl.Items}
}

func (e *env) namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_ = e.cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	waitT(t, 2*time.Minute, "old namespace "+name+" gone", func() bool {
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func waitT(t *testing.T, d time.Duration, what string, f func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !f() {
		if time.Since(start) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start)
}

// moveToAnotherNode rolls the one-replica Deployment name onto a worker
// other than the one its endpoint is on, so the old node loses its last
// local endpoint for good (the canonical source-ip-dilemma case), and
// returns when the rollout was started.
func (e *env) moveToAnotherNode(t *testing.T, ns, name, key string) time.Time {
	t.Helper()
	start := time.Now()
	cur := e.state(t, key).EndpointNodes
	var target string
	for _, n := range e.nodes {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp && (len(cur) == 0 || n.Name != cur[0]) {
			target = n.Name
			break
		}
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"zerodrop.dev/restart":%q}},"spec":{"nodeSelector":{"kubernetes.io/hostname":%q}}}}}`,
		start.Format(time.RFC3339Nano), target)
	t.Logf("%s: moving the pod from %v to %s", key, cur, target)
	if _, err := e.cs.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return start
}

// deploy creates the workload and waits for its pods and its LB address.
func (e *env) deploy(t *testing.T, w *fixtures.Workload) string {
	t.Helper()
	ctx := context.Background()
	ns := w.Config.Namespace
	// Classed, so the cloud LB takes it even next to MetalLB (which ignores classed Services).
	class := contract.CloudLBClass
	w.Service.Spec.LoadBalancerClass = &class
	if _, err := e.cs.CoreV1().Services(ns).Create(ctx, w.Service, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.PDB != nil {
		if _, err := e.cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, w.PDB, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(ctx, w.Deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, ns, w.Config.Name, 4*time.Minute)
	var vip string
	waitT(t, time.Minute, "the LB address of "+ns+"/"+w.Config.Name, func() bool {
		s, err := e.cs.CoreV1().Services(ns).Get(ctx, w.Config.Name, metav1.GetOptions{})
		if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
			vip = s.Status.LoadBalancer.Ingress[0].IP
		}
		return vip != ""
	})
	// The LB forwards a new address only after its programming delay, and a
	// case's load must not meet the LB's start-up (fail-open, first checks).
	key := ns + "/" + w.Config.Name
	st, err := lb.WaitSettled(ctx, e.lb.AdminURL(), key, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LB settled %s: %s", key, st.Summary())
	c := &http.Client{Timeout: time.Second}
	waitT(t, 30*time.Second, "the LB address "+vip+" answers", func() bool {
		resp, err := c.Get("http://" + vip + "/")
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return vip
}

func (e *env) waitRollout(t *testing.T, ns, name string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	waitT(t, d, "deployment "+ns+"/"+name+" rolled out", func() bool {
		dep, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || dep.Spec.Replicas == nil {
			return false
		}
		s := dep.Status
		return s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == *dep.Spec.Replicas &&
			s.AvailableReplicas == *dep.Spec.Replicas && s.Replicas == *dep.Spec.Replicas
	})
}

func (e *env) state(t *testing.T, key string) cloudlbv1.ServiceState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := lb.FetchState(ctx, e.lb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Service == key {
			return s
		}
	}
	return cloudlbv1.ServiceState{}
}

// results is an in-memory result and event sink.
type results struct {
	mu  sync.Mutex
	r   []zdv1.Result
	evs []zdv1.Event
}

func (r *results) Result(x zdv1.Result) error {
	r.mu.Lock()
	r.r = append(r.r, x)
	r.mu.Unlock()
	return nil
}
func (r *results) Event(e zdv1.Event) error {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	return nil
}

func (r *results) failures() (n int, first, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.r {
		if !x.OK() {
			if n == 0 || x.Time.Before(first) {
				first = x.Time
			}
			if x.Time.After(last) {
				last = x.Time
			}
			n++
		}
	}
	return
}

// histogram lists "second:count" of failed requests relative to t0.
func (r *results) histogram(t0 time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[int]int{}
	for _, x := range r.r {
		if !x.OK() {
			m[int(x.Time.Sub(t0).Seconds())]++
		}
	}
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%ds:%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func (r *results) byPod() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, x := range r.r {
		if x.OK() {
			m[x.Pod]++
		}
	}
	return m
}

// startLoad sends rate req/s to vip for d; also follows the LB's events.
func (e *env) startLoad(t *testing.T, vip string, rate int, d time.Duration, keepAlive bool) (*results, func() load.Summary) {
	t.Helper()
	res := &results{}
	l, err := load.New(load.WithTargets("http://"+vip+"/"), load.WithRate(rate), load.WithDuration(d),
		load.WithKeepAlive(keepAlive), load.WithTimeout(2*time.Second), load.WithEvents(res))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = lb.SubscribeEvents(ctx, e.lb.AdminURL(), res, nil) }()
	run, err := l.Start(ctx, res)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return res, func() load.Summary {
		if d == 0 {
			run.Stop() // a load without a duration runs until stopped
		}
		sum, err := run.Wait()
		time.Sleep(500 * time.Millisecond) // the last LB events
		cancel()
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		return sum
	}
}

// span is "first 1.5s, last 17.9s" from t0, or "none" without failures.
func span(n int, first, last, t0 time.Time, round time.Duration) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("first %v, last %v", first.Sub(t0).Round(round), last.Sub(t0).Round(round))
}

// watchHealth polls a node's healthCheckNodePort every 50ms and reports
// the first time it answers want (zero time if ctx ends first).
func (e *env) watchHealth(ctx context.Context, node string, port int32, want int) <-chan time.Time {
	out := make(chan time.Time, 1)
	var ip string
	for _, n := range e.nodes {
		if n.Name == node {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					ip = a.Address
				}
			}
		}
	}
	go func() {
		defer close(out)
		if ip == "" {
			return
		}
		c := &http.Client{Timeout: time.Second}
		url := fmt.Sprintf("http://%s:%d/healthz", ip, port)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if resp, err := c.Get(url); err == nil {
				resp.Body.Close()
				if resp.StatusCode == want {
					out <- time.Now()
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// lbEvents returns the LB's events of one type for one Service ("" = any).
func (r *results) lbEvents(typ string, service ...string) []zdv1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []zdv1.Event
	for _, e := range r.evs {
		if e.Source == zdv1.SourceLB && e.Type == typ && (len(service) == 0 || e.Fields["service"] == service[0]) {
			out = append(out, e)
		}
	}
	return out
}

// endpointWatch records when each pod's endpoint stopped being ready or went away.
type endpointWatch struct {
	mu      sync.Mutex
	removed map[string]time.Time
}

func (e *env) watchEndpoints(t *testing.T, ns, svc string) *endpointWatch {
	ew := &endpointWatch{removed: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.cs.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok || ev.Type == watch.Error {
				continue
			}
			now := time.Now()
			seen := map[string]bool{}
			for _, ep := range s.Endpoints {
				if ep.TargetRef == nil {
					continue
				}
				p := ep.TargetRef.Name
				r := ep.Conditions.Ready == nil || *ep.Conditions.Ready
				seen[p] = true
				if ready[p] && !r {
					ew.mu.Lock()
					ew.removed[p] = now
					ew.mu.Unlock()
				}
				ready[p] = r
			}
			for p, r := range ready {
				if !seen[p] && r {
					ew.mu.Lock()
					ew.removed[p] = now
					ew.mu.Unlock()
					ready[p] = false
				}
			}
		}
	}()
	return ew
}

func (ew *endpointWatch) times() []time.Time {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	var out []time.Time
	for _, t := range ew.removed {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

func TestCluster(t *testing.T) {
	e := setup(t)
	ctx := context.Background()

	// gcp-nlb (8s x 3 to remove, 8s x 1 to add) and gke-l4 (3s x 2, 3s x 1
	// for Local): the same move, each judged by its own profile's numbers.
	for _, name := range []string{"gcp-nlb", "gke-l4"} {
		prof := profiles.MustStock(name)
		t.Run(name+"-local-client-ip-and-backends", func(t *testing.T) {
			ns := e.namespace(t, "zdlb-srcip-"+name)
			w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(1),
				fixtures.WithLBProfile(name))
			if err != nil {
				t.Fatal(err)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			match := func() bool {
				s := e.state(t, key)
				return len(s.EndpointNodes) > 0 && fmt.Sprint(s.Active) == fmt.Sprint(s.EndpointNodes)
			}
			lag := waitT(t, time.Minute, "LB backends = nodes with ready endpoints", match)
			res, wait := e.startLoad(t, vip, 50, 4*time.Second, false)
			sum := wait()
			res.mu.Lock()
			bad := 0
			for _, x := range res.r {
				if x.OK() && x.ClientIP != e.hostIP {
					bad++
				}
			}
			res.mu.Unlock()
			if sum.OK == 0 || bad > 0 {
				t.Fatalf("%d OK of %d, %d with client_ip != %s", sum.OK, sum.Results, bad, e.hostIP)
			}
			t.Logf("client_ip: %d/%d requests saw %s (the load generator's address on the kind network); backends matched endpoints %v after deploy",
				sum.OK, sum.Results, e.hostIP, lag.Round(time.Millisecond))

			// Move the pod to another worker; the LB must follow within interval x
			// threshold of the health endpoint changing. The LB only sees kube-proxy's
			// healthCheckNodePort, so the clock starts when that flips (polled here
			// every 50ms on both nodes), not when the EndpointSlice changes: the
			// difference is kube-proxy's own propagation, reported separately.
			before := e.state(t, key)
			from := before.EndpointNodes[0]
			var target string
			for _, n := range e.nodes {
				if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp && n.Name != from {
					target = n.Name
					break
				}
			}
			svc, err := e.cs.CoreV1().Services(ns).Get(ctx, w.Config.Name, metav1.GetOptions{})
			if err != nil || svc.Spec.HealthCheckNodePort == 0 {
				t.Fatalf("service %s has no healthCheckNodePort: %v", key, err)
			}
			evs := &results{}
			sctx, scancel := context.WithCancel(ctx)
			defer scancel()
			go func() { _ = lb.SubscribeEvents(sctx, e.lb.AdminURL(), evs, nil) }()
			fromFlip := e.watchHealth(sctx, from, svc.Spec.HealthCheckNodePort, http.StatusServiceUnavailable)
			toFlip := e.watchHealth(sctx, target, svc.Spec.HealthCheckNodePort, http.StatusOK)
			patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{"kubernetes.io/hostname":%q}}}}}`, target)
			patched := time.Now()
			if _, err := e.cs.AppsV1().Deployments(ns).Patch(ctx, w.Config.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			var moved time.Time
			waitT(t, 2*time.Minute, "endpoints on "+target+" only", func() bool {
				s := e.state(t, key)
				if fmt.Sprint(s.EndpointNodes) == "["+target+"]" {
					moved = time.Now()
					return true
				}
				return false
			})
			waitT(t, time.Minute, "LB backends follow", match)
			time.Sleep(300 * time.Millisecond) // the LB's events reach the subscriber
			scancel()
			// The subscription replays the LB's history: only what followed the
			// patch counts.
			eventAt := func(typ, node string) time.Time {
				for _, ev := range evs.lbEvents(typ, key) {
					if ev.Fields["node"] == node && ev.Time.After(patched) {
						return ev.Time
					}
				}
				t.Fatalf("no %s event for %s in %d LB events", typ, node, len(evs.lbEvents(typ)))
				return time.Time{}
			}
			removed, added := eventAt(zdv1.EventLBBackendRemoved, from), eventAt(zdv1.EventLBBackendAdded, target)
			fromAt, toAt := <-fromFlip, <-toFlip
			if fromAt.IsZero() || toAt.IsZero() {
				t.Fatalf("health endpoints never flipped: %s 503 at %v, %s 200 at %v", from, fromAt, target, toAt)
			}
			// A check completes one round trip after it starts; 500ms covers that
			// and event delivery.
			const slack = 500 * time.Millisecond
			hc := prof.HealthCheckFor(corev1.ServiceExternalTrafficPolicyLocal)
			removeBound, addBound := prof.RemovalLag(), prof.AdditionLag()
			removeLag, addLag := removed.Sub(fromAt), added.Sub(toAt)
			// The flips are timed against when this test's watch delivered the
			// EndpointSlice change, which can lag kube-proxy's own watch (a
			// negative figure), so the LB is judged from the flips only.
			t.Logf("endpoint moved %s -> %s (EndpointSlice seen by the test %s); healthCheckNodePort flipped on %s at %+v and on %s at %+v from then; "+
				"LB (%s) removed %s %v after its flip (bound %v x %d = %v), added %s %v after its flip (bound %v x %d = %v)",
				from, target, moved.Format("15:04:05.000"), from, fromAt.Sub(moved).Round(time.Millisecond), target, toAt.Sub(moved).Round(time.Millisecond),
				name, from, removeLag.Round(time.Millisecond), hc.Interval.D(), hc.UnhealthyThreshold, removeBound,
				target, addLag.Round(time.Millisecond), hc.Interval.D(), hc.HealthyThreshold, addBound)
			if removeLag > removeBound+slack || addLag > addBound+slack {
				t.Fatalf("LB took %v to remove and %v to add after the health endpoints changed: more than interval x threshold", removeLag, addLag)
			}
		})
	}

	t.Run("azure-basic-one-pool", func(t *testing.T) {
		ns := e.namespace(t, "zdlb-basic")
		w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(3),
			fixtures.WithSpread(true), fixtures.WithLBProfile("azure-basic"), fixtures.WithLBPool("pool-a"))
		if err != nil {
			t.Fatal(err)
		}
		vip := e.deploy(t, w)
		key := ns + "/" + w.Config.Name
		waitT(t, time.Minute, "azure-basic backends", func() bool { return len(e.state(t, key).Active) > 0 })
		time.Sleep(6 * time.Second) // every pool-a node through its health check
		run := func(policy string) map[string]int {
			res, wait := e.startLoad(t, vip, 50, 6*time.Second, false)
			wait()
			return res.byPod()
		}
		local := run("Local")
		st := e.state(t, key)
		t.Logf("Local: requests per pod %v; LB backends %v, excluded %v", local, st.Active, st.Excluded)
		patch := `{"spec":{"externalTrafficPolicy":"Cluster"}}`
		if _, err := e.cs.CoreV1().Services(ns).Patch(ctx, w.Config.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(12 * time.Second) // new health checks (kube-proxy :10256) pass
		cluster := run("Cluster")
		t.Logf("Cluster: requests per pod %v", cluster)
		if len(local) >= 3 || len(cluster) != 3 {
			t.Fatalf("want some pod without traffic under Local (only pool-a backends) and all 3 pods under Cluster: %v / %v", local, cluster)
		}
	})

	t.Run("backend-change-under-500rps", func(t *testing.T) {
		ns := e.namespace(t, "zdlb-change")
		w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(3),
			fixtures.WithSpread(true), fixtures.WithPolicy(corev1.ServiceExternalTrafficPolicyCluster), fixtures.WithLBProfile("generic"))
		if err != nil {
			t.Fatal(err)
		}
		vip := e.deploy(t, w)
		key := ns + "/" + w.Config.Name
		waitT(t, time.Minute, "3 backends", func() bool { return len(e.state(t, key).Active) == 3 })
		res, wait := e.startLoad(t, vip, 500, 50*time.Second, false)
		time.Sleep(5 * time.Second)
		node := e.state(t, key).Active[0]
		label := func(op string) {
			p := `{"metadata":{"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":"true"}}}`
			if op == "del" {
				p = `{"metadata":{"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":null}}}`
			}
			if _, err := e.cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		label("add")
		t.Cleanup(func() { label("del") })
		waitT(t, 10*time.Second, node+" out of the backends", func() bool { return len(e.state(t, key).Active) == 2 })
		time.Sleep(5 * time.Second)
		label("del")
		waitT(t, 40*time.Second, node+" back in the backends", func() bool { return len(e.state(t, key).Active) == 3 })
		sum := wait()
		n, _, _ := res.failures()
		t.Logf("500 rps for 50s while %s left and rejoined the backend set: %d requests, %d OK, %d failed %v; LB events: %d removed, %d added",
			node, sum.Results, sum.OK, n, sum.ErrorClasses, len(res.lbEvents(zdv1.EventLBBackendRemoved, key)), len(res.lbEvents(zdv1.EventLBBackendAdded, key)))
		if n != 0 {
			t0 := sum.Started
			for _, ev := range append(res.lbEvents(zdv1.EventLBBackendRemoved, key), res.lbEvents(zdv1.EventLBBackendAdded, key)...) {
				if ev.Time.After(t0) {
					t.Logf("  %v %s", ev.Time.Sub(t0).Round(time.Millisecond), ev.Message)
				}
			}
			t.Logf("failures per second from the load start: %s", res.histogram(t0))
			res.mu.Lock()
			shown := 0
			var at []string
			for _, x := range res.r {
				if x.OK() {
					continue
				}
				at = append(at, x.Time.Sub(t0).Round(time.Millisecond).String())
				if shown < 4 {
					shown++
					t.Logf("  failed %v: %s %s reused=%t", x.Time.Sub(t0).Round(time.Millisecond), x.Class, x.Error, x.Reused)
				}
			}
			res.mu.Unlock()
			t.Logf("  every failure, sent at: %s", strings.Join(at, " "))
			t.Fatalf("%d requests failed while only the backend set changed", n)
		}
	})

	t.Run("gclb-keepalive", func(t *testing.T) {
		for _, ka := range []bool{true, false} {
			ns := e.namespace(t, fmt.Sprintf("zdlb-gclb-%v", ka))
			w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(2),
				fixtures.WithPolicy(corev1.ServiceExternalTrafficPolicyCluster), fixtures.WithLBProfile("gclb"), fixtures.WithKeepAlive(ka),
				fixtures.WithReadiness(&fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}))
			if err != nil {
				t.Fatal(err)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			waitT(t, time.Minute, "gclb backends", func() bool { return len(e.state(t, key).Active) > 0 })
			ew := e.watchEndpoints(t, ns, w.Config.Name)
			res, wait := e.startLoad(t, vip, 50, 30*time.Second, true)
			time.Sleep(5 * time.Second)
			// The victim is the pod that answers now: with keep-alive the proxy
			// may carry everything to one pod, and an idle pod proves nothing.
			var victim string
			served := res.byPod()
			for pod, n := range served {
				if victim == "" || n > served[victim] {
					victim = pod
				}
			}
			if victim == "" {
				t.Fatal("no pod answered in the first 5s of load")
			}
			if err := e.cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(fmt.Sprintf("%s:%d", victim, fixtures.AdminPort)).
				SubResource("proxy").Suffix("admin/ready").Param("value", "false").Do(ctx).Error(); err != nil {
				t.Fatalf("make %s unready: %v", victim, err)
			}
			wait()
			ew.mu.Lock()
			removed := ew.removed[victim]
			ew.mu.Unlock()
			if removed.IsZero() {
				t.Fatalf("endpoint of %s was never removed", victim)
			}
			after := 0
			res.mu.Lock()
			for _, x := range res.r {
				if x.OK() && x.Pod == victim && x.Time.After(removed.Add(2*time.Second)) {
					after++
				}
			}
			res.mu.Unlock()
			t.Logf("echo keep-alive %v: %s got %d requests more than 2s after its endpoint was removed", ka, victim, after)
			if ka && after == 0 {
				t.Fatal("with keep-alive the unready pod should keep getting requests over reused connections (incident keepalive-unready)")
			}
			if !ka && after != 0 {
				t.Fatal("without keep-alive the unready pod must get nothing once kube-proxy dropped its endpoint")
			}
		}
	})

	// A GKE BackendConfig that points gclb's check at a Local Service's
	// healthCheckNodePort, every 2 s with 2 failures: the LB asks kube-proxy
	// there, and a node whose endpoint left is out within the
	// BackendConfig's 4 s, not the default check's 10 minutes.
	t.Run("gclb-backendconfig", func(t *testing.T) {
		ns := e.namespace(t, "zdlb-gclb-bc")
		w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(1),
			fixtures.WithPolicy(corev1.ServiceExternalTrafficPolicyLocal), fixtures.WithLBProfile("gclb"))
		if err != nil {
			t.Fatal(err)
		}
		w.Service.Annotations[profiles.BackendConfigAnnotation] = `{"default":"fast"}`
		e.deploy(t, w)
		key := ns + "/" + w.Config.Name
		svc, err := e.cs.CoreV1().Services(ns).Get(ctx, w.Config.Name, metav1.GetOptions{})
		if err != nil || svc.Spec.HealthCheckNodePort == 0 {
			t.Fatalf("service %s: %v (healthCheckNodePort %d)", key, err, svc.Spec.HealthCheckNodePort)
		}
		hcnp := svc.Spec.HealthCheckNodePort
		for n, h := range e.state(t, key).Health {
			if strings.Contains(h.URL, fmt.Sprintf(":%d/", hcnp)) {
				t.Fatalf("node %s checked at %s before any BackendConfig exists", n, h.URL)
			}
		}
		bc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": profiles.BackendConfigGroup + "/" + profiles.BackendConfigVersion, "kind": profiles.BackendConfigKind,
			"metadata": map[string]any{"name": "fast", "namespace": ns},
			"spec": map[string]any{"healthCheck": map[string]any{"checkIntervalSec": int64(2), "timeoutSec": int64(1),
				"unhealthyThreshold": int64(2), "port": int64(hcnp), "requestPath": "/healthz"}}}}
		gvr := schema.GroupVersionResource{Group: profiles.BackendConfigGroup, Version: profiles.BackendConfigVersion, Resource: profiles.BackendConfigResource}
		if _, err := e.dyn.Resource(gvr).Namespace(ns).Create(ctx, bc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create BackendConfig (the cloud LB installs its CRD): %v", err)
		}
		want := fmt.Sprintf(":%d/healthz", hcnp)
		took := waitT(t, time.Minute, "every node checked at "+want+" and the LB settled again", func() bool {
			st := e.state(t, key)
			for _, h := range st.Health {
				if !strings.HasSuffix(h.URL, want) {
					return false
				}
			}
			return len(st.Health) > 0 && len(st.Active) == 1 && len(st.Pending) == 0
		})
		from := e.state(t, key).Active
		t.Logf("BackendConfig applied in %s: active %v, checks at %s", took.Round(time.Millisecond), from, want)
		moved := e.moveToAnotherNode(t, ns, w.Config.Name, key)
		waitT(t, 2*time.Minute, "the LB to follow the endpoint off "+from[0], func() bool {
			st := e.state(t, key)
			return len(st.Active) == 1 && st.Active[0] != from[0]
		})
		gone := time.Now()
		t.Logf("the endpoint moved from %s; the LB followed %s after the patch", from[0], gone.Sub(moved).Round(100*time.Millisecond))
		if d := gone.Sub(moved); d > 90*time.Second {
			t.Fatalf("the LB took %s to leave %s: not the BackendConfig's 4 s check", d, from[0])
		}
	})

	t.Run("drain-local-pdb-cordon", func(t *testing.T) {
		for _, prof := range []string{"gke-legacy", "gcp-nlb"} {
			ns := e.namespace(t, "zdlb-cordon-"+prof)
			w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(2),
				fixtures.WithPools("pool-a"), fixtures.WithSpread(true), fixtures.WithPDB(fixtures.PDBBlocking), fixtures.WithLBProfile(prof))
			if err != nil {
				t.Fatal(err)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			waitT(t, time.Minute, "LB backends = endpoint nodes", func() bool {
				s := e.state(t, key)
				return len(s.Active) > 0 && fmt.Sprint(s.Active) == fmt.Sprint(s.EndpointNodes)
			})
			var poolA []string
			for _, n := range e.nodes {
				if n.Labels[contract.PoolLabel] == "pool-a" {
					poolA = append(poolA, n.Name)
				}
			}
			cordon := func(on bool) {
				for _, n := range poolA {
					p := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
					if _, err := e.cs.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, wait := e.startLoad(t, vip, 100, 25*time.Second, false)
			time.Sleep(5 * time.Second)
			at := time.Now()
			cordon(true)
			time.Sleep(15 * time.Second)
			cordon(false)
			sum := wait()
			n, first, last := res.failures()
			msg := ""
			for _, ev := range res.lbEvents(zdv1.EventLBBackendRemoved, key) {
				if ev.Time.After(at) && (msg == "" || strings.Contains(ev.Message, "cordoned")) {
					msg = ev.Message
				}
			}
			t.Logf("%s: cordoned pool-a %v for 15s under 100 rps: %d of %d failed (%s after the cordon); LB said: %q",
				prof, poolA, n, sum.Results, span(n, first, last, at, time.Millisecond), msg)
			if prof == "gke-legacy" && (n == 0 || !strings.Contains(msg, "cordoned")) {
				t.Fatal("gke-legacy must blackhole traffic after the cordon and say the LB dropped the cordoned nodes")
			}
			if prof != "gke-legacy" && n != 0 {
				t.Fatalf("%s must not drop anything on a cordon", prof)
			}
		}
	})

	t.Run("source-ip-dilemma-rolling-update", func(t *testing.T) {
		gcp := profiles.MustStock("gcp-nlb")
		for _, prof := range []fixtures.Hardening{fixtures.Naive, fixtures.Hardened} {
			if only := os.Getenv("ZDLB_ROLL"); only != "" && only != string(prof) {
				continue
			}
			ns := e.namespace(t, "zdlb-roll-"+string(prof))
			// One replica, and the update also moves it to another worker: the old
			// node loses its last local endpoint for good, the canonical incident source-ip-dilemma
			// case (a node whose pods are all replaced elsewhere).
			w, err := fixtures.New(fixtures.WithHardening(prof), fixtures.WithLB(gcp), fixtures.WithNamespace(ns),
				fixtures.WithReplicas(1), fixtures.WithLBProfile("gcp-nlb"))
			if err != nil {
				t.Fatal(err)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			waitT(t, time.Minute, "LB backends = endpoint nodes", func() bool {
				s := e.state(t, key)
				return len(s.Active) > 0 && fmt.Sprint(s.Active) == fmt.Sprint(s.EndpointNodes)
			})
			ew := e.watchEndpoints(t, ns, w.Config.Name)
			res, stop := e.startLoad(t, vip, 200, 0, false) // until stopped
			time.Sleep(5 * time.Second)
			start := e.moveToAnotherNode(t, ns, w.Config.Name, key)
			e.waitRollout(t, ns, w.Config.Name, 8*time.Minute)
			rolled := time.Since(start)
			time.Sleep(30 * time.Second) // the LB catches up with the last change
			sum := stop()
			n, first, last := res.failures()
			unhealthy := res.lbEvents(zdv1.EventLBNodeUnhealthy, key)
			var uh []string
			for _, u := range unhealthy {
				uh = append(uh, u.Time.Sub(start).Round(100*time.Millisecond).String()+" "+u.Object)
			}
			var er []string
			for _, x := range ew.times() {
				er = append(er, x.Sub(start).Round(100*time.Millisecond).String())
			}
			t.Logf("%s rolling update (gcp-nlb, Local, 200 rps, rollout took %v), times from the rollout start: %d of %d requests failed (%s); endpoints removed at %v; LB marked nodes unhealthy at %v",
				prof, rolled.Round(time.Second), n, sum.Results, span(n, first, last, start, 100*time.Millisecond), er, uh)
			t.Logf("%s: failures per second from the rollout start: %s; error classes %v", prof, res.histogram(start), sum.ErrorClasses)
			if prof == fixtures.Naive && n == 0 {
				t.Fatal("the naive rolling update dropped nothing: the incident source-ip-dilemma hazard did not show")
			}
			if prof == fixtures.Hardened && n != 0 {
				t.Fatalf("hardened rolling update dropped %d requests", n)
			}
		}
	})

	// Doctor rule ZD001 against the cluster: an app that fails readiness on
	// SIGTERM but keeps accepting loses the node's new connections once its
	// terminating endpoint stops serving while the LB still sends them
	// (kube-proxy CategorizeEndpoints); a longer grace period changes
	// nothing. Each case runs the doctor on the very manifests it deploys
	// and compares its prediction with the drops measured on gke-l4 (6 s).
	// The service controller parses the exclusion label's value from 1.34
	// (k8s.io/cloud-provider v0.34 nodeIncludedPredicate, strconv.ParseBool):
	// "false" keeps a node there and excluded it before, where the key alone
	// counted. The LB follows the cluster's version, so the same label gives
	// a different backend set on either side of 1.34.
	t.Run("exclusion-label-follows-version", func(t *testing.T) {
		v, err := e.cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
		if err != nil {
			t.Fatalf("server minor %q: %v", v.Minor, err)
		}
		ns := e.namespace(t, "zdlb-exclude")
		w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(1), fixtures.WithLBProfile("gke-l4"))
		if err != nil {
			t.Fatal(err)
		}
		e.deploy(t, w)
		key := ns + "/" + w.Config.Name
		var node string
		waitT(t, time.Minute, "eligible nodes", func() bool {
			if el := e.state(t, key).Eligible; len(el) > 0 {
				node = el[0]
				return true
			}
			return false
		})
		label := func(value string) {
			t.Helper()
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, corev1.LabelNodeExcludeBalancers, value)
			if _, err := e.cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { label("null") })
		excluded := func() (string, bool) { why, ok := e.state(t, key).Excluded[node]; return why, ok }
		label(`"false"`)
		if minor >= 34 {
			time.Sleep(5 * time.Second) // the label flip re-syncs at once; give a wrong removal time to show
			if why, ok := excluded(); ok {
				t.Fatalf("Kubernetes %s: %s=false must keep %s, the LB excluded it: %s", v.GitVersion, corev1.LabelNodeExcludeBalancers, node, why)
			}
			t.Logf("Kubernetes %s: %s labelled %s=false stays a backend (value parsed from 1.34)", v.GitVersion, node, corev1.LabelNodeExcludeBalancers)
		} else {
			waitT(t, 30*time.Second, node+" excluded by the label's key", func() bool { _, ok := excluded(); return ok })
			why, _ := excluded()
			t.Logf("Kubernetes %s: %s labelled %s=false leaves the LB (before 1.34 the key alone excludes): %s", v.GitVersion, node, corev1.LabelNodeExcludeBalancers, why)
		}
		label(`"true"`)
		waitT(t, 30*time.Second, node+" excluded by =true", func() bool { _, ok := excluded(); return ok })
	})

	t.Run("zd001-serving-window", func(t *testing.T) {
		gke := profiles.MustStock("gke-l4")
		fast := &fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
		slow := &fixtures.Probe{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
		cases := []struct {
			name  string
			opts  []fixtures.Option
			zd001 bool // the doctor's prediction, and so the expected outcome
		}{
			{name: "unready-fast-no-prestop", zd001: true, opts: []fixtures.Option{fixtures.WithPreStopSleep(0), fixtures.WithReadiness(fast),
				fixtures.WithShutdown(fixtures.Shutdown{Delay: 20 * time.Second, UnreadyOnTerm: true, DrainTimeout: 5 * time.Second}), fixtures.WithTerminationGrace(40 * time.Second)}},
			{name: "unready-fast-prestop-8s", opts: []fixtures.Option{fixtures.WithPreStopSleep(8 * time.Second), fixtures.WithReadiness(fast),
				fixtures.WithShutdown(fixtures.Shutdown{Delay: 20 * time.Second, UnreadyOnTerm: true, DrainTimeout: 5 * time.Second}), fixtures.WithTerminationGrace(40 * time.Second)}},
			// The rolling-update-local incident's numbers with a grace its
			// inequality forbids (10 + 10 x 2 = 30 < 120): the old rule's ERROR.
			{name: "incident-numbers-grace-120s", opts: []fixtures.Option{fixtures.WithPreStopSleep(10 * time.Second), fixtures.WithReadiness(slow),
				fixtures.WithShutdown(fixtures.Shutdown{Delay: 60 * time.Second, UnreadyOnTerm: true, DrainTimeout: 10 * time.Second}), fixtures.WithTerminationGrace(120 * time.Second)}},
		}
		for i, tc := range cases {
			if only := os.Getenv("ZDLB_ZD001"); only != "" && only != tc.name {
				continue
			}
			ns := e.namespace(t, fmt.Sprintf("zdlb-zd001-%d", i))
			opts := append([]fixtures.Option{fixtures.WithLB(gke), fixtures.WithNamespace(ns), fixtures.WithReplicas(1), fixtures.WithLBProfile("gke-l4")}, tc.opts...)
			w, err := fixtures.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			yml, err := w.RenderYAML()
			if err != nil {
				t.Fatal(err)
			}
			ms, err := doctor.Read(tc.name+".yaml", strings.NewReader(string(yml)))
			if err != nil {
				t.Fatal(err)
			}
			var predicted []string
			for _, f := range doctor.Check(ms).Findings {
				if f.RuleID == "ZD001" || f.RuleID == "ZD002" {
					predicted = append(predicted, f.RuleID+": "+f.Message)
				}
			}
			if got := len(predicted) > 0; got != tc.zd001 {
				t.Fatalf("%s: doctor findings %q, want ZD001 %t", tc.name, predicted, tc.zd001)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			waitT(t, time.Minute, "LB backends = endpoint nodes", func() bool {
				s := e.state(t, key)
				return len(s.Active) > 0 && fmt.Sprint(s.Active) == fmt.Sprint(s.EndpointNodes)
			})
			res, stop := e.startLoad(t, vip, 200, 0, false)
			time.Sleep(5 * time.Second)
			start := e.moveToAnotherNode(t, ns, w.Config.Name, key)
			e.waitRollout(t, ns, w.Config.Name, 8*time.Minute)
			// Until the old Pod is gone (its grace can be 120 s), then the LB catches up.
			waitT(t, 3*time.Minute, "the old Pod gone", func() bool {
				pl, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				return err == nil && len(pl.Items) == 1
			})
			time.Sleep(10 * time.Second)
			sum := stop()
			n, first, last := res.failures()
			t.Logf("ZD001 %s (gke-l4, Local, 200 rps, new connections): doctor %q; measured %d of %d requests failed (%s from the rollout start); error classes %v; failures per second: %s",
				tc.name, predicted, n, sum.Results, span(n, first, last, start, 100*time.Millisecond), sum.ErrorClasses, res.histogram(start))
			if tc.zd001 && n == 0 {
				t.Errorf("%s: the doctor predicts drops (ZD001) and none were measured", tc.name)
			}
			if !tc.zd001 && n != 0 {
				t.Errorf("%s: the doctor predicts no drop and %d were measured", tc.name, n)
			}
		}
	})

	// Pod targets on the real kernel: the LB's proxy reaches the Pod IPs
	// itself (the Pods see the LB's own address as the client: no node and
	// no kube-proxy in between), and a Pod that turns unready (through its
	// admin port, so it keeps running) leaves as its vendor has it: AWS
	// deregisters it with its endpoint and it drains for the
	// deregistration delay (300 s), its request in flight finishing; GKE
	// keeps it in the NEG and drops it on its own readiness-probe check,
	// unhealthy but registered, its request in flight finishing too.
	t.Run("pod-targets", func(t *testing.T) {
		lbIP := strings.TrimPrefix(e.lb.AdminURL(), "http://")
		lbIP = lbIP[:strings.LastIndex(lbIP, ":")]
		for _, tc := range []struct {
			profile  string
			draining bool // the leaving Pod drains (deregistered) rather than stays registered, unhealthy
		}{
			{"aws-alb-ip", true},
			{"gclb-neg", false},
		} {
			ns := e.namespace(t, "zdlb-pods-"+tc.profile)
			w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithNamespace(ns), fixtures.WithReplicas(2),
				fixtures.WithLBProfile(tc.profile), fixtures.WithKeepAlive(false),
				fixtures.WithReadiness(&fixtures.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}))
			if err != nil {
				t.Fatal(err)
			}
			vip := e.deploy(t, w)
			key := ns + "/" + w.Config.Name
			st := e.state(t, key)
			pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			podIP := map[string]string{}
			for _, p := range pods.Items {
				podIP[p.Name] = p.Status.PodIP
			}
			for _, n := range st.Active {
				if podIP[n] == "" || !strings.Contains(st.Health[n].URL, podIP[n]) {
					t.Fatalf("%s: active target %q is not a Pod checked at its own address (health %+v, Pods %v)", tc.profile, n, st.Health[n], podIP)
				}
			}
			res, stop := e.startLoad(t, vip, 50, 0, false)
			time.Sleep(3 * time.Second)
			sum := stop()
			res.mu.Lock()
			fromLB, other := 0, map[string]int{}
			for _, x := range res.r {
				if x.OK() && x.ClientIP == lbIP {
					fromLB++
				} else if x.OK() {
					other[x.ClientIP]++
				}
			}
			res.mu.Unlock()
			t.Logf("%s: %d of %d requests reached the Pods with the LB (%s) as their peer; other peers %v; per Pod %v",
				tc.profile, fromLB, sum.Results, lbIP, other, res.byPod())
			if fromLB == 0 || len(other) != 0 || len(res.byPod()) != 2 {
				t.Fatalf("%s: want every request from the LB's own address, to both Pods", tc.profile)
			}

			// One slow request per Pod (the proxy alternates), then the
			// first Pod answering leaves.
			type answer struct {
				code int
				err  error
			}
			answers := make(chan answer, 2)
			c := &http.Client{Timeout: 30 * time.Second}
			for range 2 {
				go func() {
					resp, err := c.Get("http://" + vip + "/?delay=8s")
					if err != nil {
						answers <- answer{err: err}
						return
					}
					defer resp.Body.Close()
					answers <- answer{code: resp.StatusCode}
				}()
				time.Sleep(200 * time.Millisecond)
			}
			time.Sleep(time.Second)
			leaving := st.Active[0]
			t0 := time.Now()
			if err := e.cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(fmt.Sprintf("%s:%d", leaving, fixtures.AdminPort)).
				SubResource("proxy").Suffix("admin/ready").Param("value", "false").Do(ctx).Error(); err != nil {
				t.Fatalf("make %s unready: %v", leaving, err)
			}
			waitT(t, 30*time.Second, tc.profile+": "+leaving+" out of the LB's active targets", func() bool {
				return !slices.Contains(e.state(t, key).Active, leaving)
			})
			left := time.Since(t0)
			codes := map[int]int{}
			for range 2 {
				a := <-answers
				if a.err != nil {
					t.Fatalf("%s: slow request: %v", tc.profile, a.err)
				}
				codes[a.code]++
			}
			st = e.state(t, key)
			t.Logf("%s: %s left the active targets %s after turning unready; the two slow requests in flight got %v; draining now %v",
				tc.profile, leaving, left.Round(100*time.Millisecond), codes, st.Draining)
			if codes[http.StatusOK] != 2 {
				t.Errorf("%s: both requests in flight should finish (200), the leaving Pod's too: %v", tc.profile, codes)
			}
			if tc.draining {
				if len(st.Draining) != 1 || st.Draining[0].Node != leaving || time.Until(st.Draining[0].Deadline) < 250*time.Second {
					t.Errorf("%s: %s should be draining for the 300 s deregistration delay: %+v", tc.profile, leaving, st.Draining)
				}
			} else if len(st.Draining) != 0 || !slices.Contains(st.Eligible, leaving) {
				t.Errorf("%s: %s should stay registered (eligible %v), unhealthy, not draining (%+v)", tc.profile, leaving, st.Eligible, st.Draining)
			}
		}
	})
}
