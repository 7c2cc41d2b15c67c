package suites

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

func TestRegistryIsWellFormed(t *testing.T) {
	covered := map[string]bool{}
	triggered := map[incident.Trigger]bool{}
	names := map[string]bool{}
	var smoke []string
	for i, sc := range Scenarios() {
		if sc.Control {
			// The ground under every column: first, so every later cell
			// is judged against it; each policy x keep-alive, asserting.
			if i != 0 || sc.Name != controlName || len(sc.Seeds) > 0 || len(sc.Triggers) > 0 || sc.Own {
				t.Errorf("control scenario %q at %d: want %q first, citing no incident, triggering nothing, not a user's", sc.Name, i, controlName)
			}
			seen := map[string]bool{}
			for _, c := range sc.Cases {
				if c.Role != zdv1.RoleAssertion || c.Hardening != fixtures.Hardened {
					t.Errorf("control case %s: want a hardened assertion", c.Name())
				}
				seen[fmt.Sprint(c.Policy, c.KeepAlive)] = true
			}
			if len(seen) != 4 || len(sc.Cases) != 4 {
				t.Errorf("control cases %v: want each policy with and without keep-alive, once", seen)
			}
			continue
		}
		if sc.Name == "" || sc.Body == nil || sc.Description == "" || len(sc.Cases) == 0 || len(sc.Seeds) == 0 {
			t.Errorf("scenario %q is incomplete", sc.Name)
		}
		for _, s := range sc.Seeds {
			if !incident.Known(s) {
				t.Errorf("%s cites %q, which is not an incident of %s", sc.Name, s, incident.Doc)
			}
			covered[s] = true
		}
		if len(sc.Triggers) == 0 {
			t.Errorf("%s names no trigger: no doctor finding could predict it", sc.Name)
		}
		for _, tr := range sc.Triggers {
			if !slices.Contains(incident.Triggers(), tr) {
				t.Errorf("%s: unknown trigger %q", sc.Name, tr)
			}
			triggered[tr] = true
		}
		for _, c := range sc.Cases {
			n := sc.Name + "/" + c.Name()
			if names[n] {
				t.Errorf("duplicate case %s", n)
			}
			names[n] = true
			if c.Role != zdv1.RoleAssertion && c.Role != zdv1.RoleDocumentation {
				t.Errorf("%s: role %q", n, c.Role)
			}
			if c.Hardening == fixtures.Naive && c.Role == zdv1.RoleAssertion {
				t.Errorf("%s: the naive profile documents a hazard, it must not assert", n)
			}
			if c.Smoke {
				smoke = append(smoke, n)
			}
		}
	}
	for _, tr := range incident.Triggers() {
		if !triggered[tr] {
			t.Errorf("no scenario produces trigger %s: the doctor's rules that need it are never measured", tr)
		}
	}
	for _, s := range incident.All() {
		if !covered[s] {
			t.Errorf("no scenario reproduces incident %s", s)
		}
	}
	want := []string{"rolling-update/cluster/hardened", "source-ip/local/hardened"}
	if len(smoke) != len(want) || smoke[0] != want[0] || smoke[1] != want[1] {
		t.Errorf("smoke subset %v, want %v", smoke, want)
	}
}

func TestCaseNamesAndLabels(t *testing.T) {
	c := Case{Policy: localPolicy, Hardening: fixtures.Hardened, KeepAlive: false, Role: zdv1.RoleAssertion, Smoke: true}
	if c.Name() != "local/hardened/no-keepalive" {
		t.Errorf("name %q", c.Name())
	}
	got := c.Labels()
	want := []string{"policy:local", "profile:hardened", "role:assertion", "keepalive:off", "smoke"}
	if len(got) != len(want) {
		t.Fatalf("labels %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("label %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestSwitchSink(t *testing.T) {
	var s SwitchSink
	if err := s.Event(zdv1.Event{Type: "x"}); err != nil {
		t.Errorf("event with no target: %v", err)
	}
	var got []string
	s.Set(zdv1.EventFunc(func(e zdv1.Event) error { got = append(got, e.Type); return nil }))
	_ = s.Event(zdv1.Event{Type: "a"})
	s.Set(nil)
	_ = s.Event(zdv1.Event{Type: "b"})
	if len(got) != 1 || got[0] != "a" {
		t.Errorf("forwarded %v", got)
	}
}

func TestCollectorStreamsTheReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	c := NewCollector(path, zdv1.RunMeta{ToolVersion: "v1.2.3", Provider: "kind", Start: time.Now()})
	sc := zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "a", Role: zdv1.RoleAssertion},
		Verdict: zdv1.Verdict{Status: zdv1.Pass}}
	if err := c.Add(sc); err != nil {
		t.Fatal(err)
	}
	r, err := zdv1.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scenarios) != 1 {
		t.Errorf("report after one scenario has %d", len(r.Scenarios))
	}
	if s := r.ScenarioSet; s == nil || s.Name != zdv1.ScenarioSetE2E || s.Version != "v1.2.3" {
		t.Errorf("scenario set %+v, want zerodrop-e2e v1.2.3", s)
	}
	// The verdicts file follows each scenario: a flagged line for a cell
	// that fails the run, with the measurements the load spoiled.
	load := zdv1.Reason{Check: zdv1.CheckLoad, Status: zdv1.Error, Message: "1 sent more than 50 ms late (max 58 ms)"}
	failed := zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "b", Role: zdv1.RoleAssertion},
		Results: zdv1.Results{Total: 3000, Dropped: 2}, Verdict: zdv1.Verdict{Status: zdv1.Fail, Reasons: []zdv1.Reason{{Check: "dropped", Status: zdv1.Fail, Message: "2 dropped"}}},
		Remeasured: []zdv1.Remeasure{{Total: 2900, Verdict: zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{load}}}}}
	if err := c.Add(failed); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(path), VerdictsFileName))
	if err != nil {
		t.Fatal(err)
	}
	want := "  a [assertion] PASS: 0 requests, every criterion held\n" +
		"! b [assertion] FAIL: 2 dropped | measured again after measurement 1: ERROR, 2900 requests, 0 dropped; 1 sent more than 50 ms late (max 58 ms)\n"
	if string(got) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", VerdictsFileName, got, want)
	}
	if err := c.Close(time.Now()); err != nil {
		t.Fatal(err)
	}
	bad := NewCollector(filepath.Join(t.TempDir(), "missing", "dir", "report.json"), zdv1.RunMeta{})
	if err := bad.Add(sc); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestAddPoolLaterNeedsAProvider(t *testing.T) {
	s := &Suite{DeferCleanup: func(func(context.Context) error) {}}
	if err := s.AddPoolLater(context.Background(), "pool-c"); err == nil {
		t.Error("no provider accepted")
	}
}

