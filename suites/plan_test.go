package suites

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/recipe"
)

func planSettings(t *testing.T, shard Shard) Settings {
	t.Helper()
	s, err := SettingsFromEnv(func(k string) string {
		return map[string]string{"LB": "all"}[k]
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Witnesses, s.MachineWitnesses, s.Shard = 4, 3, shard
	return s
}

// The shards of a plan are disjoint and together the whole plan; each
// ends within one batch of the others (longest first, to the least
// loaded); each runs the controls of the columns it has cells of.
func TestPlanShardsBalanceAndCover(t *testing.T) {
	whole, err := PlanFor(planSettings(t, Shard{}), "")
	if err != nil {
		t.Fatal(err)
	}
	cellNames := func(p Plan, control bool) []string {
		var out []string
		for _, b := range p.Batches {
			if (b.Scenario == controlName) != control {
				continue
			}
			for _, c := range b.Cells {
				out = append(out, b.Scenario+"/"+c.Name())
			}
		}
		slices.Sort(out)
		return out
	}
	const n = 3
	var union []string
	var loads []time.Duration
	var longest time.Duration
	for _, b := range whole.Batches {
		longest = max(longest, b.Estimate)
	}
	for i := 1; i <= n; i++ {
		p, err := PlanFor(planSettings(t, Shard{Index: i, Count: n}), "")
		if err != nil {
			t.Fatal(err)
		}
		union = append(union, cellNames(p, false)...)
		var work time.Duration
		columns := map[string]bool{}
		for _, b := range p.Batches {
			if b.Scenario != controlName {
				work += b.Estimate
				for _, c := range b.Cells {
					columns[controlKey(c)] = true
				}
			}
		}
		loads = append(loads, work)
		for col := range columns {
			found := false
			for _, b := range p.Batches {
				for _, c := range b.Cells {
					found = found || (b.Scenario == controlName && controlKey(c) == col)
				}
			}
			if !found {
				t.Errorf("shard %d/%d has cells of column %s but not its control", i, n, col)
			}
		}
		if p.Cells() == 0 {
			t.Errorf("shard %d/%d is empty", i, n)
		}
	}
	slices.Sort(union)
	if want := cellNames(whole, false); !slices.Equal(union, want) {
		t.Errorf("shards hold %d cells, the whole plan %d: not disjoint and whole", len(union), len(want))
	}
	if lo, hi := slices.Min(loads), slices.Max(loads); hi-lo > longest {
		t.Errorf("shard work %v: spread %v exceeds the longest batch %v", loads, hi-lo, longest)
	}
}

// The plan's estimates follow the recipes: no batch waits out gclb's
// default 10 x 60 s check, since its hardened Local cells ask for
// kube-proxy's check (a BackendConfig) and its naive ones, documenting,
// watch at most Timing.HazardWatch; a naive gclb Local drain still waits
// that watch.
func TestPlanEstimatesFollowTheMechanism(t *testing.T) {
	p, err := PlanFor(planSettings(t, Shard{}), "")
	if err != nil {
		t.Fatal(err)
	}
	tm, k := DefaultTiming(), DefaultCosts()
	budget := map[bool]int{false: p.Witnesses, true: planSettings(t, Shard{}).MachineWitnesses}
	for _, b := range p.Batches {
		i := slices.IndexFunc(Scenarios(), func(sc Scenario) bool { return sc.Name == b.Scenario })
		if i < 0 {
			t.Fatalf("batch of an unknown scenario %q", b.Scenario)
		}
		sc := Scenarios()[i]
		if len(b.Cells) > budget[sc.NeedsNodepools] {
			t.Errorf("%s batch %s: %d witnesses, over the budget %d of a scenario that changes machines: %t", b.Scenario, models(b.Cells), len(b.Cells), budget[sc.NeedsNodepools], sc.NeedsNodepools)
		}
		if b.Estimate <= 0 || b.PodRecipes < 1 || b.PodRecipes > len(b.Cells) {
			t.Errorf("%s batch %s: estimate %v, %d recipes for %d cells", b.Scenario, models(b.Cells), b.Estimate, b.PodRecipes, len(b.Cells))
		}
		if b.Estimate >= 10*time.Minute {
			t.Errorf("%s batch %s: estimate %v, the length of gclb's default lag", b.Scenario, models(b.Cells), b.Estimate)
		}
		for _, c := range b.Cells {
			if b.Scenario == "drain-node" && c.Model.Name == "gclb" && c.Policy == localPolicy && c.Hardening == fixtures.Naive {
				if got := drainNode().cost(tm, k, c); got < tm.HazardWatch {
					t.Errorf("naive gclb Local drain costs %v, less than the hazard watch %v it waits", got, tm.HazardWatch)
				}
			}
		}
	}
	if to := Timeout(p.Estimate()); to < p.Estimate() {
		t.Errorf("timeout %v below the estimate %v", to, p.Estimate())
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil || !strings.Contains(buf.String(), "total") || !strings.Contains(buf.String(), "drain-node") {
		t.Errorf("plan text: %v\n%s", err, buf.String())
	}
}

// A label filter selects the plan's cells: the smoke is a handful.
func TestPlanFollowsTheLabelFilter(t *testing.T) {
	s := planSettings(t, Shard{})
	s.LB = "metallb"
	p, err := PlanFor(s, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells() == 0 || p.Cells() > 4 {
		t.Errorf("smoke plan has %d cells", p.Cells())
	}
	if _, err := PlanFor(s, "(("); err == nil {
		t.Error("a bad label filter was accepted")
	}
}

// The LB's lag runs from the moment its check starts failing: at the
// start of termination for a check of the healthCheckNodePort (ready
// endpoints only), at the Pod's exit for a check through the NodePort
// (gclb's default), which reaches a terminating endpoint while it serves.
// A hardened drain on gcp-nlb overlaps its preStop with the lag; gclb's
// hardened Pods ask for kube-proxy's check (a BackendConfig) and meet the
// same mechanism on gke-l4's timing; its naive Pods keep the default check
// and, documenting, are watched for Timing.HazardWatch, not its 10 minutes.
func TestLagRunsFromWhereTheCheckFails(t *testing.T) {
	ms, err := Settings{LB: "cloud", LBProfiles: []string{"gcp-nlb", "gclb"}}.Models()
	if err != nil {
		t.Fatal(err)
	}
	tm, k := DefaultTiming(), DefaultCosts()
	got := map[string]time.Duration{}
	for _, c := range drainNode().Cells(ms) {
		if c.Policy != localPolicy {
			continue
		}
		tc := timesOf(tm, c, drainNode().Fate)
		fromExit := c.Model.Name == "gclb" && c.Hardening == fixtures.Naive
		if tc.lagFromExit != fromExit {
			t.Errorf("%s: lag from the exit %v, want %v", c.Name(), tc.lagFromExit, fromExit)
		}
		if fromExit && tc.watch != tm.HazardWatch {
			t.Errorf("%s: watched %v, want the hazard watch %v", c.Name(), tc.watch, tm.HazardWatch)
		}
		if c.Hardening == fixtures.Hardened {
			got[c.Model.Name] = drainNode().cost(tm, k, c)
		}
	}
	if g := timesOfModel(t, ms, "gcp-nlb", recipe.Leaves); got["gcp-nlb"] >= g.accepting+k.Terminate+k.PodStart+g.minReady+g.removal+tm.SettleMargin {
		t.Errorf("gcp-nlb: %v, its drain and its lag one after the other: they overlap", got["gcp-nlb"])
	}
	check := profiles.KubeProxyCheck()
	// The hook covers the check and the margin; then the app goes unready
	// and keeps accepting until kube-proxy has seen it (the fast probe's
	// three failures and the margin again).
	unreadySeen := recipe.ServingProbePeriod*recipe.ServingProbeFailureThreshold + recipe.KubeProxyMargin
	for _, fate := range []recipe.Fate{recipe.Leaves, recipe.Replaced} {
		g := timesOfModel(t, ms, "gclb", fate)
		if want := check.DetectionTime() + recipe.KubeProxyMargin + unreadySeen; g.removal != check.DetectionTime() || g.accepting != want {
			t.Errorf("gclb %s: lag %v, hardened Pods accept %v; want kube-proxy's check %v and accepting %v",
				fate, g.removal, g.accepting, check.DetectionTime(), want)
		}
	}
	if drainNode().Fate != recipe.Leaves || rollingUpdate().Fate != recipe.Replaced {
		t.Error("drain-node must leave the node, rolling-update replace its Pods")
	}
}

func timesOfModel(t *testing.T, ms []Model, name string, fate recipe.Fate) cellTimes {
	t.Helper()
	for _, c := range drainNode().Cells(ms) {
		if c.Model.Name == name && c.Policy == localPolicy && c.Hardening == fixtures.Hardened {
			return timesOf(DefaultTiming(), c, fate)
		}
	}
	t.Fatalf("no %s local hardened cell", name)
	return cellTimes{}
}

// A cluster that runs kube-vip in BGP mode (LB=all, the default) holds a
// machine's shutdown without the kubelet's grace for systemd's stop
// timeout where kube-vip-bgp still runs on it, so a batch with its cells
// costs that much more in the plan and the others its parking
// (node-shutdown's kubelet kills it within its grace); one made without
// kube-vip (ZERODROP_KUBE_VIP=0), with its ARP mode alone
// (ZERODROP_KUBE_VIP_BGP=0) or without BGP does not, nor does a departure
// that ends no machine.
func TestPlanCostsKubeVIPBGPShutdowns(t *testing.T) {
	with := planSettings(t, Shard{})
	without := with
	without.KubeVIP = false
	noBGP := with
	noBGP.BGP = false
	arpOnly := with
	arpOnly.KubeVIPBGP = false
	if !with.kubeVIPBGPRuns() || without.kubeVIPBGPRuns() || noBGP.kubeVIPBGPRuns() || arpOnly.kubeVIPBGPRuns() {
		t.Fatalf("kube-vip in BGP mode runs: %t with it, %t without, %t without BGP, %t with its ARP mode alone",
			with.kubeVIPBGPRuns(), without.kubeVIPBGPRuns(), noBGP.kubeVIPBGPRuns(), arpOnly.kubeVIPBGPRuns())
	}
	ms, err := with.Models()
	if err != nil {
		t.Fatal(err)
	}
	if with.costs().Parked <= 0 || with.costs().Parked >= systemdStopTimeout {
		t.Fatalf("parking costs %v: want more than nothing, less than the hold it spares", with.costs().Parked)
	}
	tm := DefaultTiming()
	// Its hold falls on every cell of a batch that measures it; a batch
	// without its cells parks it off the leaving machine (parkKubeVIPBGP),
	// which costs its Pod's grace, where the kubelet's grace would not end
	// it.
	cellOf := func(sc Scenario, model string) Cell {
		i := slices.IndexFunc(sc.Cells(ms), func(c Cell) bool { return c.Model.Name == model })
		if i < 0 {
			t.Fatalf("%s has no cell of %s", sc.Name, model)
		}
		return sc.Cells(ms)[i]
	}
	for _, tt := range []struct {
		sc     Scenario
		models []string // the batch; the first is the cell costed
		adds   time.Duration
	}{
		{nodeShutdown(), []string{contract.LBKubeVIPBGP}, 0},
		{spotInterruption(), []string{contract.LBKubeVIPBGP}, systemdStopTimeout},
		{consolidation(), []string{contract.LBKubeVIPBGP}, systemdStopTimeout},
		{drainNode(), []string{contract.LBKubeVIPBGP}, 0},
		{spotInterruption(), []string{contract.LBMetalLB}, with.costs().Parked},
		{consolidation(), []string{contract.LBKubeVIPARP}, with.costs().Parked},
		{nodeShutdown(), []string{contract.LBMetalLB}, 0},
		// Beside kube-vip-bgp's cells, another column's pays the hold.
		{spotInterruption(), []string{contract.LBMetalLB, contract.LBKubeVIPBGP}, systemdStopTimeout},
	} {
		var batch []Cell
		for _, m := range tt.models {
			batch = append(batch, cellOf(tt.sc, m))
		}
		c := batch[0]
		if got := tt.sc.cost(tm, with.costs().forBatch(batch), c) - tt.sc.cost(tm, without.costs().forBatch(batch), c); got != tt.adds {
			t.Errorf("%s: kube-vip in BGP mode adds %v to %s in a batch of %v, want %v", tt.sc.Name, got, c.Name(), tt.models, tt.adds)
		}
	}
	// The departures it holds put its cells last, so the batches cut in
	// order put it in the last one, beside the fewest columns and never
	// beside the first ones; the others keep the models' order.
	for _, tt := range []struct {
		sc   Scenario
		last bool
	}{{spotInterruption(), true}, {consolidation(), true}, {spotInterruptionHandled(), true}, {nodeShutdown(), false}} {
		cells := tt.sc.Cells(ms)
		n := len(cells)
		tail := slices.IndexFunc(cells, func(c Cell) bool { return kubeVIPBGPModel(c.Model) })
		switch {
		case tail < 0:
			t.Fatalf("%s has no kube-vip-bgp cell", tt.sc.Name)
		case tt.last && slices.ContainsFunc(cells[tail:], func(c Cell) bool { return !kubeVIPBGPModel(c.Model) }):
			t.Errorf("%s: kube-vip-bgp's cells are not the last of %d", tt.sc.Name, n)
		case !tt.last && cells[0].Model.Name != ms[0].Name:
			t.Errorf("%s: cells begin with %s, want the models' order", tt.sc.Name, cells[0].Model.Name)
		}
	}
}
