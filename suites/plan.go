package suites

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// Plan is what a run of the matrix will do, known before the first cluster
// step: every batch (one disruption and the cells that watch it), how many
// Pod recipes it deploys and how long it should take. The run prints it
// first, derives its timeouts from it, deals shards by it and reports
// progress against it.
type Plan struct {
	Batches []PlannedBatch
	// Witnesses is the budget it was cut with (Settings.Witnesses; a
	// scenario that changes machines was cut at Settings.MachineWitnesses).
	Witnesses int
}

// PlannedBatch is one disruption of one scenario and its cells.
type PlannedBatch struct {
	Scenario string
	// Pos is the scenario's position in the registry: the run order.
	Pos   int
	Cells []Cell
	// PodRecipes is how many Deployments it deploys (cells of one Pod
	// recipe share them, Scenario.OwnPods aside).
	PodRecipes int
	// Estimate is how long the batch should take, clean-up included
	// (batchEstimate).
	Estimate time.Duration
	// Load is what its cells stream together, in requests per second
	// (Settings.RateFor each).
	Load int
	// Shard is the part of the matrix that runs it (1-based; 1 of 1 when
	// not sharded).
	Shard int
}

// Costs are the machine's own times the estimates are made of, measured
// on the 2-core machine the suite is written for (kind, Kubernetes v1.37.2):
// a batch of 4 cells of rolling-update took 2m25s, drain-node 2m6s,
// scale-down 2m2s, 30-second controls 1m58s a batch (2026-11-26).
type Costs struct {
	// Deploy is a batch's start: namespaces, Pods scheduled and ready,
	// Services with their addresses, before the LB's own settling.
	Deploy time.Duration
	// PodStart is one Pod's start until ready, during a rollout.
	PodStart time.Duration
	// Terminate is what a Pod's exit takes after its own delays.
	Terminate time.Duration
	// PoolAdd and PoolRemove are a kind nodepool's.
	PoolAdd, PoolRemove time.Duration
	// Cleanup is a batch's clean-up (Pods deleted at once).
	Cleanup time.Duration
	// PowerOff is a machine's end once nothing on it outlives SIGTERM:
	// systemd stops its units and the node's container exits (1.6-5.4 s
	// here after a drain, with MetalLB and the cloud LB, 2026-11-28).
	PowerOff time.Duration
	// Held is how long a process that does not end on SIGTERM holds a
	// machine whose kubelet did not stop its Pods first (graceful node
	// shutdown off, the kubelet's default): systemd waits that long
	// before it kills it. Zero where nothing on the machines does so.
	Held time.Duration
	// Parked is how long taking such a process off a leaving machine first
	// takes where no cell of the batch measures it (parkKubeVIPBGP): its
	// Pod's grace, after which the kubelet kills it, and the kubelet's
	// report (measured 36.3 s from the label to the Pod gone).
	Parked time.Duration
	// parks says the batch has no kube-vip-bgp cell, so a departure that
	// would be held parks it instead (batchEstimate sets it).
	parks bool
}

// DefaultCosts are this machine's.
func DefaultCosts() Costs {
	return Costs{Deploy: 30 * time.Second, PodStart: 10 * time.Second, Terminate: 5 * time.Second,
		PoolAdd: 45 * time.Second, PoolRemove: 15 * time.Second, Cleanup: 15 * time.Second, PowerOff: 5 * time.Second}
}

// systemdStopTimeout is how long systemd waits for a unit's processes to
// end after SIGTERM before it kills them (DefaultTimeoutStopSec, 90 s;
// systemd-system.conf(5)); a Pod's container is such a unit (a scope) on
// a node whose kubelet uses the systemd cgroup driver, as kind's do.
const systemdStopTimeout = 90 * time.Second

