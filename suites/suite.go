package suites

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/router"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// Suite is what scenario bodies share: the cluster, the scenario
// environment and a way to register clean-up.
type Suite struct {
	Settings Settings
	Env      *scenario.Env
	Provider cluster.Provider
	// Models are the matrix's columns (Settings.Models).
	Models []Model
	// CloudLB connects the witnesses of the cloud LB's models to its own
	// view (events, settled state); zero when no column is the cloud LB's.
	CloudLB scenario.LBHooks
	// Router connects the witnesses of metallb-bgp to the upstream router
	// (its route changes, a settled route before the load); zero without.
	Router scenario.LBHooks
	// KubeVIP connects the witnesses of kube-vip-arp to kube-vip (an
	// address for each Service, its lease's holder); zero without.
	KubeVIP scenario.LBHooks
	// KubeVIPBGP connects the witnesses of kube-vip-bgp to kube-vip's
	// BGP mode (an address for each Service) and its router (the route's
	// changes, a settled route before the load); zero without.
	KubeVIPBGP scenario.LBHooks
	// KubeVIPInfo describes that kube-vip (its image, mode and lease
	// timing) for the report's implementation block; "" without.
	KubeVIPInfo string
	// RouterInfo is that router (nil without): its FRR version and hash
	// policy go into the report's implementation block.
	RouterInfo *router.Router
	// Timing is every wait and settle time of the bodies (DefaultTiming).
	Timing Timing
	// Kubernetes is the API server's release (zero when unparsable): the
	// bundled workload is written in the form that release takes.
	Kubernetes kubeversion.Version
	// KubeProxy is the cluster's kube-proxy as far as it is known; limits
	// that depend on it apply when a scenario runs (Scenario.OnCluster).
	KubeProxy KubeProxy
	// Events forwards the provider's events to the current run's file.
	Events *SwitchSink
	// Progress, when set, follows the run against its plan.
	Progress *Progress
	// DeferCleanup registers clean-up (ginkgo.DeferCleanup in the driver;
	// RunScenario collects a batch's own and runs them after it); clean-ups
	// run last-registered first.
	DeferCleanup func(func(ctx context.Context) error)

	// controls are the outcomes of the control cells measured so far, by
	// column (controlKey): what Begin carries into every later cell of
	// the column.
	controlsMu sync.Mutex
	controls   map[string]zdv1.Scenario
}

// controlKey is a cell's column as its control sees it: the LB model, the
// traffic policy and the client's keep-alive.
func controlKey(c Cell) string {
	return fmt.Sprintf("%s|%s|%t", c.Model.Name, c.Policy, c.KeepAlive)
}

// recordControls keeps the outcomes of sc's control cells for the cells
// that run after them; a control that broke is kept too, as what it is.
func (s *Suite) recordControls(cells []Cell, res []scenario.Result) {
	s.controlsMu.Lock()
	defer s.controlsMu.Unlock()
	if s.controls == nil {
		s.controls = map[string]zdv1.Scenario{}
	}
	for i, c := range cells {
		if i >= len(res) {
			break
		}
		sc := res[i].Scenario
		if res[i].Err != nil {
			sc = zdv1.Scenario{Verdict: zdv1.Verdict{Status: zdv1.Error}}
		}
		if sc.Name == "" {
			sc.Name = Scenario{Name: controlName}.CellName(c)
		}
		s.controls[controlKey(c)] = sc
	}
}

// controlEvent is the EventControl for cell c: its column's control
// outcome; ok is false when no control of that column was measured.
func (s *Suite) controlEvent(c Cell) (zdv1.Event, bool) {
	s.controlsMu.Lock()
	defer s.controlsMu.Unlock()
	ctl, ok := s.controls[controlKey(c)]
	if !ok {
		return zdv1.Event{}, false
	}
	f := zdv1.ControlFields
	fields := map[string]string{
		f.Name: ctl.Name, f.RunFile: ctl.RunFile, f.SHA256: ctl.RunFileSHA256,
		f.Total: fmt.Sprint(ctl.Results.Total), f.Dropped: fmt.Sprint(ctl.Results.Dropped), f.Status: string(ctl.Verdict.Status),
	}
	if ctl.RunFile == "" {
		fields[f.RunFile] = "(none: the control broke before it had one)"
	}
	return zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventControl, Object: "control/" + c.Name(),
		Message: fmt.Sprintf("the control of this column (%s, nothing disrupted): %s, %d of %d dropped",
			ctl.Name, ctl.Verdict.Status, ctl.Results.Dropped, ctl.Results.Total), Fields: fields}, true
}

