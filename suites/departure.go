package suites

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/kubevip"
	"zerodrop.dev/zerodrop/harness/recipe"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// departure is how a node leaves the cluster when no person runs the
// disruption (node-shutdown, spot-interruption, consolidation): the steps
// the cloud and the cluster's tools take, in this order, as data. The
// machine always ends (powered off, then its Node deleted and the machine
// destroyed, as a cloud's node lifecycle controller deletes the Node of an
// instance that is gone); everything before that is what its tools do to
// soften it.
type departure struct {
	// What is the disruption in a reader's words (the run's disruption
	// event).
	What string
	// Notice is the time from the cloud's interruption notice to the
	// machine's end (zero: no notice).
	Notice time.Duration
	// Taint is put on the node first (an autoscaler's "this node goes").
	Taint *corev1.Taint
	// Exclude, when set, is the value the tool labels the node
	// node.kubernetes.io/exclude-from-external-load-balancers with
	// (Karpenter: "karpenter"; aws-node-termination-handler with
	// --exclude-from-load-balancers: its own name), which the service
	// controller reads to take it out of every LB.
	Exclude string
	// Drain cordons and drains the node (evictions honour
	// PodDisruptionBudgets) before the machine ends.
	Drain bool
	// Grace is the kubelet's graceful node shutdown on the node when its
	// machine shuts down (zero: off, the kubelet's default).
	Grace cluster.ShutdownGrace
	// By names who does the steps before the machine's end (the tool), for
	// the events.
	By string
}

// duration is the disruption's own time on the clock, before the LB's
// lag: the notice (or the drain, when there is none), the Pods' grace on
// shutdown, the machine's power-off. Without the kubelet's grace systemd
// stops what still runs itself: Pods no drain took keep their own delays
// after its SIGTERM (measured 24-40 s in spot-interruption), and a
// process that ignores it holds the machine (Costs.Held).
func (d departure) duration(k Costs, t cellTimes) time.Duration {
	own := d.Notice
	if d.Drain {
		own = max(own, t.accepting+k.Terminate)
	}
	off := k.PowerOff
	if d.Grace.Period > 0 {
		own += min(d.Grace.Period, t.accepting+k.Terminate+d.Grace.CriticalPods)
	} else {
		if !d.Drain {
			off = max(off, min(t.accepting+k.Terminate, systemdStopTimeout))
		}
		off = max(off, k.Held+k.PowerOff)
	}
	return own + off + tmNodeDeletion
}

// scenario is sc with what every departure shares, derived from d: a
// user's workload meets it as written; it replaces a machine (so the
// existing provider cannot run it); its cases, body and cost are the
// departure's; what it does to the Pods is an eviction where the tool
// drains first, else the node's shutdown with the kubelet's grace, which
// the hardened recipe follows and the doctor judges a workload by.
func (d departure) scenario(sc Scenario) Scenario {
	sc.Own, sc.NeedsNodepools = true, true
	sc.Cases = departureCases()
	if d.Drain {
		sc.Triggers = []incident.Trigger{incident.PodTermination, incident.Eviction}
		if d.Taint != nil && d.Exclude == "" {
			sc.Triggers = append(sc.Triggers, incident.NodeRemoval)
		}
		sc.Fate = recipe.Leaves
	} else {
		g := d.Grace
		sc.Triggers = []incident.Trigger{incident.PodTermination, incident.NodeShutdown}
		sc.Fate, sc.NodeShutdown = recipe.ShutsDown, &g
	}
	sc.Body = func(ctx context.Context, s *Suite, sc Scenario, cells []Cell) []scenario.Result {
		return runDeparture(ctx, s, sc, cells, d)
	}
	if d.held() {
		// kube-vip-bgp holds its batch's machine (Costs.Held); every other
		// batch parks it (parkKubeVIPBGP).
		sc.Last = kubeVIPBGPModel
	}
	sc.Cost = departureCost(d)
	// Every departure ends the node, whose speaker's routes the BGP
	// router then withdraws.
	sc.Limits = append(sc.Limits, rehashLimits()...)
	// kube-vip's ARP lease stays on the leaving machine until it goes.
	sc.Limits = append(sc.Limits, kubeVIPDepartsLimits()...)
	return sc
}

