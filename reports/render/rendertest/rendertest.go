// Package rendertest writes realistic zerodrop run directories for tests:
// synthetic run files through runfile.Writer and a report.json whose figures
// agree with them, so renderers can be tested without a cluster and without
// committed fixtures.
package rendertest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
	analyze "zerodrop.dev/zerodrop/harness/verdict"
)

// Outage is a stretch of failed requests in a synthetic run.
type Outage struct {
	// From and For place it relative to the first request.
	From, For time.Duration
	// Kind is an error class (refused, reset, timeout) or an HTTP status
	// ("503").
	Kind string
	// Every fails one request in Every (1 or 0: all of them).
	Every int
}

// Late is a stretch in which the load generator sent behind its schedule.
type Late struct {
	From, For, By time.Duration
}

// Step is an event at an offset from the first request.
type Step struct {
	At      time.Duration
	Type    string
	Object  string
	Message string
}

// Case describes one synthetic scenario.
type Case struct {
	Scenario, Policy, Profile string
	Role                      zdv1.Role
	KeepAlive                 bool
	Rate                      int // requests per second
	Duration                  time.Duration
	Pods                      []string // served round robin
	// Rollout replaces the pods with NewPods at RolloutAt.
	NewPods   []string
	RolloutAt time.Duration
	Outages   []Outage
	// Late sends the requests due in [From, From+For) By late (a stalled
	// load generator).
	Late  *Late
	Steps []Step
	// ExpectedClientIP is checked and seen on every answer.
	ExpectedClientIP string
	// IdlePods are expected pods that get nothing.
	IdlePods []string
	// NoRunFile leaves the run file out (the report still names it).
	NoRunFile bool
	// Secret, when set, is put into an event message, a config value and the
	// load host, for redaction tests.
	Secret string
}

// Stalled is c with its load generator 80 ms behind its schedule for
// 300 ms from 15 s on, past the 50 ms bound: a measurement the load alone
// spoils (zdv1.Scenario.LoadSpoiled) when nothing else fails.
func (c Case) Stalled() Case {
	c.Late = &Late{From: 15 * time.Second, For: 300 * time.Millisecond, By: 80 * time.Millisecond}
	return c
}

// Name is the suite's scenario name: "rolling-update/local/hardened".
func (c Case) Name() string {
	n := c.Scenario + "/" + strings.ToLower(c.Policy) + "/" + c.Profile
	if !c.KeepAlive {
		n += "/no-keepalive"
	}
	return n
}

// Env is a run's environment.
type Env struct {
	Provider, Kubernetes, LB string
	Start                    time.Time
}