// costs are the machine's costs (DefaultCosts) on the cluster these
// settings make: with LB=all it runs kube-vip in BGP mode on every worker
// (unless ZERODROP_KUBE_VIP, ZERODROP_KUBE_VIP_BGP or ZERODROP_BGP=0 leaves
// it out), and kube-vip v0.9.2's BGP mode does not end on SIGTERM
// (docs/kube-vip.md), so a machine that shuts down with it and without the
// kubelet's graceful node shutdown waits for systemd's stop timeout:
// measured off 90.9-92.4 s after its shutdown began in every such
// departure; with the kubelet's grace (node-shutdown) 17.1 s, the kubelet
// having killed it. Only a batch with kube-vip-bgp's cells pays it: the
// others park it off the leaving machine (departureCost,
// parkKubeVIPBGP).
func (st Settings) costs() Costs {
	k := DefaultCosts()
	if st.kubeVIPBGPRuns() {
		// Measured: a deleted kube-vip-bgp Pod took 30.0-30.9 s with its
		// grace of 30 s, and parking one 36.3 s (docs/kube-vip.md).
		k.Held, k.Parked = systemdStopTimeout, 37*time.Second
	}
	return k
}

// kubeVIPBGPRuns says whether the cluster these settings make runs
// kube-vip in BGP mode (clusters/cluster.sh passes the same settings).
func (st Settings) kubeVIPBGPRuns() bool {
	return st.Provider == "kind" && st.LB == contract.LBAll && st.KubeVIP && st.KubeVIPBGP && st.BGP
}

// cellTimes is what a cell's workload and LB make its waits.
type cellTimes struct {
	// accepting is how long a terminating Pod keeps serving (preStop and
	// shutdown delay), minReady the rollout's pause per Pod.
	accepting, minReady time.Duration
	// gate is how long a new Pod waits for its LB's readiness gate.
	gate     time.Duration
	replicas int
	// removal is the LB's lag to drop a node that lost its endpoints
	// (Local), addition its first verdict on a node before the load starts.
	removal, addition time.Duration
	// lagFromExit: the LB's check passes while a terminating endpoint
	// still serves, so its lag starts when the Pod exits (leaves).
	lagFromExit bool
	// watch bounds the wait for the LB after a disruption
	// (Timing.HazardWatch for a documentation cell whose LB is slower).
	watch time.Duration
}

// timesOf is c's times in a disruption that does fate to a terminating
// Pod's node (its scenario's Fate): the hardened Pods' recipe follows it.
func timesOf(tm Timing, c Cell, fate recipe.Fate) cellTimes {
	p := lbOf(c)
	lb := recipe.FromProfile(p)
	t := cellTimes{replicas: 3, addition: p.HealthCheckFor(c.Policy).AdditionTime(), watch: p.LongestRemovalLag()}
	if c.Role == zdv1.RoleDocumentation {
		t.watch = min(t.watch, tm.HazardWatch)
	}
	if c.Policy == corev1.ServiceExternalTrafficPolicyLocal {
		t.removal = lb.RemovalLag
		t.lagFromExit = lb.ChecksThroughNodePort || lb.FollowsServing
	}
	if c.StandIn != nil {
		// A user's workload: its own knobs are not the recipe's; the LB's
		// gate, where its cells add it, holds each new Pod as below.
		if c.Model.Cloud && c.StandIn.Gated(c.Model.Profile) {
			t.gate = t.addition
		}
		return t
	}
	// The bundled workload's own knobs, as fixtures builds them for this
	// cell: a hardening that cannot be built here (none of the registry's)
	// leaves the naive zeros.
	cfg, err := fixtures.NewConfig(fixtures.WithHardening(c.Hardening), fixtures.WithLB(c.Model.Profile),
		fixtures.WithPolicy(c.Policy), fixtures.WithFate(fate))
	if err != nil {
		return t
	}
	t.accepting = cfg.PreStopSleep + cfg.Shutdown.Delay
	t.minReady = time.Duration(cfg.MinReadySeconds) * time.Second
	if len(cfg.ReadinessGates) > 0 {
		// A gated Pod is Ready only once the LB's first checks of its
		// target passed.
		t.gate = t.addition
	}
	return t
}

// quiet is a witness's wait for its LB after a disruption that left every
// node an endpoint (AwaitLB): quiet within seconds, the margin on top.
func (t cellTimes) quiet(tm Timing) time.Duration { return 5*time.Second + tm.SettleMargin }