// evictionRace is the naive cells' expectation where a departure drains:
// an evicted Pod that exits at once is refused what is still sent to it
// until its endpoint goes, and with keep-alive whether a request is in
// flight then is a race; measured says what one run showed.
func evictionRace(measured string) []Prevention {
	return []Prevention{{Hardening: fixtures.Naive, Race: true,
		Why: "an evicted naive Pod exits at once and is refused what kube-proxy and the LB still send it until its " +
			"endpoint goes: with keep-alive, whether a request is in flight then is a race the run does not control (" +
			measured + ")"}}
}

// evictionHazard is what a naive cell of a departure that drains shows.
const evictionHazard = "evicted Pods that exit at once refuse what is still sent to them, as in a drain"

// departureCost is a departure's plan estimate for one cell: the steps,
// the replacement Pods elsewhere, the LB's lag after the machine is gone,
// and the machine's replacement (a node joins, as a pool's does).
func departureCost(d departure) CellCost {
	return func(tm Timing, k Costs, c Cell, t cellTimes) time.Duration {
		var park time.Duration
		if k.parks && d.held() {
			// A batch without kube-vip-bgp's cells parks it off the
			// machine first (parkKubeVIPBGP, Costs.forBatch).
			park = k.Parked
		}
		own := park + d.duration(k, t)
		return own + t.replacement(k) + t.leaves(tm, own, t.replacement(k)) + k.PoolAdd
	}
}

// departureCases are a departure's cases: each policy naive and hardened,
// with keep-alive as in drain-node (a kept-alive connection through the
// leaving node is cut or closed, and the client's next one is new). A
// connection per request for every cell of a departure's batch (24 cells,
// 900 new connections a second) saturated this 2-core bench: the kernel
// took 60 % of the CPU, the load generator stalled and the LB's health
// checks of untouched nodes timed out, before any disruption (2026-11-28).
func departureCases() []Case { return matrix(clusterPolicy, localPolicy) }

