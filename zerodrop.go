// Package zerodrop measures whether a Kubernetes Service of type
// LoadBalancer keeps serving, request by request, while something disrupts
// the cluster under it: a rollout, a drain, a node pool replaced, or
// whatever the caller's own change does.
//
// UnderLoad is the whole of it for a suite that already has a cluster and
// a Service: it sends attributed HTTP load through the Service's load
// balancer, marks when the caller's disruption begins, calls it, keeps the
// load running a while after it returns, and judges the run from its run
// file alone — the same file `zerodrop analyze` reads, with every request
// and every cluster event in it. A failure before the disruption began is
// the ground moving (the verdict is ERROR, not FAIL): the workload is
// charged only with what happened once it was disrupted.
//
//	res, err := zerodrop.UnderLoad(ctx, clientset,
//		zerodrop.Service{Namespace: "shop", Name: "web"},
//		zerodrop.Disruption{Name: "rollout restart of web", Do: restartWeb},
//		zerodrop.Options{OutDir: t.TempDir()})
//	if err != nil { ... }          // the run could not be made
//	if !res.Passed() { t.Error(res) } // it was made, and it dropped
//
// Run is the project's own scenario matrix (`make e2e`) from any Go
// program: the incidents of docs/incidents.md on every LB model, or the
// cells a label filter selects, with the report a vendor submits. Package
// zerodrop.dev/zerodrop/e2e gives UnderLoad as a step of
// sigs.k8s.io/e2e-framework features; the Ginkgo suite in suites/ runs the
// matrix through the same code as Run.
package zerodrop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// Defaults of Options, one per setting.
const (
	// DefaultRate is the load in requests per second: enough that a
	// failure window of 100 ms meets requests, little enough for a laptop
	// or a CI runner that also runs the cluster.
	DefaultRate = scenario.DefaultRate
	// DefaultRequestTimeout bounds each request; a request that takes
	// longer counts as dropped.
	DefaultRequestTimeout = scenario.DefaultRequestTimeout
	// DefaultReadyTimeout bounds each wait before the load starts: ready
	// endpoints, the load balancer's address, its first answers.
	DefaultReadyTimeout = scenario.DefaultReadyTimeout
	// DefaultBefore is how long the load runs before the disruption: the
	// still-ground check of the run.
	DefaultBefore = 5 * time.Second
	// DefaultAfter is how long the load keeps running after the
	// disruption returned: what the load balancer does late (a health
	// check that notices a node only now) is measured too.
	DefaultAfter = 10 * time.Second
	// DefaultName begins the name of a run whose Options give none:
	// under-load-NAMESPACE-SERVICE, so runs of different Services in one
	// OutDir keep their own evidence.
	DefaultName = "under-load"
)

// Service is the Service of type LoadBalancer the load goes through.
type Service struct {
	Namespace, Name string
	// Port is the Service port the load is sent to; 0: its first TCP port.
	Port int32
	// Path is the HTTP path requested ("" is "/"); the server must answer
	// it with a 2xx: anything else is a dropped request.
	Path string
}

// Disruption is what the caller does to the cluster while the load runs.
type Disruption struct {
	// Name says what it is, in the run file and the verdict
	// ("rollout restart of shop/web").
	Name string
	// Do disrupts, and returns once the disruption is done (a rollout
	// complete, a node drained). An error ends the run: its run file keeps
	// what was measured and says why it ended.
	Do func(ctx context.Context) error
}

// Options tune a run. The zero value of each field is its default.
type Options struct {
	// Name names the run: its directory under OutDir and its name in the
	// verdict (default DefaultName-NAMESPACE-SERVICE). Lower-case letters,
	// digits and '-'; a run of the same name replaces the earlier one's
	// evidence.
	Name string
	// OutDir receives the run's directory: run.jsonl (every request and
	// event, streamed as they happen) and scenario.json (the verdict).
	// Required: the evidence is the point of a run.
	OutDir string
	// Rate is the load in requests per second (default DefaultRate).
	Rate int
	// RequestTimeout bounds each request (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// ReadyTimeout bounds each wait before the load starts (default
	// DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Before and After are how long the load runs before the disruption
	// and after it returned (defaults DefaultBefore, DefaultAfter).
	Before, After time.Duration
	// MaxDropped is the most dropped requests that still pass (default 0).
	MaxDropped int64
	// NoKeepAlive sends every request on a new connection; by default the
	// load reuses connections, as browsers and most clients do (and as the
	// keep-alive hazards of docs/incidents.md need).
	NoKeepAlive bool
	// CloudLB is the admin URL of zerodrop's cloud LB (http://ADDRESS:9100;
	// `zerodrop lb state` reads it) when the Service is one of its, on a
	// kind cluster made with LB=cloud or all: the run then waits until the
	// LB has settled the Service before the load starts, and the LB's
	// health checks and backend changes go into the run file beside every
	// request. "" for any other LB.
	CloudLB string
	// SignKey is the path of an Ed25519 private key (`zerodrop keygen`
	// writes one) that signs the run file when it is closed, so a reader
	// can check the evidence was not edited (`zerodrop report
	// --verify-key`); "" leaves it unsigned.
	SignKey string
	// Logger gets one line per step (default: discarded).
	Logger *slog.Logger
}