// Cleanup registers f to run after the current case.
func (s *Suite) Cleanup(f func(ctx context.Context) error) { s.DeferCleanup(f) }

// witnessParallel is how many witnesses deploy at once: enough that a
// few dozen are ready within minutes, few enough that two cores start
// their pods without missing probe deadlines.
const witnessParallel = 12

// Begin starts one witness per cell, each from spec(cell), registers their
// clean-up and points provider events at every witness's run file. Each
// witness's run file gets its column's control outcome, where one was
// measured (the control check of the verdict).
func (s *Suite) Begin(ctx context.Context, cells []Cell, spec func(Cell) scenario.Spec) *scenario.Witnesses {
	return s.begin(ctx, cells, spec, true)
}

func (s *Suite) begin(ctx context.Context, cells []Cell, spec func(Cell) scenario.Spec, controlled bool) *scenario.Witnesses {
	specs := make([]scenario.Spec, len(cells))
	for i, c := range cells {
		specs[i] = spec(c)
	}
	ws := scenario.BeginWitnesses(ctx, s.Env, specs, witnessParallel)
	for i, c := range cells {
		r, err := ws.Run(i)
		if err != nil || !controlled {
			continue
		}
		if e, ok := s.controlEvent(c); ok {
			_ = r.Events().Event(e)
		}
	}
	s.Events.Set(ws.Events())
	s.Cleanup(func(ctx context.Context) error {
		s.Events.Set(nil)
		ws.Cleanup(ctx)
		return nil
	})
	return ws
}

// AddPoolLater registers the removal of a pool the case is about to add, so
// that it goes even when the case fails half-way. Registering it before
// Begin makes it run after the workload's namespace is gone.
func (s *Suite) AddPoolLater(ctx context.Context, pool string) error {
	if s.Provider == nil {
		return fmt.Errorf("nodepool %s: no cluster provider", pool)
	}
	s.Cleanup(func(ctx context.Context) error {
		nodes, err := s.Provider.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Pool == pool {
				return s.Provider.RemoveNodePool(ctx, pool)
			}
		}
		return nil
	})
	return nil
}

// PoolShape is what a pool's nodes carry besides its name: the labels
// and taints a user's placement may need (zero: none).
type PoolShape struct {
	Labels map[string]string
	Taints []corev1.Taint
}

// shapeOf is the labels and taints of node that belong to its pool, not to
// Kubernetes or to the node itself: what a replacement pool must carry for
// Pods placed on the old one to fit it.
func shapeOf(n *corev1.Node) PoolShape {
	var sh PoolShape
	for k, v := range n.Labels {
		// The parked label belongs to the machine that leaves, not to its
		// pool: a successor runs kube-vip-bgp again.
		if k == contract.PoolLabel || k == contract.KubeVIPBGPParkedLabel || systemKey(k) {
			continue
		}
		if sh.Labels == nil {
			sh.Labels = map[string]string{}
		}
		sh.Labels[k] = v
	}
	for _, t := range n.Spec.Taints {
		if !systemKey(t.Key) {
			sh.Taints = append(sh.Taints, t)
		}
	}
	return sh
}

// systemKey: a label or taint key Kubernetes or kind sets on every node
// (kubernetes.io/hostname, node.kubernetes.io/unschedulable, ...).
func systemKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	return ok && (prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io"))
}