// runDeparture is the body of every departure: one node, the one that holds
// endpoints of the most witnesses (sharedTarget, as drain-node picks), leaves
// under all of them; its machine is replaced afterwards under the same name
// and pool, so later scenarios find the default topology.
func runDeparture(ctx context.Context, s *Suite, sc Scenario, cells []Cell, d departure) []scenario.Result {
	if err := d.Grace.Validate(); err != nil {
		return failEvery(cells, err)
	}
	if d.Grace.Period > 0 {
		// Every worker gets the grace before the witnesses begin, since the
		// node that leaves is chosen by where their Pods land; a kubelet
		// restart leaves its running Pods alone.
		workers, err := s.workers(ctx)
		if err != nil {
			return failEvery(cells, err)
		}
		if err := s.eachNode(ctx, workers, func(ctx context.Context, n string) error {
			return s.Provider.SetShutdownGrace(ctx, n, d.Grace)
		}); err != nil {
			return failEvery(cells, fmt.Errorf("%s: %w", sc.Name, err))
		}
		s.Cleanup(func(ctx context.Context) error {
			now, err := s.workers(ctx)
			if err != nil {
				return err
			}
			return s.eachNode(ctx, now, func(ctx context.Context, n string) error {
				return s.Provider.SetShutdownGrace(ctx, n, cluster.ShutdownGrace{})
			})
		})
	}
	ws := s.Begin(ctx, cells, func(c Cell) scenario.Spec { return s.spec(sc, c, fixtures.WithReplicas(3)) })
	if err := ws.Settle(ctx, s.Timing.Baseline); err != nil {
		return s.abandon(ctx, ws, err)
	}
	choice := sharedTarget(ctx, ws, cells, func(node string) string { return node }, "nodes",
		func(node string) string { return sc.Name + ": the departure of " + node })
	node := choice.Target
	if node == "" {
		return s.abandon(ctx, ws, fmt.Errorf("%s: no witness has an endpoint with a node name", sc.Name))
	}
	k := ws.Kube()
	k.Note("node/"+node, "chosen to leave: "+choice.Why())
	n, err := s.Env.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return s.abandon(ctx, ws, fmt.Errorf("%s: read node %s: %w", sc.Name, node, err))
	}
	pool, like := n.Labels[contract.PoolLabel], shapeOf(n)
	if pool == "" {
		return s.abandon(ctx, ws, fmt.Errorf("%s: node %s belongs to no pool, so it cannot be replaced afterwards", sc.Name, node))
	}
	// The machine comes back under the same name and pool, as a managed
	// instance group recreates an instance it lost.
	s.Cleanup(func(ctx context.Context) error { return s.replaceNode(ctx, node, pool, like) })

	if d.held() {
		if err := s.parkKubeVIPBGP(ctx, k, cells, node); err != nil {
			return s.abandon(ctx, ws, fmt.Errorf("%s: %w", sc.Name, err))
		}
	}

	ws.Disrupt(d.What + ": " + node)
	var notice time.Time
	if d.Notice > 0 {
		notice = time.Now()
		_ = ws.Events().Event(zdv1.Event{Time: notice, Source: zdv1.SourceHarness, Type: zdv1.EventInterruptionNotice,
			Object: "node/" + node, Message: fmt.Sprintf("the cloud will take this node's machine in %s", d.Notice),
			Fields: map[string]string{"notice": d.Notice.String()}})
	}
	if d.Taint != nil {
		t := *d.Taint
		if t.Value == "" && t.Key == contract.TaintToBeDeletedByClusterAutoscaler {
			// The cluster autoscaler's value is the Unix time of the taint.
			t.Value = fmt.Sprint(time.Now().Unix())
		}
		if err := k.Taint(ctx, node, t, d.By); err != nil {
			return s.abandon(ctx, ws, err)
		}
	}
	if d.Exclude != "" {
		if err := k.Label(ctx, node, corev1.LabelNodeExcludeBalancers, d.Exclude, d.By); err != nil {
			return s.abandon(ctx, ws, err)
		}
	}
	if d.Drain {
		res := k.Drain(ctx, node, s.drainTimeout(ws, s.Timing.NodeDrain))
		if !res.Completed {
			// The machine ends anyway: what a budget still holds there dies
			// with it, as on a cloud (Karpenter's terminationGracePeriod,
			// the end of a spot notice).
			k.Note("node/"+node, fmt.Sprintf("drain gave up after %s (%v); pods left on the node end with its machine: %s",
				res.Took.Round(time.Second), res.Err, strings.Join(res.Remaining, ", ")))
		}
	}
	if d.Notice > 0 {
		if wait := time.Until(notice.Add(d.Notice)); wait > 0 {
			k.Note("node/"+node, fmt.Sprintf("waiting %s for the end of the notice", wait.Round(time.Second)))
			if err := waitfor.Sleep(ctx, wait); err != nil {
				return s.abandon(ctx, ws, err)
			}
		}
	}
	if err := s.Provider.PowerOff(ctx, node, d.Grace.Period+s.Timing.PowerOff); err != nil {
		return s.abandon(ctx, ws, fmt.Errorf("%s: %w", sc.Name, err))
	}
	// The cloud's node lifecycle controller deletes the Node of an
	// instance that is gone on its next pass, not at once.
	k.Note("node/"+node, fmt.Sprintf("the node lifecycle controller notices the machine is gone within %s", s.Timing.NodeDeletion))
	if err := waitfor.Sleep(ctx, s.Timing.NodeDeletion); err != nil {
		return s.abandon(ctx, ws, err)
	}
	if err := s.Provider.RemoveNode(ctx, node); err != nil {
		return s.abandon(ctx, ws, fmt.Errorf("%s: %w", sc.Name, err))
	}
	ws.Each(ctx, func(ctx context.Context, _ int, r *scenario.Run) error {
		return r.Kube.WaitWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, s.rolloutTimeout(r))
	})
	return ws.Finish(ctx, s.settleEach(cells))
}