// Standard returns a mix of cases a suite run produces: assertion passes, an
// assertion failure with two failure windows, a documentation scenario that
// drops (a naive profile), a pod that gets nothing, and a source-IP check.
func Standard() []Case {
	return []Case{
		{Scenario: "rolling-update", Policy: "Local", Profile: "hardened", Role: zdv1.RoleAssertion, KeepAlive: true,
			Rate: 50, Duration: 40 * time.Second, Pods: []string{"echo-7d9f-a1", "echo-7d9f-b2", "echo-7d9f-c3"},
			NewPods: []string{"echo-5c4b-d4", "echo-5c4b-e5", "echo-5c4b-f6"}, RolloutAt: 12 * time.Second,
			Steps: []Step{
				{12 * time.Second, zdv1.EventRolloutStart, "deployment/zd/echo", "kubectl rollout restart"},
				{13 * time.Second, zdv1.EventPodTerminating, "pod/zd/echo-7d9f-a1", ""},
				{13200 * time.Millisecond, zdv1.EventEndpointTerminating, "pod/zd/echo-7d9f-a1", ""},
				{18 * time.Second, zdv1.EventEndpointRemoved, "pod/zd/echo-7d9f-a1", ""},
				{27 * time.Second, zdv1.EventRolloutEnd, "deployment/zd/echo", ""},
			}},
		{Scenario: "rolling-update", Policy: "Local", Profile: "naive", Role: zdv1.RoleDocumentation, KeepAlive: true,
			Rate: 50, Duration: 40 * time.Second, Pods: []string{"echo-6f8a-a1", "echo-6f8a-b2", "echo-6f8a-c3"},
			NewPods: []string{"echo-9e1d-d4", "echo-9e1d-e5", "echo-9e1d-f6"}, RolloutAt: 12 * time.Second,
			Outages: []Outage{{From: 13 * time.Second, For: 1500 * time.Millisecond, Kind: zdv1.ClassReset, Every: 3},
				{From: 14500 * time.Millisecond, For: 2 * time.Second, Kind: zdv1.ClassRefused, Every: 2}},
			Steps: []Step{
				{12 * time.Second, zdv1.EventRolloutStart, "deployment/zd/echo", ""},
				{12900 * time.Millisecond, zdv1.EventPodTerminating, "pod/zd/echo-6f8a-a1", ""},
				{16600 * time.Millisecond, zdv1.EventEndpointRemoved, "pod/zd/echo-6f8a-a1", ""},
				{25 * time.Second, zdv1.EventRolloutEnd, "deployment/zd/echo", ""},
			}},
		{Scenario: "drain-node", Policy: "Cluster", Profile: "hardened", Role: zdv1.RoleAssertion, KeepAlive: true,
			Rate: 80, Duration: 50 * time.Second, Pods: []string{"echo-aa-1", "echo-aa-2", "echo-aa-3", "echo-aa-4"},
			NewPods: []string{"echo-aa-1", "echo-aa-2", "echo-aa-3", "echo-aa-5"}, RolloutAt: 21 * time.Second,
			Outages: []Outage{{From: 20 * time.Second, For: 900 * time.Millisecond, Kind: zdv1.ClassRefused, Every: 4},
				{From: 31 * time.Second, For: 2 * time.Second, Kind: "503", Every: 5}},
			Steps: []Step{
				{18 * time.Second, zdv1.EventCordon, "node/kind-worker2", ""},
				{19 * time.Second, zdv1.EventDrainStart, "node/kind-worker2", "kubectl drain --ignore-daemonsets"},
				{19500 * time.Millisecond, zdv1.EventPodTerminating, "pod/zd/echo-aa-4", ""},
				{19600 * time.Millisecond, zdv1.EventEndpointTerminating, "pod/zd/echo-aa-4", ""},
				{20500 * time.Millisecond, zdv1.EventLBNodeUnhealthy, "node/kind-worker2", "health check failed 2/2"},
				{24 * time.Second, zdv1.EventEndpointRemoved, "pod/zd/echo-aa-4", ""},
				{30 * time.Second, zdv1.EventLBBackendRemoved, "node/kind-worker2", ""},
				{33 * time.Second, zdv1.EventDrainEnd, "node/kind-worker2", ""},
				{40 * time.Second, zdv1.EventNodeRemoved, "node/kind-worker2", ""},
			}},
		{Scenario: "source-ip", Policy: "Local", Profile: "hardened", Role: zdv1.RoleAssertion, KeepAlive: true,
			Rate: 40, Duration: 20 * time.Second, Pods: []string{"echo-s-1", "echo-s-2"}, ExpectedClientIP: "172.18.0.1"},
		{Scenario: "distribution", Policy: "Local", Profile: "hardened", Role: zdv1.RoleDocumentation, KeepAlive: false,
			Rate: 40, Duration: 20 * time.Second, Pods: []string{"echo-d-1", "echo-d-2", "echo-d-3"}, IdlePods: []string{"echo-d-4"}},
	}
}