// Result is a run's outcome.
type Result struct {
	// Scenario is the verdict with everything it was decided on: status
	// and reasons, counts, failure windows, the pods that answered
	// (apis/v1, the schema of zerodrop's reports).
	Scenario zdv1.Scenario
	// RunFile is the run file's path: it alone recomputes the verdict
	// (`zerodrop analyze`).
	RunFile string
}

// Passed reports whether the run was measured and dropped no more than
// Options.MaxDropped.
func (r Result) Passed() bool { return r.Scenario.Verdict.Status == zdv1.Pass }

// String is the verdict in a few lines: status, counts, each check that did
// not pass, and where the evidence is.
func (r Result) String() string {
	sc, res := r.Scenario, r.Scenario.Results
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d requests at %.1f/s, %d dropped (errors %d, non-2xx %d), %d failure window(s)",
		sc.Verdict.Status, sc.Name, res.Total, res.AchievedRate, res.Dropped, res.Errors, res.Non2xx, len(sc.FailureWindows))
	for _, rs := range sc.Verdict.Reasons {
		if rs.Status != zdv1.Pass {
			fmt.Fprintf(&b, "\n  %s %s: %s", rs.Status, rs.Check, rs.Message)
		}
	}
	fmt.Fprintf(&b, "\n  evidence: %s", r.RunFile)
	return b.String()
}