// parkTimeout bounds parking kube-vip-bgp on a node: its Pod ends at its
// grace, 30 s (measured 30.0-30.9 s, docs/kube-vip.md), and the kubelet
// of a busy machine reports it late.
const parkTimeout = time.Minute

// held says whether a process that does not end on SIGTERM holds the
// leaving machine: without the kubelet's graceful node shutdown nothing
// kills it before systemd's stop timeout (Costs.Held).
func (d departure) held() bool { return d.Grace.Period == 0 }

// parkKubeVIPBGP takes kube-vip-bgp off the machine that leaves when no
// cell of the batch measures it and the machine leaves without the
// kubelet's grace, before the disruption begins (so what it does to the
// other columns' traffic, if anything, is the ground, not the workload's).
// In BGP mode kube-vip v0.9.2 does not end on SIGTERM, so a machine that
// shuts down with it waits for systemd's stop timeout: left there, it
// would hold every column's departure 90 s and lose them two to six times
// the requests (docs/kube-vip.md, measured). Parking costs its Pod's grace
// instead (Costs.Parked). A batch with kube-vip-bgp's cells keeps it: the
// hold is that column's own, and the plan charges it only there
// (Costs.Held). A cluster without it (any but kind with LB=all) has nothing
// to park.
func (s *Suite) parkKubeVIPBGP(ctx context.Context, k *kube.Client, cells []Cell, node string) error {
	if measuresKubeVIPBGP(cells) {
		return nil
	}
	took, err := kubevip.Park(ctx, s.Env.Clientset, contract.KubeVIPBGPDaemonSet, contract.KubeVIPBGPParkedLabel, node, parkTimeout)
	if errors.Is(err, kubevip.ErrNotInstalled) {
		return nil
	}
	if errors.Is(err, kubevip.ErrNotParkable) {
		// A cluster made before the affinity: the batch pays the hold, as
		// it did then, and says so.
		k.Note("node/"+node, "kube-vip-bgp left on this node, so it holds the machine's shutdown for systemd's stop timeout: "+err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	k.Note("node/"+node, fmt.Sprintf("kube-vip-bgp parked off this node in %s (label %s): no witness of this disruption "+
		"measures it, and its process does not end on SIGTERM, so it would hold the machine's shutdown for systemd's "+
		"stop timeout (%s) under every column (docs/kube-vip.md); the machine's replacement runs it again",
		took.Round(time.Millisecond), contract.KubeVIPBGPParkedLabel, systemdStopTimeout))
	return nil
}

// workers are the cluster's nodes that belong to a pool (never the
// control plane).
func (s *Suite) workers(ctx context.Context) ([]string, error) {
	nodes, err := s.Provider.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if n.Pool != "" {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// eachNode runs f on every node at once and joins their errors.
func (s *Suite) eachNode(ctx context.Context, nodes []string, f func(context.Context, string) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(ctx, n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// replaceNode brings a node that left back under its name and pool as a
// new machine. It always does, since a departure that stopped half-way
// leaves the node tainted, labelled out of the LBs, cordoned or powered
// off with its Node still there, none of which a later scenario may meet;
// RemoveNode takes whichever of the Node and the machine is left.
func (s *Suite) replaceNode(ctx context.Context, node, pool string, like PoolShape) error {
	if err := s.Provider.RemoveNode(ctx, node); err != nil {
		return err
	}
	return s.Provider.AddNode(ctx, pool, node, like.Labels, like.Taints)
}