// leaves is a witness's wait for its LB (AwaitLB) once a node's last
// endpoint began terminating sinceTerm ago and its Pod exited sinceExit
// ago: the LB drops the node its lag after the moment its check starts
// failing, not after the disruption's end, so what is left of the lag,
// then the margin. A check of the healthCheckNodePort counts ready
// endpoints only (Kubernetes v1.37.2 pkg/proxy/endpointschangetracker.go,
// LocalReadyEndpoints), so it fails as the Pod starts terminating, while
// a hardened Pod's preStop keeps it serving; a check through the NodePort
// itself (gclb) reaches the terminating endpoint while it serves
// (pkg/proxy/topology.go, CategorizeEndpoints), and one that follows the
// serving condition (MetalLB) keeps the node too: theirs starts at the
// exit (measured, gclb drain-node 2026-11-26: the node still healthy 10
// minutes after the eviction, marked unhealthy 10 minutes after the exit).
func (t cellTimes) leaves(tm Timing, sinceTerm, sinceExit time.Duration) time.Duration {
	since := sinceTerm
	if t.lagFromExit {
		since = sinceExit
	}
	return min(max(t.removal-since, 5*time.Second), max(t.watch, 5*time.Second)) + tm.SettleMargin
}

// rollout is a rolling replacement of every Pod, one at a time.
func (t cellTimes) rollout(k Costs) time.Duration {
	return time.Duration(t.replicas) * t.replacement(k)
}

// replacement is a new Pod's way to counting as available: its start,
// its LB's gate, its minReadySeconds.
func (t cellTimes) replacement(k Costs) time.Duration { return k.PodStart + t.gate + t.minReady }

// CellCost is a scenario's estimate of one cell's disruption and settling
// (from the end of the baseline to the end of its load): what the batch
// waits for, the longest of its cells. t is what the cell's workload and
// LB make its waits in this scenario (timesOf with the scenario's Fate).
type CellCost func(tm Timing, k Costs, c Cell, t cellTimes) time.Duration

// observeCost is a scenario that disrupts nothing and watches for d.
func observeCost(d func(Timing) time.Duration) CellCost {
	return func(tm Timing, _ Costs, _ Cell, _ cellTimes) time.Duration { return d(tm) }
}

// batchEstimate is a batch of cells of sc: deployed, settled by their LB,
// a baseline, the longest cell's disruption, clean-up.
func batchEstimate(sc Scenario, tm Timing, k Costs, cells []Cell) time.Duration {
	k = k.forBatch(cells)
	var settle, longest time.Duration
	for _, c := range cells {
		settle = max(settle, timesOf(tm, c, sc.Fate).addition)
		longest = max(longest, sc.cost(tm, k, c))
	}
	return k.Deploy + settle + tm.Baseline + longest + k.Cleanup
}

// forBatch is k for a batch of cells: kube-vip-bgp's hold falls on every
// cell of a batch that measures it, and a batch that does not parks it
// (parkKubeVIPBGP) instead of waiting for it.
func (k Costs) forBatch(cells []Cell) Costs {
	if k.Held > 0 && !measuresKubeVIPBGP(cells) {
		k.Held, k.parks = 0, true
	}
	return k
}

func (sc Scenario) cost(tm Timing, k Costs, c Cell) time.Duration {
	if sc.Cost == nil {
		return tm.Observe
	}
	return sc.Cost(tm, k, c, timesOf(tm, c, sc.Fate))
}

// podRecipes counts the Deployments a batch of cells of sc deploys.
func (s *Suite) podRecipes(sc Scenario, cells []Cell) int {
	if sc.OwnPods != "" {
		return len(cells)
	}
	seen := map[string]bool{}
	for _, c := range cells {
		cfg, err := fixtures.NewConfig(s.spec(sc, c).Workload...)
		if err != nil {
			seen[c.Name()] = true
			continue
		}
		seen[cfg.Namespace] = true
	}
	return len(seen)
}