// UnderLoad measures svc while d disrupts the cluster: it waits until the
// Service's load balancer answers, starts the load, lets it run
// Options.Before, marks the disruption's start in the run file, calls d.Do,
// lets the load run Options.After more, and returns the verdict. It deploys
// nothing and removes nothing: the Service and its Pods are the caller's.
//
// An error means no verdict could be reached (bad input, a Service that
// never served, a disruption that failed); a Result whose Passed is false
// means the run was measured and it dropped requests, or was not measured
// well enough to judge (ERROR: a load generator that fell behind, requests
// lost before the disruption). Either way the run file, when there is one,
// says what happened. UnderLoad measures once: unlike the matrix (Run),
// which runs a cell again when a shared disruption missed its witness, a
// caller's disruption is the caller's to repeat.
func UnderLoad(ctx context.Context, client kubernetes.Interface, svc Service, d Disruption, opts Options) (Result, error) {
	if client == nil {
		return Result{}, errors.New("zerodrop: UnderLoad needs a Kubernetes client")
	}
	if d.Do == nil {
		return Result{}, errors.New("zerodrop: the disruption has no Do")
	}
	if opts.OutDir == "" {
		return Result{}, errors.New("zerodrop: Options.OutDir is required: the run file (every request, every event) is the evidence")
	}
	if opts.Rate < 0 || opts.MaxDropped < 0 || opts.Before < 0 || opts.After < 0 || opts.RequestTimeout < 0 || opts.ReadyTimeout < 0 {
		return Result{}, errors.New("zerodrop: Options: rate, times and MaxDropped cannot be negative")
	}
	name := opts.Name
	if name == "" {
		name = scenario.DirName(strings.ToLower(DefaultName + "-" + svc.Namespace + "-" + svc.Name))
	}
	if scenario.DirName(name) != name {
		return Result{}, fmt.Errorf("zerodrop: Options.Name %q: want lower-case letters, digits and '-' (it names a directory)", name)
	}
	rate := opts.Rate
	if rate == 0 {
		rate = DefaultRate
	}
	before, after := opts.Before, opts.After
	if before == 0 {
		before = DefaultBefore
	}
	if after == 0 {
		after = DefaultAfter
	}
	what := d.Name
	if what == "" {
		what = "the caller's disruption"
	}
	env := &scenario.Env{Clientset: client, OutDir: opts.OutDir, Rate: rate, RequestTimeout: opts.RequestTimeout,
		ReadyTimeout: opts.ReadyTimeout, ToolVersion: version(), Logger: opts.Logger}
	if opts.SignKey != "" {
		key, err := evidence.LoadKey(opts.SignKey)
		if err != nil {
			return Result{}, fmt.Errorf("zerodrop: Options.SignKey: %w", err)
		}
		env.Sealer = key
	}
	keepAlive := !opts.NoKeepAlive
	spec := scenario.Spec{
		ScenarioSpec: zdv1.ScenarioSpec{
			Name: name, Role: zdv1.RoleAssertion,
			Description: fmt.Sprintf("%s/%s under load while %s", svc.Namespace, svc.Name, what),
			Config:      map[string]string{"disruption": what},
			Criteria: zdv1.Criteria{
				MaxDropped: zdv1.Int64(opts.MaxDropped),
				// Nine in ten of the requests the still ground alone
				// should have sent: fewer, and the load broke.
				MinRequests: int64(float64(rate) * before.Seconds() * 0.9),
			},
		},
		Service:   &scenario.ServiceRef{Namespace: svc.Namespace, Name: svc.Name, Port: svc.Port, Path: svc.Path},
		KeepAlive: &keepAlive,
	}
	if opts.CloudLB != "" {
		spec.LB = scenario.CloudLBHooks(opts.CloudLB, opts.Logger)
	}
	run, err := scenario.Begin(ctx, env, spec)
	if err != nil {
		return Result{}, fmt.Errorf("zerodrop: %w", err)
	}
	defer run.Cleanup(ctx)
	res := Result{RunFile: run.RunFile}
	fail := func(err error) (Result, error) {
		run.Stop(err)
		return res, fmt.Errorf("zerodrop: %w (evidence so far: %s)", err, run.RunFile)
	}
	if err := run.Settle(ctx, before); err != nil {
		return fail(fmt.Errorf("before the disruption: %w", err))
	}
	run.Disrupt(what)
	if err := d.Do(context.WithValue(ctx, runEvents{}, run.Events())); err != nil {
		return fail(fmt.Errorf("disruption %q: %w", what, err))
	}
	if err := run.Settle(ctx, after); err != nil {
		return fail(fmt.Errorf("after the disruption: %w", err))
	}
	sc, err := run.Finish(ctx)
	if err != nil {
		return res, fmt.Errorf("zerodrop: %w", err)
	}
	res.Scenario = sc
	return res, nil
}

// runEvents is the context key under which a disruption's context carries
// its run's event sink (Note, RolloutRestart).
type runEvents struct{}

// eventsOf is the event sink of the run whose disruption ctx belongs to;
// events outside a disruption are dropped.
func eventsOf(ctx context.Context) zdv1.EventSink {
	if s, ok := ctx.Value(runEvents{}).(zdv1.EventSink); ok {
		return s
	}
	return zdv1.Discard
}

// Note records msg in the run file of the UnderLoad whose disruption ctx
// belongs to, as an event at this moment, so the run's timeline (and the
// failure windows the verdict explains with it) shows the caller's own
// steps. Outside a disruption it does nothing.
func Note(ctx context.Context, msg string) {
	_ = eventsOf(ctx).Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventNote, Object: "disruption", Message: msg})
}

// RolloutRestart is `kubectl rollout restart deployment/name`, waited for
// until the rollout completes (at most timeout): the disruption most
// changes make. Its start and end are events in the run file.
func RolloutRestart(client kubernetes.Interface, namespace, name string, timeout time.Duration) Disruption {
	return Disruption{
		Name: fmt.Sprintf("rollout restart of deployment %s/%s", namespace, name),
		Do: func(ctx context.Context) error {
			return kube.New(client, kube.WithEventSink(eventsOf(ctx))).RestartWorkload(ctx, kube.KindDeployment, namespace, name, timeout)
		},
	}
}

// version is zerodrop's module version as the caller's build records it
// (a tagged release, or a pseudo-version); "(devel)" inside zerodrop's own
// module, where the Makefile stamps the CLI instead. A test binary records
// no dependency's version, so there it is unknown, and says why.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const module = "zerodrop.dev/zerodrop"
	if bi.Main.Path == module {
		return bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == module {
			if m.Replace != nil {
				return m.Version + " (replaced by " + m.Replace.Path + ")"
			}
			return m.Version
		}
	}
	return "unknown (the binary records no module versions, as go test binaries do not)"
}