// WriteRun writes a suite-style run directory under dir: report.json at the
// top and one sub-directory per case holding run.jsonl. It returns the
// report as written.
func WriteRun(t testing.TB, dir string, env Env, cases []Case) *zdv1.Report {
	t.Helper()
	if env.Start.IsZero() {
		env.Start = time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	}
	rep := zdv1.New(zdv1.RunMeta{ToolVersion: "v0.1.0-test", Provider: env.Provider,
		KubernetesVersion: env.Kubernetes, LBImplementation: env.LB, Start: env.Start, Host: "2 cores, load average 0.8"})
	at := env.Start
	for _, c := range cases {
		sc := writeCase(t, dir, env, c, at)
		rep.Scenarios = append(rep.Scenarios, sc)
		at = at.Add(c.Duration + 5*time.Second)
	}
	rep.Run.End = at
	rep.Summarize()
	if err := rep.WriteFile(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	return rep
}

type result struct {
	at      time.Time
	status  int
	class   string
	pod     string
	latency time.Duration
	lag     time.Duration
}

func writeCase(t testing.TB, dir string, env Env, c Case, start time.Time) zdv1.Scenario {
	t.Helper()
	sub := strings.NewReplacer("/", "-").Replace(c.Name())
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"scenario": c.Scenario, "policy": c.Policy, "profile": c.Profile,
		"keepalive": fmt.Sprint(c.KeepAlive), "lb": env.LB, "provider": env.Provider}
	crit := zdv1.Criteria{MinRequests: int64(c.Rate) * 5}
	if c.Role == zdv1.RoleAssertion {
		crit.MaxDropped = zdv1.Int64(0)
	}
	crit.ExpectedClientIP = c.ExpectedClientIP
	if len(c.IdlePods) > 0 {
		crit.ExpectedPods = append(slices.Clone(c.Pods), c.IdlePods...)
		crit.RequireAllPodsServed = true
	}
	spec := zdv1.ScenarioSpec{Name: c.Name(), Role: c.Role, Description: c.Scenario + " under load",
		Seeds: []string{"002_4ed54c6ca980f06a.txt"}, Labels: labels,
		Config:   map[string]string{"externalTrafficPolicy": c.Policy, "profile": c.Profile, "replicas": fmt.Sprint(len(c.Pods))},
		Criteria: crit}
	load := zdv1.LoadSettings{Targets: []string{"http://172.18.255.200/"}, Rate: c.Rate,
		DurationMs: float64(c.Duration.Milliseconds()), Connections: 8, KeepAlive: c.KeepAlive, TimeoutMs: 2000}
	if c.Secret != "" {
		spec.Config["kubeconfig"] = c.Secret
		spec.Description += " token=" + c.Secret
		load.Host = "svc.example.test?token=" + c.Secret
	}

	// Results in send order.
	n := int(c.Duration.Seconds() * float64(c.Rate))
	interval := time.Second / time.Duration(c.Rate)
	res := make([]result, n)
	for i := range res {
		off := time.Duration(i) * interval
		r := result{at: start.Add(off), status: 200, latency: time.Duration(1500+(i*7919)%4000) * time.Microsecond}
		pods := c.Pods
		if c.RolloutAt > 0 && off >= c.RolloutAt && len(c.NewPods) > 0 {
			pods = c.NewPods
		}
		r.pod = pods[i%len(pods)]
		for _, o := range c.Outages {
			every := max(o.Every, 1)
			if off >= o.From && off < o.From+o.For && i%every == 0 {
				if code, ok := httpStatus(o.Kind); ok {
					r.status, r.latency = code, 3*time.Millisecond
				} else {
					r.status, r.class, r.pod = 0, o.Kind, ""
					if o.Kind == zdv1.ClassTimeout {
						r.latency = 2 * time.Second
					}
				}
			}
		}
		if l := c.Late; l != nil && off >= l.From && off < l.From+l.For {
			r.lag = l.By
		}
		res[i] = r
	}
	end := start.Add(c.Duration)
	sc := zdv1.Scenario{ScenarioSpec: spec, Load: load, RunFile: sub + "/run.jsonl", RunID: "run-" + sub,
		Start: start, End: end, FailureWindows: []zdv1.FailureWindow{}}
	var events []zdv1.Event
	for _, s := range c.Steps {
		events = append(events, zdv1.Event{Time: start.Add(s.At), Source: zdv1.SourceHarness, Type: s.Type, Object: s.Object, Message: s.Message})
	}
	if c.Secret != "" {
		events = append(events, zdv1.Event{Time: start.Add(time.Second), Source: zdv1.SourceHarness, Type: zdv1.EventNote,
			Message: "kubectl said: " + c.Secret, Fields: map[string]string{"authorization": c.Secret}})
		events = append(events, zdv1.Event{Time: start.Add(2 * time.Second), Source: zdv1.SourceHarness, Type: zdv1.EventCordon,
			Object: "node/kind-worker", Message: "using " + c.Secret})
		if len(c.Outages) > 0 {
			// The event just before a failure window is quoted in every output.
			events = append(events, zdv1.Event{Time: start.Add(c.Outages[0].From - 50*time.Millisecond), Source: zdv1.SourceKubernetes,
				Type: zdv1.EventNote, Message: "error from server: " + c.Secret})
		}
	}
	slices.SortStableFunc(events, func(a, b zdv1.Event) int { return a.Time.Compare(b.Time) })
	sc.Events = events
	if sc.Events == nil {
		sc.Events = []zdv1.Event{}
	}
	// The run file is written, then analysed as the suite does, so the
	// report is what zerodrop computes from it (zerodrop report re-derives
	// every scenario and refuses a report its run file contradicts). A case
	// without a run file loses it after the analysis.
	{
		path := filepath.Join(dir, sub, "run.jsonl")
		w, err := runfile.Create(path, zdv1.Header{RunID: sc.RunID, Created: start,
			ToolVersion: "v0.1.0-test", Scenario: spec, Load: &load}, runfile.WithClock(func() time.Time { return end }))
		if err != nil {
			t.Fatal(err)
		}
		ei := 0
		for i, r := range res {
			for ei < len(events) && !events[ei].Time.After(r.at) {
				e := events[ei]
				if err := w.Event(zdv1.Event{Time: e.Time, Source: e.Source, Type: e.Type, Object: e.Object, Message: e.Message, Fields: e.Fields}); err != nil {
					t.Fatal(err)
				}
				ei++
			}
			rr := zdv1.Result{Seq: uint64(i), ID: fmt.Sprintf("%s-%d", sc.RunID, i), Time: r.at, Latency: r.latency,
				Status: r.status, Class: r.class, Pod: r.pod, Reused: c.KeepAlive && i > 8, Lag: r.lag}
			if r.pod != "" {
				yes := true
				no := false
				rr.Node = "kind-worker"
				rr.Ready, rr.Draining = &yes, &no
				rr.ClientIP = cmp.Or(c.ExpectedClientIP, "10.244.1.1")
				rr.ConnID = fmt.Sprintf("c%d", i%8)
				rr.ConnRequest = i/8 + 1
			}
			if r.class != "" {
				rr.Error = "dial tcp 172.18.255.200:80: connection " + r.class
			}
			if err := w.Result(rr); err != nil {
				t.Fatal(err)
			}
		}
		for ; ei < len(events); ei++ {
			e := events[ei]
			if err := w.Event(zdv1.Event{Time: e.Time, Source: e.Source, Type: e.Type, Object: e.Object, Message: e.Message, Fields: e.Fields}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		analysed, err := analyze.AnalyzeFile(context.Background(), path, analyze.WithRunFileName(sc.RunFile))
		if err != nil {
			t.Fatal(err)
		}
		if c.NoRunFile {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		sc = analysed
	}
	return sc
}

func httpStatus(kind string) (int, bool) {
	var code int
	if _, err := fmt.Sscanf(kind, "%d", &code); err == nil && code >= 100 {
		return code, true
	}
	return 0, false
}