// MakePlan cuts every scenario's cells into batches (Batches with the
// witness budget), estimates each and deals them to the settings' shards:
// longest first, each to the shard with the least work so far, so shards
// end together (the control cells go to every shard that has cells of
// their column, since a column's later cells are judged against them).
// cellsOf gives a scenario's cells (the label filter applied).
func (s *Suite) MakePlan(scenarios []Scenario, cellsOf func(Scenario) []Cell) Plan {
	p := Plan{Witnesses: s.Settings.Witnesses}
	k := s.Settings.costs()
	for pos, sc := range scenarios {
		cells := cellsOf(sc)
		if len(cells) == 0 {
			continue
		}
		for _, b := range Batches(cells, s.Settings.WitnessesFor(sc)) {
			sub := make([]Cell, len(b))
			for j, i := range b {
				sub[j] = cells[i]
			}
			load := 0
			for _, c := range sub {
				load += s.Settings.rateOf(c.Case)
			}
			p.Batches = append(p.Batches, PlannedBatch{Scenario: sc.Name, Pos: pos, Cells: sub,
				PodRecipes: s.podRecipes(sc, sub), Estimate: batchEstimate(sc, s.Timing, k, sub), Load: load, Shard: 1})
		}
	}
	p.deal(s.Settings.Shard, scenarios)
	return p
}

// deal assigns the batches to shards longest first (the control's to
// every shard with a later cell of their column).
func (p *Plan) deal(sh Shard, scenarios []Scenario) {
	n := max(sh.Count, 1)
	load := make([]time.Duration, n+1)
	order := make([]int, 0, len(p.Batches))
	var controls []int
	for i, b := range p.Batches {
		if scenarios[b.Pos].Control {
			controls = append(controls, i)
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p.Batches[b].Estimate, p.Batches[a].Estimate) })
	for _, i := range order {
		best := 1
		for j := 2; j <= n; j++ {
			if load[j] < load[best] {
				best = j
			}
		}
		p.Batches[i].Shard = best
		load[best] += p.Batches[i].Estimate
	}
	if n == 1 {
		return
	}
	// A control batch is copied to every shard that runs a cell of one of
	// its columns; the copy keeps only those columns' control cells.
	columns := make([]map[string]bool, n+1)
	for j := range columns {
		columns[j] = map[string]bool{}
	}
	for _, i := range order {
		for _, c := range p.Batches[i].Cells {
			columns[p.Batches[i].Shard][controlKey(c)] = true
		}
	}
	var out []PlannedBatch
	for i, b := range p.Batches {
		if !slices.Contains(controls, i) {
			out = append(out, b)
			continue
		}
		for j := 1; j <= n; j++ {
			var keep []Cell
			for _, c := range b.Cells {
				if columns[j][controlKey(c)] {
					keep = append(keep, c)
				}
			}
			if len(keep) > 0 {
				nb := b
				nb.Cells, nb.Shard = keep, j
				out = append(out, nb)
			}
		}
	}
	p.Batches = out
	slices.SortStableFunc(p.Batches, func(a, b PlannedBatch) int { return cmp.Compare(a.Pos, b.Pos) })
}

// Of is the plan of one shard (the zero Shard: the whole plan).
func (p Plan) Of(sh Shard) Plan {
	if sh.Count == 0 {
		return p
	}
	out := Plan{Witnesses: p.Witnesses}
	for _, b := range p.Batches {
		if b.Shard == sh.Index {
			out.Batches = append(out.Batches, b)
		}
	}
	return out
}

// CellsOf is the cells of scenario name in the plan, in run order.
func (p Plan) CellsOf(name string) []Cell {
	var out []Cell
	for _, b := range p.Batches {
		if b.Scenario == name {
			out = append(out, b.Cells...)
		}
	}
	return out
}

// Images are the images the plan's cells need on the nodes besides the
// echo server's: their fronts' (fixtures.Front), each once.
func (p Plan) Images() []string {
	var out []string
	for _, b := range p.Batches {
		for _, c := range b.Cells {
			if img := c.Front.Image(); img != "" && !slices.Contains(out, img) {
				out = append(out, img)
			}
		}
	}
	return out
}