// recordedEventTypes are the event types of the cluster and the LB a run
// file records (harness/observe, the cloud LB's stream, the harness's own
// steps).
var recordedEventTypes = []string{zdv1.EventCordon, zdv1.EventDrainStart, zdv1.EventPodTerminating, zdv1.EventPodDeleted,
	zdv1.EventPodUnready, zdv1.EventEndpointRemoved, zdv1.EventEndpointAdded, zdv1.EventEndpointTerminating,
	zdv1.EventEndpointStoppedServing, zdv1.EventNodeRemoved, zdv1.EventLBBackendAdded, zdv1.EventLBBackendRemoved,
	zdv1.EventLBNodeHealthy, zdv1.EventLBNodeUnhealthy,
	// A departure's steps (suites/departure.go, harness/cluster/lifecycle.go).
	zdv1.EventNodeShutdown, zdv1.EventNodeOff, zdv1.EventNodeLabelled, zdv1.EventNodeTainted, zdv1.EventInterruptionNotice,
	// The BGP router's route to a Service (harness/scenario RouterHooks);
	// kube-vip's lease holder (KubeVIPHooks).
	zdv1.EventRouteChanged, zdv1.EventAnnouncerChanged}

func TestCasesOnAppliesLimitsOnlyToTheirLB(t *testing.T) {
	var np Scenario
	for _, sc := range Scenarios() {
		for _, l := range sc.Limits {
			if l.Reason.Text == "" || (l.LB == "" && l.On == nil && l.Proxy == nil) {
				t.Errorf("%s: limit without LB, kube-proxy or reason: %+v", sc.Name, l)
			}
			// A limit's run checks that its windows are its own: it
			// names the events that open them, and only events a run
			// records.
			if len(l.Reason.Opens) == 0 {
				t.Errorf("%s: limit names no event that opens its windows: %.60s", sc.Name, l.Reason.Text)
			}
			for _, o := range l.Reason.Opens {
				if !slices.Contains(recordedEventTypes, o) {
					t.Errorf("%s: limit opened by %q, which no run records", sc.Name, o)
				}
			}
		}
		if sc.Name == "nodepool-replacement" {
			np = sc
		}
	}
	hardened := func(cs []Case) Case {
		for _, c := range cs {
			if c.Hardening == fixtures.Hardened && c.Policy == localPolicy {
				return c
			}
		}
		t.Fatal("no local/hardened case")
		return Case{}
	}
	if c := hardened(np.CasesOn(Model{Name: "metallb"})); c.Role != zdv1.RoleDocumentation || c.PlatformLimit == "" {
		t.Errorf("on metallb: role %s, limit %q; want documentation with the reason", c.Role, c.PlatformLimit)
	}
	if c := hardened(np.CasesOn(Model{Name: "cloud"})); c.Role != zdv1.RoleAssertion || c.PlatformLimit != "" {
		t.Errorf("on cloud: role %s, limit %q; want an assertion", c.Role, c.PlatformLimit)
	}
	if c := hardened(np.Cases); c.Role != zdv1.RoleAssertion {
		t.Errorf("CasesOn changed the registry: role %s", c.Role)
	}
}

// The cordon limit picks LB models by what their profile does: of the
// columns the suite runs, only gke-legacy drops a cordoned node and its
// flows at once.
func TestCordonLimitFollowsTheProfile(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if cordonDropsFlows(m) {
			got = append(got, m.Name)
		}
	}
	if strings.Join(got, ",") != "gke-legacy" {
		t.Errorf("cordonDropsFlows holds on %v, want [gke-legacy]", got)
	}
}

