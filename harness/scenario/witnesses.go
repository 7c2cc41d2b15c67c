package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// Witnesses are the runs that watch one disruption. Each witness is a whole
// Run of its own (namespace, workload, Service, load stream, run file and
// verdict), so one disruption of the cluster answers as many questions as
// there are witnesses: the same drain seen through every LB model, both
// traffic policies, a naive and a hardened workload.
//
// A node-level disruption (drain a node, replace a pool) happens once, through
// Kube, and is recorded in every witness's run file; every witness whose pods
// live there sees it. A workload-level one (a rollout restart, a pod turned
// unready) starts in every witness at the same moment, through Each.
//
//	ws := scenario.BeginWitnesses(ctx, env, specs, 8)
//	defer ws.Cleanup(ctx)
//	ws.Settle(ctx, 5*time.Second)
//	ws.Disrupt("drain " + node)               // what fails before this is the ground
//	ws.Kube().Drain(ctx, node, timeout)       // once, seen by all
//	ws.Each(ctx, func(ctx context.Context, i int, r *Run) error {
//		return r.Kube.RestartWorkload(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Workload, timeout)
//	})
//	results := ws.Finish(ctx, func(ctx context.Context, i int, r *Run) error {
//		return r.AwaitLB(ctx, lag, 5*time.Second)
//	})
//
// A witness that fails (to begin, or in a step of its own) is set aside with
// its error and its run file closed with it; the others go on.
type Witnesses struct {
	specs []Spec
	runs  []*Run
	errs  []error
	kube  *kube.Client
	fan   *fanout
	// sharedNS are the namespaces of Pods shared by witnesses
	// (Spec.SharePods): Cleanup deletes them once every witness has gone.
	sharedNS []string
	log      *slog.Logger
}

// Result is one witness's outcome: its scenario and verdict, or the error
// that kept it from having one.
type Result struct {
	Scenario zdv1.Scenario
	Err      error
}

// BeginWitnesses begins every spec, at most parallel at a time (all at once
// when parallel < 1), and returns once each has either begun or failed. The
// cluster client is env's.
func BeginWitnesses(ctx context.Context, env *Env, specs []Spec, parallel int) *Witnesses {
	env.defaults()
	w := &Witnesses{specs: specs, runs: make([]*Run, len(specs)), errs: make([]error, len(specs)), fan: &fanout{}, log: env.Logger}
	w.sharedNS = w.checkShared()
	if parallel < 1 {
		parallel = len(specs)
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				w.errs[i] = fmt.Errorf("scenario %s: not begun: %w", sp.Name, ctx.Err())
				return
			}
			defer func() { <-sem }()
			if w.errs[i] != nil {
				return
			}
			w.runs[i], w.errs[i] = begin(ctx, env, sp, sp.SharePods)
		}()
	}
	wg.Wait()
	// Every load starts once every witness has begun: a witness deploying,
	// creating its Service (kube-proxy then syncs every node) and settling
	// its LB while others already send load stalled their load generators
	// (measured: 31 of 32 streams of one batch 84-89 ms behind their
	// schedule, 20 ms, as the last witness began), which the load check
	// rightly calls unmeasured.
	for i, r := range w.runs {
		if w.errs[i] != nil || r == nil {
			continue
		}
		if err := r.startLoad(); err != nil {
			r.abort(ctx, err)
			w.runs[i], w.errs[i] = nil, err
		}
	}
	w.fan.runs = w.runs
	w.kube = kube.New(env.Clientset, kube.WithEventSink(w.fan))
	return w
}

// checkShared sets aside every witness that asks to share Pods with
// another in its namespace but would build other Pods (fixtures.SamePods
// against the first of that namespace): sharing them would measure one
// witness's workload under another's name. It returns the namespaces
// shared.
func (w *Witnesses) checkShared() []string {
	first := map[string]fixtures.Config{}
	var out []string
	for i, sp := range w.specs {
		if !sp.SharePods || sp.StandIn != nil {
			continue
		}
		cfg, err := fixtures.NewConfig(sp.Workload...)
		if err != nil {
			continue // Begin says what is wrong with it
		}
		f, seen := first[cfg.Namespace]
		if !seen {
			first[cfg.Namespace] = cfg
			out = append(out, cfg.Namespace)
			continue
		}
		if !fixtures.SamePods(f, cfg) {
			w.errs[i] = fmt.Errorf("scenario %s: shares namespace %s with %s but its workload builds other Pods (%s, not %s): not begun",
				sp.Name, cfg.Namespace, f.Name, cfg, f)
		}
	}
	return out
}

// Run is witness i's run, or the error that set it aside.
func (w *Witnesses) Run(i int) (*Run, error) {
	if w.errs[i] != nil {
		return nil, w.errs[i]
	}
	return w.runs[i], nil
}

// Live lists the indexes of the witnesses still running.
func (w *Witnesses) Live() []int {
	var out []int
	for i := range w.specs {
		if w.errs[i] == nil && w.runs[i] != nil && !w.runs[i].stopped {
			out = append(out, i)
		}
	}
	return out
}

// Kube acts on the cluster once and records each step in the run file of
// every live witness: the client for node-level disruptions.
func (w *Witnesses) Kube() *kube.Client { return w.kube }