// BatchesOf is the batches of scenario name in the plan, in run order:
// each is one disruption and the cells that watch it (Suite.RunBatches).
func (p Plan) BatchesOf(name string) [][]Cell {
	var out [][]Cell
	for _, b := range p.Batches {
		if b.Scenario == name {
			out = append(out, slices.Clone(b.Cells))
		}
	}
	return out
}

// Cells counts the plan's cells.
func (p Plan) Cells() int {
	n := 0
	for _, b := range p.Batches {
		n += len(b.Cells)
	}
	return n
}

// Estimate is the plan's whole estimate, one batch after another.
func (p Plan) Estimate() time.Duration {
	var d time.Duration
	for _, b := range p.Batches {
		d += b.Estimate
	}
	return d
}

// ScenarioEstimate is the estimate of scenario name's batches.
func (p Plan) ScenarioEstimate(name string) time.Duration {
	var d time.Duration
	for _, b := range p.Batches {
		if b.Scenario == name {
			d += b.Estimate
		}
	}
	return d
}

// PlanFor is the plan of a run with settings and a Ginkgo label filter
// ("" selects every cell), before any cluster exists: the scenarios of
// the registry (with a connection per request where the settings say so),
// their cells on the settings' models, dealt to the settings' shard.
func PlanFor(settings Settings, filter string) (Plan, error) {
	models, err := settings.Models()
	if err != nil {
		return Plan{}, err
	}
	s := &Suite{Settings: settings, Timing: settings.Timing(), Models: models}
	var ferr error
	all := s.MakePlan(settings.Scenarios(), func(sc Scenario) []Cell {
		cells, err := selectCells(filter, []string{"scenario:" + sc.Name}, sc.Cells(models))
		if err != nil {
			ferr = err
		}
		return cells
	})
	if ferr != nil {
		return Plan{}, ferr
	}
	return all.Of(settings.Shard), nil
}

// Slack is how much longer than its estimate any part of a run may take
// before its timeout calls it stuck: estimates are for a quiet machine,
// and a spoiled cell is measured again (Settings.Remeasure).
const Slack = 2

// Timeout bounds a part of the run estimated at d: Slack times it, plus
// ten minutes for what no estimate sees (a slow image load, a retry).
func Timeout(d time.Duration) time.Duration { return Slack*d + 10*time.Minute }

// Write prints the plan: a line per scenario (cells, batches, Pod
// recipes, the heaviest batch's load, estimate), the slowest batches, and
// the whole.
func (p Plan) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCELLS\tDISRUPTIONS\tDEPLOYMENTS\tLOAD\tESTIMATE\tSLOWEST BATCH")
	var order []string
	for _, b := range p.Batches {
		if !slices.Contains(order, b.Scenario) {
			order = append(order, b.Scenario)
		}
	}
	for _, name := range order {
		cells, batches, pods, load := 0, 0, 0, 0
		var slowest PlannedBatch
		for _, b := range p.Batches {
			if b.Scenario != name {
				continue
			}
			cells += len(b.Cells)
			batches++
			pods += b.PodRecipes
			load = max(load, b.Load)
			if b.Estimate > slowest.Estimate {
				slowest = b
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d/s\t%s\t%s (%s)\n", name, cells, batches, pods, load, minutes(p.ScenarioEstimate(name)),
			minutes(slowest.Estimate), models(slowest.Cells))
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t\t\t%s\ttimeout %s\n", p.Cells(), len(p.Batches), minutes(p.Estimate()), minutes(Timeout(p.Estimate())))
	return tw.Flush()
}

func models(cells []Cell) string {
	var out []string
	for _, c := range cells {
		if !slices.Contains(out, c.Model.Name) {
			out = append(out, c.Model.Name)
		}
	}
	return strings.Join(out, ",")
}

// minutes is d as "12.5 min".
func minutes(d time.Duration) string { return fmt.Sprintf("%.1f min", d.Minutes()) }
