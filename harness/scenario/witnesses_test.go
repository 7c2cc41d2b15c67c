package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
)

// Three witnesses of one disruption: one never begins (its LB never
// settles), one fails in its own step, one finishes. A shared step reaches
// the run file of every witness still running, and only those.
func TestWitnessesShareOneDisruption(t *testing.T) {
	port := okServerPort(t)

	cs := fakeCluster("zd-a", "zd-b", "zd-c")
	settled := LBHooks{WaitSettled: func(context.Context, string, string, time.Duration) (string, error) { return "w1", nil }}
	spec := func(name, ns string, lb LBHooks) Spec {
		return Spec{ScenarioSpec: zdv1.ScenarioSpec{Name: name, Role: zdv1.RoleAssertion},
			Workload: []fixtures.Option{fixtures.WithNamespace(ns), fixtures.WithReplicas(1), fixtures.WithServicePort(int32(port))}, LB: lb}
	}
	never := LBHooks{WaitSettled: func(context.Context, string, string, time.Duration) (string, error) {
		return "", errors.New("node w1 never turned healthy")
	}}
	dir := t.TempDir()
	env := &Env{Clientset: cs, OutDir: dir, ReadyTimeout: 5 * time.Second, Rate: 50}
	ctx := context.Background()
	ws := BeginWitnesses(ctx, env, []Spec{spec("a", "zd-a", never), spec("b", "zd-b", settled), spec("c", "zd-c", settled)}, 2)
	defer ws.Cleanup(ctx)
	if got := ws.Live(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("live witnesses %v, want [1 2]", got)
	}
	ws.Each(ctx, func(_ context.Context, i int, r *Run) error {
		if i == 1 {
			return errors.New("rollout of b timed out")
		}
		r.Kube.Note("deployment/echo", "own step of c")
		return nil
	})
	ws.Kube().Note("node/w1", "shared drain of w1")
	res := ws.Finish(ctx, func(ctx context.Context, _ int, r *Run) error { return r.Settle(ctx, 300*time.Millisecond) })
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "never turned healthy") {
		t.Errorf("witness a: %v, want the LB's reason", res[0].Err)
	}
	if res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "rollout of b") {
		t.Errorf("witness b: %v, want its own step's error", res[1].Err)
	}
	if res[2].Err != nil || res[2].Scenario.Name != "c" || res[2].Scenario.Results.Total == 0 {
		t.Errorf("witness c: %+v, %v; want a finished run with results", res[2].Scenario.Results, res[2].Err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name, "run.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if c := read("c"); !strings.Contains(c, "shared drain of w1") || !strings.Contains(c, "own step of c") {
		t.Errorf("run file of c lacks the shared or its own step")
	}
	if b := read("b"); strings.Contains(b, "shared drain of w1") || !strings.Contains(b, "rollout of b timed out") {
		t.Errorf("run file of b: want its error and not the step after it was set aside")
	}
}