// AddPool adds a nodepool under running witnesses. The provider loads the
// images the suite side-loaded (the echo server) into the new nodes itself,
// as a cloud node would pull them.
func (s *Suite) AddPool(ctx context.Context, ws *scenario.Witnesses, pool string, count int, like PoolShape) error {
	ws.Kube().Action("pool/"+pool, fmt.Sprintf("add nodepool %s (%d nodes)", pool, count))
	start := time.Now()
	if err := s.Provider.AddNodePool(ctx, pool, count, like.Labels, like.Taints); err != nil {
		return fmt.Errorf("add nodepool %s: %w", pool, err)
	}
	ws.Kube().Note("pool/"+pool, fmt.Sprintf("nodepool %s ready in %s", pool, time.Since(start).Round(time.Second)))
	return nil
}

// RestorePool adds a pool back when it is missing (after a replacement).
func (s *Suite) RestorePool(ctx context.Context, pool string, count int, like PoolShape) error {
	nodes, err := s.Provider.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Pool == pool {
			return nil
		}
	}
	if err := s.Provider.AddNodePool(ctx, pool, count, like.Labels, like.Taints); err != nil {
		return fmt.Errorf("restore nodepool %s: %w", pool, err)
	}
	return nil
}

// SwitchSink forwards events to whichever run is current; events outside a
// run are dropped.
type SwitchSink struct {
	mu   sync.Mutex
	sink zdv1.EventSink
}

// Set points the sink at s (nil: drop).
func (w *SwitchSink) Set(s zdv1.EventSink) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sink = s
}

// Event implements zdv1.EventSink.
func (w *SwitchSink) Event(e zdv1.Event) error {
	w.mu.Lock()
	s := w.sink
	w.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Event(e)
}

// Collector accumulates the suite's report and rewrites report.json after
// every scenario, so an interrupted suite still leaves what it measured.
type Collector struct {
	mu     sync.Mutex
	path   string
	report *zdv1.Report
}

// NewCollector starts a report at path. The report names its scenario
// set: this suite's, in the version of the zerodrop that runs it (the
// scenarios are this package's code).
func NewCollector(path string, run zdv1.RunMeta) *Collector {
	rep := zdv1.New(run)
	rep.ScenarioSet = &zdv1.ScenarioSet{Name: zdv1.ScenarioSetE2E, Version: run.ToolVersion}
	return &Collector{path: path, report: rep}
}

// Add records a scenario and rewrites the report.
func (c *Collector) Add(sc zdv1.Scenario) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.report.Scenarios = append(c.report.Scenarios, sc)
	return c.flush()
}

// Close stamps the end time and writes the final report.
func (c *Collector) Close(end time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.report.Run.End = end
	return c.flush()
}

func (c *Collector) flush() error {
	c.report.Summarize()
	if err := c.report.WriteFile(c.path); err != nil {
		return fmt.Errorf("write report %s: %w", c.path, err)
	}
	path := filepath.Join(filepath.Dir(c.path), VerdictsFileName)
	if err := os.WriteFile(path+".tmp", []byte(VerdictLines(c.report.Scenarios)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// VerdictsFileName is the verdicts in plain text next to report.json: a
// line per cell, for a person or a CI log's last lines (run-e2e.sh prints
// the flagged ones when a run fails).
const VerdictsFileName = "verdicts.txt"

// VerdictLines is a line per scenario, "! " first where the cell fails the
// run (an assertion that did not pass, a run that broke), "  " otherwise:
// its name, role and what happened, and how often it was measured.
func VerdictLines(scs []zdv1.Scenario) string {
	var b strings.Builder
	for _, sc := range scs {
		mark := "  "
		if (sc.Role == zdv1.RoleAssertion && sc.Verdict.Status != zdv1.Pass) || sc.Outcome() == string(zdv1.Error) {
			mark = "! "
		}
		fmt.Fprintf(&b, "%s%s [%s] %s", mark, sc.Name, sc.Role, sc.OutcomeText())
		for k, m := range sc.Remeasured {
			fmt.Fprintf(&b, " | measured again after measurement %d: %s", k+1, m)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