func TestBusiest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
		served     map[string]int64
		want       string
	}{
		{"most answers wins", []string{"a", "b", "c"}, map[string]int64{"a": 3, "b": 9, "c": 1}, "b"},
		{"first on a tie", []string{"a", "b"}, map[string]int64{"a": 5, "b": 5}, "a"},
		{"first when nobody answered", []string{"a", "b"}, map[string]int64{}, "a"},
		{"traffic to a non-candidate does not count", []string{"a", "b"}, map[string]int64{"x": 100, "b": 1}, "b"},
		{"no candidates", nil, map[string]int64{"x": 1}, ""},
	} {
		if got := busiest(tc.candidates, tc.served); got != tc.want {
			t.Errorf("%s: busiest = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A witness's run carries its scenario's identity as written in the
// scenario's file, its LB model's class and profile, and its minimum of
// results follows the suite's timing.
func TestSpecTakesIdentityFromTheScenario(t *testing.T) {
	ms, err := Settings{LB: "all", LBProfiles: []string{"gke-legacy"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 200, LB: "all", Provider: "kind"}, Timing: DefaultTiming(), Models: ms}
	for _, sc := range Scenarios() {
		for _, c := range sc.Cells(ms) {
			sp := s.spec(sc, c)
			if sp.Name != sc.Name+"/"+c.Model.Name+"/"+c.Case.Name() || sp.Description != sc.Description || !slices.Equal(sp.Seeds, sc.Seeds) ||
				sp.Labels["scenario"] != sc.Name || sp.Labels["lb"] != c.Model.Name {
				t.Errorf("%s/%s: spec identity %q %q %v %v", sc.Name, c.Name(), sp.Name, sp.Description, sp.Seeds, sp.Labels)
			}
			// A WebSocket cell opens a tenth of the rate's sessions, a
			// front's cell sends a fifth of its requests.
			want := int64(1000)
			switch {
			case c.Protocol == zdv1.ProtocolWebSocket:
				want = 100
			case c.Front != "":
				want = 200
			}
			if sp.Criteria.MinRequests != want {
				t.Errorf("%s: minRequests %d, want rate 200 (WebSocket: 20, fronts: 40) x baseline 5s = %d", sp.Name, sp.Criteria.MinRequests, want)
			}
			if sp.Criteria.MaxDropped == nil || *sp.Criteria.MaxDropped != 0 {
				t.Errorf("%s: every cell carries the zero-drop criterion, got %v", sp.Name, sp.Criteria.MaxDropped)
			}
			if (c.Role == zdv1.RoleDocumentation) != (sp.Expected != nil) || (sp.Expected != nil && sp.Expected.Why == "") {
				t.Errorf("%s: role %s with expectation %+v", sp.Name, c.Role, sp.Expected)
			}
			cfg, err := fixtures.NewConfig(sp.Workload...)
			if err != nil {
				t.Fatal(err)
			}
			wantClass := ""
			if c.Model.Cloud {
				wantClass = contract.CloudLBClass
			}
			if cfg.LoadBalancerClass != wantClass || cfg.LB.Name != c.Model.Name ||
				(c.Model.Cloud && cfg.ServiceAnnotations[contract.LBProfileAnnotation] != c.Model.Name) {
				t.Errorf("%s: class %q profile %q annotations %v", sp.Name, cfg.LoadBalancerClass, cfg.LB.Name, cfg.ServiceAnnotations)
			}
			if len(cfg.Namespace) > 63 || strings.HasSuffix(cfg.Namespace, "-") {
				t.Errorf("%s: namespace %q", sp.Name, cfg.Namespace)
			}
		}
	}
}

// Where a hazard is expected is data next to the scenario: drain-local-pdb's
// blackhole only where the LB drops cordoned nodes, nodepool-backend's starved pods
// everywhere but on a cloud LB that takes every node.
func TestExpectationsFollowTheLBModel(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"drain-pool-with-pdb/gke-legacy/local/naive":           zdv1.OutcomeHazardReproduced,
		"drain-pool-with-pdb/gcp-nlb/local/naive":              zdv1.OutcomeHazardNotReproduced,
		"drain-pool-with-pdb/metallb/local/naive":              zdv1.OutcomeHazardNotReproduced,
		"drain-pool-with-pdb/metallb/local/hardened":           "", // a measured limit: either
		"distribution/azure-basic/local/hardened/no-keepalive": zdv1.OutcomeHazardReproduced,
		"distribution/metallb/local/hardened/no-keepalive":     zdv1.OutcomeHazardReproduced,
		"distribution/gcp-nlb/local/hardened/no-keepalive":     zdv1.OutcomeHazardNotReproduced,
		"unready-keepalive/gclb/cluster/hardened":              zdv1.OutcomeHazardReproduced,
		"rolling-update/aws-alb-ip/cluster/gate-only":          zdv1.OutcomeHazardReproduced,
		"rolling-update/aws-alb-ip/cluster/prestop-only":       zdv1.OutcomeHazardReproduced,
		"drain-node/aws-alb-ip/cluster/gate-only":              zdv1.OutcomeHazardReproduced,
		"drain-node/aws-alb-ip/cluster/prestop-only":           zdv1.OutcomeHazardNotReproduced,
		"scale-down/aws-alb-ip/cluster/prestop-only":           zdv1.OutcomeHazardNotReproduced,
	}
	seen := 0
	for _, sc := range Scenarios() {
		for _, c := range sc.Cells(ms) {
			w, ok := want[sc.Name+"/"+c.Name()]
			if !ok {
				continue
			}
			seen++
			if c.Expected == nil || c.Expected.Outcome != w {
				t.Errorf("%s/%s: expected %+v, want outcome %q", sc.Name, c.Name(), c.Expected, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d cells", seen, len(want))
	}
}

// The gate cases run where a workload may go without the LB's gate, and
// only there (the AWS controller's, injected by namespace label, on its ALB
// and NLB IP targets): on gclb-neg GKE injects it into every Pod (naive is
// already "gate only"), and a node-targeted LB has none.
func TestGateCasesOnlyWhereTheGateIsOptional(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 200, LB: "all", Provider: "kind"}, Timing: DefaultTiming(), Models: ms}
	got := map[string][]string{}
	for _, sc := range Scenarios() {
		for _, c := range sc.Cells(ms) {
			if c.Hardening != fixtures.GateOnly && c.Hardening != fixtures.PreStopOnly {
				continue
			}
			got[c.Model.Name] = append(got[c.Model.Name], sc.Name+"/"+c.Case.Name())
			// Each builds, with its own Pods.
			if _, err := fixtures.NewConfig(s.spec(sc, c).Workload...); err != nil {
				t.Errorf("%s: %v", sc.CellName(c), err)
			}
		}
	}
	want := []string{"rolling-update/cluster/gate-only", "rolling-update/cluster/prestop-only", "drain-node/cluster/gate-only",
		"drain-node/cluster/prestop-only", "scale-down/cluster/gate-only", "scale-down/cluster/prestop-only"}
	if len(got) != 2 || !slices.Equal(got["aws-alb-ip"], want) || !slices.Equal(got["aws-nlb-ip"], want) {
		t.Errorf("gate cases = %v, want %v on aws-alb-ip and aws-nlb-ip only", got, want)
	}
}

// The drain goes where it meets the most witnesses, then where MetalLB
// announces the Local witnesses that document the hazard, then any
// announced witness, then the most traffic: the busiest node alone may hold
// one witness's single replica only.
func TestDrainTarget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights map[string]placeWeight
		want    string
	}{
		{"none", map[string]placeWeight{}, ""},
		{"most witnesses, then traffic", map[string]placeWeight{
			"w1": {covers: 1, served: 5000}, "w2": {covers: 2, served: 10}, "w3": {covers: 2, served: 300}}, "w3"},
		{"the announcer of a hazard beats traffic", map[string]placeWeight{
			"w1": {covers: 3, served: 5000}, "w2": {covers: 3, hazards: 1, anchored: 1, served: 10}, "w3": {covers: 3, anchored: 2, served: 300}}, "w2"},
		{"an announcer beats traffic", map[string]placeWeight{
			"w1": {covers: 3, served: 5000}, "w2": {covers: 3, served: 10}, "w3": {covers: 3, anchored: 1, served: 300}}, "w3"},
		{"coverage first", map[string]placeWeight{
			"w1": {covers: 3}, "w2": {covers: 2, hazards: 2, anchored: 2}}, "w1"},
		{"ties go to the first by name", map[string]placeWeight{"w2": {covers: 1}, "w1": {covers: 1}}, "w1"},
	} {
		if got := drainTarget(tc.weights); got != tc.want {
			t.Errorf("%s: drainTarget = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// ZERODROP_KEEPALIVE=off turns every keep-alive case into a cell of its
// own (its name and labels say no-keepalive) with the role and expectation
// that case has, leaving the registry's scenario as it was; the scenario
// that compares keep-alive with a connection per request keeps its pair.
func TestConnectionPerRequest(t *testing.T) {
	ms, err := Settings{LB: "all", LBProfiles: []string{"gke-legacy", "gcp-nlb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range Scenarios() {
		// HTTP/2 cells have no connection per request: they leave.
		before := slices.DeleteFunc(sc.Cells(ms), func(c Cell) bool { return c.longLived() })
		after := sc.ConnectionPerRequest().Cells(ms)
		if len(after) != len(before) {
			t.Fatalf("%s: %d cells became %d", sc.Name, len(before), len(after))
		}
		names := map[string]bool{}
		for i := range after {
			b, a := before[i], after[i]
			if names[a.Name()] {
				t.Errorf("%s: two cells named %s", sc.Name, a.Name())
			}
			names[a.Name()] = true
			switch {
			case (sc.Name == "unready-keepalive" || sc.Control) && a.KeepAlive != b.KeepAlive:
				t.Errorf("%s: %s changed, but the scenario compares keep-alive with a connection per request", sc.Name, b.Name())
			case sc.Name != "unready-keepalive" && !sc.Control && (a.KeepAlive || !strings.HasSuffix(a.Name(), "/no-keepalive") || !slices.Contains(a.Labels(), "keepalive:off")):
				t.Errorf("%s: %s is %s with labels %v, want a connection per request", sc.Name, b.Name(), a.Name(), a.Labels())
			case a.Role != b.Role || a.PlatformLimit != b.PlatformLimit || (a.Expected == nil) != (b.Expected == nil) || (a.Expected != nil && *a.Expected != *b.Expected):
				t.Errorf("%s: %s changed its role, limit or expectation", sc.Name, b.Name())
			}
		}
		if again := sc.Cells(ms); len(again) > 0 && again[0].KeepAlive != before[0].KeepAlive {
			t.Errorf("%s: ConnectionPerRequest changed the registry's scenario", sc.Name)
		}
		if slices.ContainsFunc(after, func(c Cell) bool { return c.longLived() }) {
			t.Errorf("%s: an HTTP/2 cell was kept with a connection per request", sc.Name)
		}
	}
}

// A kube-proxy without KEP-1669 turns the hardened Local assertions with a
// connection per request of the scenarios that showed it into documentation
// expecting the hazard; with it (or kept-alive connections, or Cluster) they
// still assert. The release decides where it locks the behaviour; the gate
// where it does not.
func TestOnClusterTerminatingEndpoints(t *testing.T) {
	ms, err := Settings{LB: "all", LBProfiles: []string{"gcp-nlb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	off := cluster.FeatureGates{"ProxyTerminatingEndpoints": false}
	proxyReasons := []string{noTerminatingEndpoints.Text, noTerminatingEndpointsRollout.Text}
	for _, tc := range []struct {
		name string
		kp   KubeProxy
		want bool // the limit applies
	}{
		{"unknown release", KubeProxy{}, false},
		{"1.37", KubeProxy{Version: kubeversion.Version{Major: 1, Minor: 37}}, false},
		{"1.27", KubeProxy{Version: kubeversion.Version{Major: 1, Minor: 27}}, false},
		{"1.27 gate off", KubeProxy{Version: kubeversion.Version{Major: 1, Minor: 27}, Gates: off}, true},
		{"1.25", KubeProxy{Version: kubeversion.Version{Major: 1, Minor: 25}}, true},
		{"1.28 gate off (locked on)", KubeProxy{Version: kubeversion.Version{Major: 1, Minor: 28}, Gates: off}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limited, limitedDoc := 0, 0
			for _, sc := range Scenarios() {
				for _, keepAlive := range []bool{true, false} {
					s := sc
					if !keepAlive {
						s = sc.ConnectionPerRequest()
					}
					cells := s.Cells(ms)
					for i, c := range s.OnCluster(cells, tc.kp) {
						was := cells[i]
						if was.Role == zdv1.RoleDocumentation && was.PlatformLimit != "" && c.PlatformLimit != was.PlatformLimit {
							// Another limit's cell: this reason is added to it.
							if !tc.want || c.KeepAlive || c.Policy != localPolicy || c.PlatformLimit != was.PlatformLimit+" And: "+noTerminatingEndpoints.Text ||
								c.Expected == nil || c.Expected.Why != c.PlatformLimit {
								t.Errorf("%s %s: limit %q expected %+v, want %q and this one", sc.Name, c.Name(), c.PlatformLimit, c.Expected, was.PlatformLimit)
							}
							limitedDoc++
							continue
						}
						changed := c.Role != was.Role
						if changed && (c.Role != zdv1.RoleDocumentation || !slices.Contains(proxyReasons, c.PlatformLimit) || c.Expected == nil || c.Expected.Why != c.PlatformLimit) {
							t.Errorf("%s %s: role %s limit %q expected %+v", sc.Name, c.Name(), c.Role, c.PlatformLimit, c.Expected)
						}
						if changed && (c.KeepAlive || c.Policy != localPolicy || was.Role != zdv1.RoleAssertion) {
							t.Errorf("%s %s: a limit for new connections with Local changed it", sc.Name, c.Name())
						}
						if changed {
							limited++
						}
					}
				}
			}
			// rolling-update on both models, scale-down, drain-node and
			// drain-pool-with-pdb on gcp-nlb (MetalLB's drain and
			// scale-down cells already document).
			if want := map[bool]int{true: 5, false: 0}[tc.want]; (limited > 0) != tc.want || (tc.want && limited < want) {
				t.Errorf("%d cells limited, want %v", limited, tc.want)
			}
			// MetalLB's drain-node, drain-pool-with-pdb and scale-down Local
			// hardened cells already document its limit: they get this
			// reason too.
			if (limitedDoc > 0) != tc.want || (tc.want && limitedDoc < 3) {
				t.Errorf("%d documentation cells got the reason too, want %v", limitedDoc, tc.want)
			}
		})
	}
}

// A control's outcome reaches the later cells of its column, and only
// them: the LB model, the policy and the keep-alive must all match, the
// profile need not (a naive cell stands on the same ground).
func TestControlsReachTheirColumn(t *testing.T) {
	ms, err := Settings{LB: "all", LBProfiles: []string{"gcp-nlb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	ctl := control()
	cells := ctl.Cells(ms)
	res := make([]scenario.Result, len(cells))
	for i, c := range cells {
		sc := zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: ctl.CellName(c)}, RunFile: "r" + fmt.Sprint(i) + "/run.jsonl",
			Results: zdv1.Results{Total: 12000}, Verdict: zdv1.Verdict{Status: zdv1.Pass}}
		if c.Model.Name == "gcp-nlb" && c.Policy == clusterPolicy && !c.KeepAlive {
			sc.Results.Dropped, sc.Verdict.Status = 25, zdv1.Error
		}
		res[i] = scenario.Result{Scenario: sc}
	}
	// The metallb/local/no-keepalive control broke before it measured.
	for i, c := range cells {
		if c.Model.Name == contract.LBMetalLB && c.Policy == localPolicy && !c.KeepAlive {
			res[i] = scenario.Result{Err: fmt.Errorf("deployment did not roll out")}
		}
	}
	s := &Suite{}
	if _, ok := s.controlEvent(cells[0]); ok {
		t.Fatal("a control event before any control ran")
	}
	s.recordControls(cells, res)
	f := zdv1.ControlFields
	for _, sc := range []Scenario{drainNode().ConnectionPerRequest(), drainNode()} {
		for _, c := range sc.Cells(ms) {
			e, ok := s.controlEvent(c)
			if !ok {
				t.Fatalf("%s: no control event", sc.CellName(c))
			}
			want := "control/" + c.Model.Name + "/" + strings.ToLower(string(c.Policy)) + "/hardened"
			if !c.KeepAlive {
				want += "/no-keepalive"
			}
			if e.Fields[f.Name] != want || e.Type != zdv1.EventControl || e.Source != zdv1.SourceHarness {
				t.Errorf("%s: control event %+v, want control %s", sc.CellName(c), e, want)
			}
			moved := e.Fields[f.Dropped] == "25" && e.Fields[f.Status] == "ERROR"
			broke := e.Fields[f.Status] == "ERROR" && e.Fields[f.Total] == "0"
			wantMoved := c.Model.Name == "gcp-nlb" && c.Policy == clusterPolicy && !c.KeepAlive
			wantBroke := c.Model.Name == contract.LBMetalLB && c.Policy == localPolicy && !c.KeepAlive
			if moved != wantMoved || broke != wantBroke {
				t.Errorf("%s: control fields %v: moved %t (want %t), broke %t (want %t)", sc.CellName(c), e.Fields, moved, wantMoved, broke, wantBroke)
			}
		}
	}
}

// Cells share Pods per recipe: the specs that land in one namespace build
// the same Pods and a Service of their own each, and the whole matrix of
// a scenario needs far fewer Deployments than cells; a scenario whose
// cells need their own Pods says why and gets them.
func TestCellsSharePodsPerRecipe(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 200, LB: "all", Provider: "kind"}, Timing: DefaultTiming(), Models: ms}
	for _, sc := range Scenarios() {
		cells := sc.Cells(ms)
		byNS := map[string][]fixtures.Config{}
		for _, c := range cells {
			sp := s.spec(sc, c)
			cfg, err := fixtures.NewConfig(sp.Workload...)
			if err != nil {
				t.Fatal(err)
			}
			if sp.SharePods != (sc.OwnPods == "") {
				t.Errorf("%s: SharePods %v with OwnPods %q", sp.Name, sp.SharePods, sc.OwnPods)
			}
			for _, o := range byNS[cfg.Namespace] {
				if !fixtures.SamePods(o, cfg) {
					t.Errorf("%s: shares namespace %s with a workload of other Pods", sp.Name, cfg.Namespace)
				}
				if o.Service() == cfg.Service() {
					t.Errorf("%s: Service %s twice in namespace %s", sp.Name, cfg.Service(), cfg.Namespace)
				}
			}
			byNS[cfg.Namespace] = append(byNS[cfg.Namespace], cfg)
		}
		switch {
		case sc.OwnPods != "" && len(byNS) != len(cells):
			t.Errorf("%s: %d namespaces for %d cells with Pods of their own", sc.Name, len(byNS), len(cells))
		case sc.OwnPods == "" && len(cells) > 4 && len(byNS)*3 > len(cells)*2:
			t.Errorf("%s: %d Pod recipes for %d cells: sharing saves too little", sc.Name, len(byNS), len(cells))
		}
		t.Logf("%s: %d cells, %d Pod recipes", sc.Name, len(cells), len(byNS))
	}
}

// Where two limits hold on one model, the cell documents both: their texts
// joined and the events of both opening its windows, which its run's
// criteria carry (azure-basic resets an unhealthy node's flows and serves
// from one pool; drain-pool-with-pdb meets both).
func TestLimitsMergeAndReachTheCriteria(t *testing.T) {
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"azure-basic", "gcp-nlb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 50}, Timing: DefaultTiming()}
	for _, c := range drainPoolWithPDB().Cells(ms) {
		if c.Hardening != fixtures.Hardened || c.Policy != localPolicy {
			continue
		}
		crit := s.spec(drainPoolWithPDB(), c).Criteria
		switch c.Model.Name {
		case "azure-basic":
			if c.Role != zdv1.RoleDocumentation || !strings.Contains(c.PlatformLimit, unhealthyResetsFlowsReason.Text) ||
				!strings.Contains(c.PlatformLimit, " And: "+singlePoolReplaced.Text) {
				t.Errorf("azure-basic: role %s, limit %.80q: want both limits", c.Role, c.PlatformLimit)
			}
			want := []string{zdv1.EventLBNodeUnhealthy, zdv1.EventLBBackendRemoved}
			if !slices.Equal(c.LimitOpens, want) || !slices.Equal(crit.LimitOpens, want) {
				t.Errorf("azure-basic: opens %v, criteria %v, want %v", c.LimitOpens, crit.LimitOpens, want)
			}
		case "gcp-nlb":
			if c.Role != zdv1.RoleAssertion || c.LimitOpens != nil || crit.LimitOpens != nil {
				t.Errorf("gcp-nlb: role %s, opens %v, criteria %v: an assertion documents no limit", c.Role, c.LimitOpens, crit.LimitOpens)
			}
		}
	}
}

// Behind an HTTP proxy (gclb) the Pod's peer is the proxy whatever the
// policy, and the client's address must arrive in X-Forwarded-For; on an
// L4 LB, Local keeps the client's address and Cluster hides it, unless its
// targets are Pods (aws-nlb-ip): then neither keeps it. Every cell asserts.
func TestSourceIPBehindAProxy(t *testing.T) {
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"gclb", "gcp-nlb", "aws-nlb-ip"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	const host = "172.19.0.1"
	want := map[string]zdv1.Criteria{
		"gclb/local/hardened":      {ForwardedClientIP: host, ForbiddenClientIP: host},
		"gclb/cluster/hardened":    {ForwardedClientIP: host, ForbiddenClientIP: host},
		"gcp-nlb/local/hardened":   {ExpectedClientIP: host},
		"gcp-nlb/cluster/hardened": {ForbiddenClientIP: host},
		// IP targets: the NLB translates the client away with either policy.
		"aws-nlb-ip/local/hardened":   {ForbiddenClientIP: host},
		"aws-nlb-ip/cluster/hardened": {ForbiddenClientIP: host},
	}
	cells := sourceIP().Cells(ms)
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(cells), len(want))
	}
	for _, c := range cells {
		var got zdv1.Criteria
		sourceIPCriteria(c, host)(&got)
		if c.Role != zdv1.RoleAssertion || c.PlatformLimit != "" || !reflect.DeepEqual(got, want[c.Name()]) {
			t.Errorf("%s: role %s, limit %.60q, criteria %+v; want an assertion with %+v", c.Name(), c.Role, c.PlatformLimit, got, want[c.Name()])
		}
	}
}

// gclb's default check goes through the NodePort and sees a node's last
// endpoint only when it stops serving; its hardened Local Pods name a
// BackendConfig that points the check at kube-proxy on the
// healthCheckNodePort, so in every node-level disruption they assert zero
// drops as on gke-l4, whose timing they take; its naive ones keep the
// default check.
func TestGCLBHardenedLocalAsksKubeProxy(t *testing.T) {
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"gclb", "gke-l4"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	want := profiles.KubeProxyCheck()
	s := &Suite{Settings: Settings{Rate: 50}, Timing: DefaultTiming()}
	for _, sc := range []Scenario{drainNode(), scaleDown(), drainPoolWithPDB(), nodepoolReplacement(), rollingUpdate()} {
		for _, c := range sc.Cells(ms) {
			if c.Model.Name != "gclb" || c.Policy != localPolicy {
				continue
			}
			got := lbOf(c).HealthCheckFor(c.Policy)
			switch c.Hardening {
			case fixtures.Hardened:
				if c.Role != zdv1.RoleAssertion || c.PlatformLimit != "" {
					t.Errorf("%s: role %s, limit %.60q; want an assertion", sc.CellName(c), c.Role, c.PlatformLimit)
				}
				if got != want {
					t.Errorf("%s: the LB checks %+v, want kube-proxy's check %+v", sc.CellName(c), got, want)
				}
				cfg, err := fixtures.NewConfig(s.spec(sc, c).Workload...)
				if err != nil || cfg.LBCheck == nil || *cfg.LBCheck != want {
					t.Errorf("%s: the workload asks for %v (%v), want %+v", sc.CellName(c), cfg.LBCheck, err, want)
				}
			case fixtures.Naive:
				if got != c.Model.Profile.HealthCheck {
					t.Errorf("%s: naive cell checked %+v, want the profile's default", sc.CellName(c), got)
				}
			}
		}
	}
}

// Each cell streams at its role's rate and asks for the requests that rate
// gives: assertions (limits documented by a hardened cell included, which
// are documentation) at the assertion rate, documentation at the full one;
// gRPC cells at the assertion rate whatever their role, WebSocket cells at
// a tenth of the full one.
func TestCellsStreamAtTheirRolesRate(t *testing.T) {
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"azure-basic", "gcp-nlb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 50, AssertionRate: 20}, Timing: DefaultTiming()}
	seen := map[zdv1.Role]bool{}
	for _, sc := range []Scenario{rollingUpdate(), drainPoolWithPDB()} {
		for _, c := range sc.Cells(ms) {
			sp := s.spec(sc, c)
			want := map[zdv1.Role]int{zdv1.RoleAssertion: 20, zdv1.RoleDocumentation: 50}[c.Role]
			switch {
			case zdv1.ProtocolIsGRPC(c.Protocol):
				want = 20
			case c.Protocol == zdv1.ProtocolWebSocket:
				want = 5
			case c.Front != "":
				want = 10
			}
			if sp.Rate != want || sp.Criteria.MinRequests != int64(float64(want)*s.Timing.Baseline.Seconds()) {
				t.Errorf("%s %s: rate %d/s, min requests %d; want %d/s", sc.Name, c.Name(), sp.Rate, sp.Criteria.MinRequests, want)
			}
			seen[c.Role] = true
		}
	}
	if !seen[zdv1.RoleAssertion] || !seen[zdv1.RoleDocumentation] {
		t.Errorf("roles seen %v: want both", seen)
	}
}

// The gRPC pair runs on every column that carries HTTP/2 to the Pods and
// on none of the L7 ones, on the scenarios that end Pods one by one; its
// load mixes unary calls and streams, and its naive cell documents (both
// do on drain-node, where the bench stalls streams).
func TestGRPCCellsWhereHTTP2ReachesThePods(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 200, LB: "all", Provider: "kind"}, Timing: DefaultTiming(), Models: ms}
	perScenario := map[string]int{}
	for _, sc := range Scenarios() {
		for _, c := range sc.Cells(ms) {
			if c.Protocol != zdv1.ProtocolGRPC {
				continue
			}
			perScenario[sc.Name]++
			sp := s.spec(sc, c)
			switch {
			case c.Model.Profile.Mode == profiles.ModeL7:
				t.Errorf("%s: a gRPC cell behind an L7 column, whose proxy reaches the Pods over HTTP/1.1", sc.CellName(c))
			case sp.Protocol != zdv1.ProtocolGRPC || sp.Shape != load.MatrixShape(zdv1.ProtocolGRPC) || sp.Shape.StreamEvery == 0 || !slices.Contains(c.Labels(), "protocol:grpc") ||
				!strings.HasSuffix(c.Name(), "/grpc"):
				t.Errorf("%s: spec protocol %q, shape %+v, labels %v", sc.CellName(c), sp.Protocol, sp.Shape, c.Labels())
			case (c.Hardening == fixtures.Naive || c.PlatformLimit != "" || sc.Name == "drain-node") != (c.Role == zdv1.RoleDocumentation):
				// drain-node's document: streamsStallOnDrain.
				t.Errorf("%s: role %s", sc.CellName(c), c.Role)
			case sc.Name == "drain-node" && (sp.Expected == nil || sp.Expected.Why != streamsStallOnDrain || sp.Expected.Outcome != ""):
				t.Errorf("%s: expectation %+v, want the race of streamsStallOnDrain", sc.CellName(c), sp.Expected)
			}
		}
	}
	l4 := 0
	for _, m := range ms {
		if m.Profile.Mode != profiles.ModeL7 {
			l4++
		}
	}
	want := map[string]int{"rolling-update": 2 * l4, "drain-node": 2 * l4, "scale-down": 2 * l4}
	if !maps.Equal(perScenario, want) {
		t.Errorf("gRPC cells per scenario %v, want %v", perScenario, want)
	}
}

// TestFrontCells: Traefik and HAProxy stand as the Pods of rolling-update's
// front rows on every column, naive documenting and hardened asserting,
// each cell's workload a front whose Service selects the proxy, at a fifth
// of the full rate whatever its role.
func TestFrontCells(t *testing.T) {
	ms, err := Settings{LB: "all"}.Models()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{Settings: Settings{Rate: 50, AssertionRate: 25, LB: "all", Provider: "kind"}, Timing: DefaultTiming(), Models: ms}
	perFront := map[fixtures.Front]int{}
	for _, sc := range Scenarios() {
		for _, c := range sc.Cells(ms) {
			if c.Front == "" {
				continue
			}
			perFront[c.Front]++
			sp := s.spec(sc, c)
			cfg, err := fixtures.NewConfig(sp.Workload...)
			switch {
			case sc.Name != "rolling-update":
				t.Errorf("%s: a front cell outside rolling-update", sc.CellName(c))
			case err != nil || cfg.Front != c.Front:
				t.Errorf("%s: workload front %q (%v)", sc.CellName(c), cfg.Front, err)
			case !slices.Contains(c.Labels(), "front:"+string(c.Front)) || !strings.HasSuffix(c.Name(), "/hardened/"+string(c.Front)) && !strings.HasSuffix(c.Name(), "/naive/"+string(c.Front)) ||
				sp.Labels["front"] != string(c.Front):
				t.Errorf("%s: labels %v, report labels %v", sc.CellName(c), c.Labels(), sp.Labels)
			case (c.Hardening == fixtures.Naive) != (c.Role == zdv1.RoleDocumentation) || c.Policy != clusterPolicy:
				t.Errorf("%s: role %s", sc.CellName(c), c.Role)
			case sp.Rate != 10:
				t.Errorf("%s: rate %d, want a fifth of the full rate", sc.CellName(c), sp.Rate)
			case c.Role == zdv1.RoleDocumentation && (sp.Expected == nil || sp.Expected.Outcome != "" || sp.Expected.Why != naiveFront[c.Front]):
				t.Errorf("%s: expectation %+v, want the naive front's race", sc.CellName(c), sp.Expected)
			case !strings.HasSuffix(serviceName(c), "-"+string(c.Front)):
				t.Errorf("%s: Service %s shares its name with the echo cells' (kube-vip serialises them)", sc.CellName(c), serviceName(c))
			}
		}
	}
	want := map[fixtures.Front]int{fixtures.FrontTraefik: 2 * len(ms), fixtures.FrontHAProxy: 2 * len(ms)}
	if !maps.Equal(perFront, want) {
		t.Errorf("front cells %v, want %v", perFront, want)
	}
}