// okServerPort starts a server that answers 200 to everything, for the
// test's whole life, and returns its port: the "Service" the loads hit.
func okServerPort(t *testing.T) int {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// AwaitLB waits out the LB's whole lag only when the LB never says it is
// done: a quiet LB ends the wait after two quiet checks in a row, one that
// stays busy (or a terminating pod) keeps the load running to the bound, and
// neither is an error. What happened is in the run file.
func TestAwaitLB(t *testing.T) {
	port := okServerPort(t)

	for _, tc := range []struct {
		name        string
		quietAfter  int // checks before the LB turns quiet; -1 never
		terminating bool
		wantEarly   bool
		wantLog     string
	}{
		{"quiet at once", 0, false, true, "the LB has nothing left to do"},
		{"busy, then quiet", 2, false, true, "the LB has nothing left to do"},
		{"never quiet", -1, false, false, "the LB is still acting: draining w1"},
		{"a pod still terminating", 0, true, false, "is terminating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fakeCluster("zd-q")
			checks := 0
			hooks := LBHooks{
				WaitSettled: func(context.Context, string, string, time.Duration) (string, error) { return "w1", nil },
				Quiet: func(context.Context, string, string) (bool, string, error) {
					checks++
					if tc.quietAfter < 0 || checks <= tc.quietAfter {
						return false, "draining w1", nil
					}
					return true, "active [w1]", nil
				},
			}
			spec := Spec{ScenarioSpec: zdv1.ScenarioSpec{Name: "q", Role: zdv1.RoleAssertion},
				Workload: []fixtures.Option{fixtures.WithNamespace("zd-q"), fixtures.WithReplicas(1), fixtures.WithServicePort(int32(port))}, LB: hooks}
			dir := t.TempDir()
			env := &Env{Clientset: cs, OutDir: dir, ReadyTimeout: 5 * time.Second, Rate: 20}
			ctx := context.Background()
			ws := BeginWitnesses(ctx, env, []Spec{spec}, 1)
			defer ws.Cleanup(ctx)
			if len(ws.Live()) != 1 {
				t.Fatalf("the witness did not begin")
			}
			if tc.terminating {
				r, _ := ws.Run(0)
				now := metav1.Now()
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-old", Namespace: "zd-q",
					Labels: r.Config.SelectorLabels(), DeletionTimestamp: &now, Finalizers: []string{"hold"}}}
				if _, err := cs.CoreV1().Pods("zd-q").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			const lag, margin = 4 * time.Second, 100 * time.Millisecond
			start := time.Now()
			res := ws.Finish(ctx, func(ctx context.Context, _ int, r *Run) error { return r.AwaitLB(ctx, lag, margin) })
			took := time.Since(start)
			if res[0].Err != nil {
				t.Fatalf("AwaitLB: %v", res[0].Err)
			}
			if early := took < lag; early != tc.wantEarly {
				t.Errorf("took %v with a lag of %v: early %t, want %t", took, lag, early, tc.wantEarly)
			}
			b, err := os.ReadFile(filepath.Join(dir, "q", "run.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.wantLog) {
				t.Errorf("run file lacks %q", tc.wantLog)
			}
		})
	}
}

// Witnesses that share Pods (Spec.SharePods) create one Deployment and a
// Service each; one whose workload would build other Pods in the same
// namespace is not begun; a workload-level step runs once for the
// sharers; clean-up removes the Services, then the namespace.
func TestWitnessesSharePods(t *testing.T) {
	port := okServerPort(t)

	const ns = "zd-shared"
	ready := true
	var objs []runtime.Object
	for _, svc := range []string{"a-svc", "b-svc", "c-svc"} {
		objs = append(objs, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: svc + "-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr("w1"),
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
	}
	cs := fakeCluster()
	for _, o := range objs {
		if err := cs.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	spec := func(name, svc string, replicas int32) Spec {
		return Spec{ScenarioSpec: zdv1.ScenarioSpec{Name: name, Role: zdv1.RoleAssertion}, SharePods: true,
			Workload: []fixtures.Option{fixtures.WithNamespace(ns), fixtures.WithServiceName(svc), fixtures.WithReplicas(replicas),
				fixtures.WithServicePort(int32(port))}}
	}
	env := &Env{Clientset: cs, OutDir: t.TempDir(), ReadyTimeout: 5 * time.Second, Rate: 50}
	ctx := context.Background()
	ws := BeginWitnesses(ctx, env, []Spec{spec("a", "a-svc", 1), spec("b", "b-svc", 1), spec("c", "c-svc", 2)}, 3)
	if _, err := ws.Run(2); err == nil || !strings.Contains(err.Error(), "builds other Pods") {
		t.Errorf("witness c (2 replicas in a namespace of 1): %v, want it set aside", err)
	}
	if got := ws.Live(); len(got) != 2 {
		t.Fatalf("live witnesses %v, want a and b", got)
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 1 {
		t.Fatalf("deployments in %s: %d (%v), want the one shared", ns, len(deps.Items), err)
	}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(svcs.Items) != 2 {
		t.Fatalf("services in %s: %d (%v), want one per witness", ns, len(svcs.Items), err)
	}
	var calls atomic.Int32
	var sharers []int
	ws.EachWorkload(ctx, func(_ context.Context, who []int, r *Run) error {
		calls.Add(1)
		sharers = who
		return nil
	})
	if calls.Load() != 1 || len(sharers) != 2 {
		t.Errorf("EachWorkload: %d calls with sharers %v, want one call for both", calls.Load(), sharers)
	}
	ws.EachWorkload(ctx, func(context.Context, []int, *Run) error { return errors.New("restart timed out") })
	if got := ws.Live(); len(got) != 0 {
		t.Errorf("a failed shared step leaves %v live, want every sharer set aside", got)
	}
	ws.Finish(ctx, nil)
	ws.Cleanup(ctx)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s still there after clean-up", ns)
	}
	if svcs, _ := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{}); len(svcs.Items) != 0 {
		t.Errorf("services left after clean-up: %d", len(svcs.Items))
	}
}

// sealTimes is a runfile.Sealer that records when each file was sealed.
type sealTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *sealTimes) KeyID() string { return "test-key" }