// Events records an event in every live witness's run file (a cluster
// provider's steps, a note about a shared choice).
func (w *Witnesses) Events() zdv1.EventSink { return w.fan }

// Fail sets witness i aside: its load stops now, and its run file is closed
// with err when the witnesses finish (Finish or Cleanup); err becomes its
// result. The others go on.
func (w *Witnesses) Fail(i int, err error) {
	if w.errs[i] != nil {
		return
	}
	w.errs[i] = err
	if r := w.runs[i]; r != nil && !r.stopped {
		r.halt(err)
	}
}

// Each runs f on every live witness at once and waits for all; a witness
// whose f fails is set aside with that error.
func (w *Witnesses) Each(ctx context.Context, f func(ctx context.Context, i int, r *Run) error) {
	live := w.Live()
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for k, i := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = f(ctx, i, w.runs[i])
		}()
	}
	wg.Wait()
	for k, i := range live {
		if errs[k] != nil {
			w.Fail(i, errs[k])
		}
	}
}

// EachWorkload runs f once per workload of the live witnesses (witnesses
// that share Pods share it: Spec.SharePods), with the first of them, at
// once, and waits for all; f gets every live witness of that workload
// (sharers, in order). When f fails, every witness of the workload is set
// aside with that error. A workload-level disruption (a rollout restart,
// a scale-down) goes through it, so shared Pods are disrupted once.
func (w *Witnesses) EachWorkload(ctx context.Context, f func(ctx context.Context, sharers []int, r *Run) error) {
	type key struct{ ns, kind, name string }
	var order []key
	groups := map[key][]int{}
	for _, i := range w.Live() {
		t := w.runs[i].Target
		k := key{t.Namespace, t.Kind, t.Workload}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for n, k := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[n] = f(ctx, groups[k], w.runs[groups[k][0]])
		}()
	}
	wg.Wait()
	for n, k := range order {
		if errs[n] != nil {
			for _, i := range groups[k] {
				w.Fail(i, errs[n])
			}
		}
	}
}

// Disrupt marks, in every live witness's run file, that the disruption
// begins now (what says which): call it just before its first step.
// Whatever failed before it failed with nothing disrupted yet, and the
// verdict calls that the ground moving, never the workload's hazard.
func (w *Witnesses) Disrupt(what string) {
	_ = w.fan.Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventDisruption, Message: what})
}

// Settle keeps every live witness's load running for d (or until ctx is
// done).
func (w *Witnesses) Settle(ctx context.Context, d time.Duration) error {
	if err := waitfor.Sleep(ctx, d); err != nil {
		return fmt.Errorf("witnesses settling for %s: %w", d, err)
	}
	return nil
}

// Finish runs each live witness's settle (Run.AwaitLB for its own LB's lag,
// say; nil settles nothing) with its load still running, and then stops its
// load: the witnesses of a fast LB stop early and leave the machine to the
// slow ones. The run files are closed (and sealed) and the verdicts
// analysed only once every load has stopped: both read a whole run file,
// and doing so while other witnesses still sent load stalled their load
// generators (analysis: 80-200 ms; the seals of the first loads to end: 1-2
// s, requests timed out; measured on 2 cores). It returns every witness's
// result, in the order of the specs.
func (w *Witnesses) Finish(ctx context.Context, settle func(ctx context.Context, i int, r *Run) error) []Result {
	out := make([]Result, len(w.specs))
	var wg sync.WaitGroup
	live := w.Live()
	for _, i := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := w.runs[i]
			if settle != nil {
				if err := settle(ctx, i, r); err != nil {
					w.Fail(i, err)
					return
				}
			}
			r.stop()
		}()
	}
	wg.Wait()
	// Every load has stopped: closing, sealing and analysing now take
	// nothing from a measurement. A witness set aside earlier is closed
	// here too, with its error.
	for i, r := range w.runs {
		if r == nil || r.finished {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.stop()
			if err := r.close(); err != nil {
				out[i] = Result{Err: err}
			}
		}()
	}
	wg.Wait()
	for _, i := range live {
		if w.errs[i] == nil && out[i].Err == nil {
			sc, err := w.runs[i].analyze(ctx)
			out[i] = Result{Scenario: sc, Err: err}
		}
	}
	for i, err := range w.errs {
		if err != nil {
			out[i] = Result{Err: err}
		}
	}
	return out
}

// Cleanup deletes every witness's namespace, all at once, and waits for
// them to go: a witness's own, then those of shared Pods.
func (w *Witnesses) Cleanup(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range w.runs {
		if r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Cleanup(ctx)
		}()
	}
	wg.Wait()
	for _, ns := range w.sharedNS {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.kube.DeleteNamespace(context.WithoutCancel(ctx), ns, namespaceDeletion); err != nil {
				w.log.Warn("cleanup", "namespace", ns, "err", err)
			}
		}()
	}
	wg.Wait()
}

// fanout sends an event to every live witness's run file.
type fanout struct {
	runs []*Run
}

func (f *fanout) Event(e zdv1.Event) error {
	var errs []error
	for _, r := range f.runs {
		if r == nil {
			continue
		}
		if err := r.sink.Event(e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