func (s *sealTimes) Seal(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[filepath.Base(filepath.Dir(path))] = time.Now()
	return nil
}

// No run file is closed while another witness's load still runs: sealing
// reads the whole file back, and the seals of the first loads to end
// stalled the loads still running for 1-2 s on 2 cores. Witness a settles
// at once, b for 400 ms, c is set aside before Finish: all three are
// sealed after b's load stopped, a's and c's loads stopped long before.
func TestWitnessesCloseOnceEveryLoadStopped(t *testing.T) {
	port := okServerPort(t)

	cs := fakeCluster("zd-a", "zd-b", "zd-c")
	settled := LBHooks{WaitSettled: func(context.Context, string, string, time.Duration) (string, error) { return "w1", nil }}
	spec := func(name, ns string) Spec {
		return Spec{ScenarioSpec: zdv1.ScenarioSpec{Name: name, Role: zdv1.RoleAssertion},
			Workload: []fixtures.Option{fixtures.WithNamespace(ns), fixtures.WithReplicas(1), fixtures.WithServicePort(int32(port))}, LB: settled}
	}
	dir := t.TempDir()
	seals := &sealTimes{at: map[string]time.Time{}}
	env := &Env{Clientset: cs, OutDir: dir, ReadyTimeout: 5 * time.Second, Rate: 50, Sealer: seals}
	ctx := context.Background()
	ws := BeginWitnesses(ctx, env, []Spec{spec("a", "zd-a"), spec("b", "zd-b"), spec("c", "zd-c")}, 3)
	defer ws.Cleanup(ctx)
	if got := ws.Live(); len(got) != 3 {
		t.Fatalf("live witnesses %v, want all three", got)
	}
	ws.Fail(2, errors.New("c's rollout timed out"))
	if _, ok := seals.at["c"]; ok {
		t.Fatal("c's run file was sealed when c was set aside, with a and b still measuring")
	}
	res := ws.Finish(ctx, func(ctx context.Context, i int, r *Run) error {
		if i == 1 {
			return r.Settle(ctx, 400*time.Millisecond)
		}
		return nil
	})
	if res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("a: %v, b: %v; want both finished", res[0].Err, res[1].Err)
	}
	if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "rollout timed out") {
		t.Errorf("c: %v, want its own error", res[2].Err)
	}
	stops := map[string]time.Time{}
	for _, name := range []string{"a", "b", "c"} {
		b, err := os.ReadFile(filepath.Join(dir, name, "run.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var e struct {
				Kind string    `json:"kind"`
				Type string    `json:"type"`
				Time time.Time `json:"time"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Kind == zdv1.KindEvent && e.Type == zdv1.EventLoadStop {
				stops[name] = e.Time
			}
		}
	}
	if stops["a"].IsZero() || stops["b"].IsZero() || !stops["a"].Before(stops["b"].Add(-300*time.Millisecond)) {
		t.Fatalf("load stops %v: want a's at once and b's 400 ms later", stops)
	}
	for _, name := range []string{"a", "b", "c"} {
		at, ok := seals.at[name]
		if !ok {
			t.Errorf("%s's run file never sealed", name)
		} else if at.Before(stops["b"]) {
			t.Errorf("%s's run file sealed at %s, before b's load stopped at %s", name, at.Format("15:04:05.000"), stops["b"].Format("15:04:05.000"))
		}
	}
}
