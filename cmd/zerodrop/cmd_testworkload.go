package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/standin"
	"zerodrop.dev/zerodrop/internal/kubeversion"
	"zerodrop.dev/zerodrop/suites"
	"zerodrop.dev/zerodrop/suites/workloadtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ownCommand() command {
	return command{
		name:    "test",
		summary: "your own workload: the doctor predicts, a stand-in on a cluster measures, side by side",
		run: func(ctx context.Context, c *cli, args []string) int {
			return runOwn(ctx, c, os.Stdin, os.Getenv, args)
		},
	}
}

const ownDescription = `
Takes your manifests (a Deployment or StatefulSet, its Service of type
LoadBalancer, or the Service and Ingress of an ALB with IP targets or of GKE's
NEG backends, PodDisruptionBudgets, an HPA; files, directories, - for stdin;
multi-document YAML, Lists, kubectl get -o yaml output) and:

 1. runs the doctor and prints its prediction per disruption and LB model;
 2. builds a faithful stand-in: your Pod template and Service with every knob
    that decides drops kept as written (replicas, strategy, minReadySeconds,
    probes, hooks, grace, affinity, spread, tolerations, PDBs, traffic policy,
    LB annotations, ports) and each container replaced by the zerodrop echo
    server, which ends on SIGTERM the way the doctor reads your server (or as
    the --app-* flags say); every change is listed with its reason.
    --image=own runs your images as written instead (kind: from this
    machine's Docker; existing: pulled by the cluster), with the
    ConfigMaps, Secrets and ServiceAccount the Pods name taken from the
    input; the load then counts answers by status only (--path: one your
    server answers 200) and the readiness flip is left out;
 3. unless --dry-run, deploys it on the cluster (PROVIDER=kind makes one when
    none answers at --kubeconfig; 'make test-workload' builds the images
    first) and runs every disruption your workload can meet under load, once
    per LB model, and prints the measured drops next to the prediction,
    agreement or disagreement called out. A disagreement is a defect of the
    doctor or of the stand-in: please report it.

Exit status: 0 nothing dropped (or --dry-run), 1 something dropped, 2 bad
input (named by file and object; nothing is left in the cluster) or a run
that broke.`

// ownFlags are the flags of `zerodrop test`, parsed.
type ownFlags struct {
	lbs, only, render, outDir, signKey, namespace, kubeVersion string
	provider, kubeconfig, clusterName, fixOut, image, loadPath string
	dryRun, proveFix, appUnready, appKeepAlive                 bool
	appAccepts, appDrain, hook                                 time.Duration
	// modelled is the last flag given that models the app's ending
	// (--app-*, --hook); appSet says whether an --app-* flag was.
	modelled string
	appSet   bool
	paths    []string
}

// parseOwnFlags parses args; on bad input it has said why and returns
// false with the exit code.
func parseOwnFlags(c *cli, getenv func(string) string, args []string) (ownFlags, int, bool) {
	var f ownFlags
	fs := newFlagSet(c, "test", "[flags] FILE|DIR|-...", ownDescription)
	fs.StringVar(&f.lbs, "lb-profile", "", "LB models, comma-separated: metallb and the cloud LB's profiles (default: the one the Service's annotations imply, else all)")
	fs.StringVar(&f.only, "scenario", "", "disruptions to run, comma-separated (default: every one a workload can meet)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "predict and build the stand-in; deploy nothing")
	fs.StringVar(&f.render, "render", "", "write the stand-in's manifests to this `file` (- for stdout)")
	fs.StringVar(&f.outDir, "out", "out/test", "evidence `directory` (run files, report.json)")
	fs.StringVar(&f.signKey, "sign-key", "", "`PATH` of the Ed25519 private key that signs every run file (zerodrop keygen); default ZERODROP_SIGN_KEY, else this machine's key; none: unsigned")
	fs.StringVar(&f.namespace, "namespace", "", "namespace of manifests without one (default \"default\")")
	fs.StringVar(&f.namespace, "n", "", "shorthand for --namespace")
	fs.StringVar(&f.kubeVersion, "kubernetes-version", "", "judge for this Kubernetes version (default: the supported releases)")
	fs.StringVar(&f.provider, "provider", firstSet(getenv("PROVIDER"), "kind"), "kind (made when none answers) or existing")
	fs.StringVar(&f.kubeconfig, "kubeconfig", firstSet(getenv("ZERODROP_KUBECONFIG"), "out/kubeconfig"), "kubeconfig of the test cluster")
	fs.StringVar(&f.clusterName, "cluster-name", firstSet(getenv("CLUSTER_NAME"), "zerodrop"), "kind cluster name")
	fs.BoolVar(&f.appUnready, "app-unready-on-term", false, "your server fails readiness on SIGTERM (for a server the doctor does not know)")
	fs.DurationVar(&f.appAccepts, "app-accepts", 0, "your server keeps accepting this long after SIGTERM (for a server the doctor does not know)")
	fs.DurationVar(&f.appDrain, "app-drain", 0, "then gives in-flight requests this long (0: cuts them)")
	fs.BoolVar(&f.appKeepAlive, "app-keepalive", true, "your server keeps HTTP connections alive")
	fs.DurationVar(&f.hook, "hook", 0, "the stand-in sleeps this long for a preStop hook whose duration cannot be read (default: no hook)")
	fs.BoolVar(&f.proveFix, "prove-fix", false, "make the doctor's fixes on a copy, write it (--fix-out), and re-run the cells that dropped on it: before and after")
	fs.StringVar(&f.fixOut, "fix-out", "", "where --prove-fix writes the fixed objects (default: OUT/fixed.yaml)")
	fs.StringVar(&f.image, "image", "echo", "echo: the zerodrop echo server stands in for each container, ending as the doctor reads your server; own: your images run as written (kind: loaded from this machine's Docker; existing: pulled by the cluster), answers counted by status only")
	fs.StringVar(&f.loadPath, "path", "", "with --image=own: the path the load requests, one your server answers 200 (default /)")

	paths, code, ok := parseInterspersed(c, fs, args)
	if !ok {
		return f, code, false
	}
	if len(paths) == 0 {
		return f, badInput(c, "test", "give the manifests: FILE, DIR or - for stdin"), false
	}
	f.paths = paths
	fs.Visit(func(fl *flag.Flag) {
		if strings.HasPrefix(fl.Name, "app-") || fl.Name == "hook" {
			f.modelled = "--" + fl.Name
			f.appSet = f.appSet || fl.Name != "hook"
		}
	})
	switch f.image {
	case "echo":
		if f.loadPath != "" {
			return f, badInput(c, "test", "--path is for --image=own: the echo stand-in answers the load on a path no probe uses"), false
		}
	case "own":
		if f.modelled != "" {
			return f, badInput(c, "test", "%s models a server the echo stand-in plays; with --image=own your own server runs and ends as it does", f.modelled), false
		}
		if f.loadPath != "" && !strings.HasPrefix(f.loadPath, "/") {
			return f, badInput(c, "test", "--path %q: want an absolute path such as /healthz", f.loadPath), false
		}
	default:
		return f, badInput(c, "test", "--image %q: want echo (the stand-in) or own (your images as written)", f.image), false
	}
	return f, exitOK, true
}

// standInOptions are the stand-in's options the flags give.
func (f ownFlags) standInOptions(kv kubeversion.Version) standin.Options {
	opts := standin.Options{Namespace: "zd-own", UnknownHook: f.hook, Kubernetes: kv}
	if f.image == "own" {
		opts.OwnImage, opts.Path = true, f.loadPath
		if f.provider == "kind" {
			// Loaded into the nodes from this machine's Docker: never pulled.
			opts.PullPolicy = corev1.PullNever
		}
	} else if f.appSet {
		opts.App = &standin.Behaviour{UnreadyOnTerm: f.appUnready, KeepAccepting: f.appAccepts, Drain: f.appDrain, KeepAlive: f.appKeepAlive}
	}
	return opts
}

// ownRun is one `zerodrop test`: the user's manifests, their stand-in,
// the disruptions and LB models it meets, and the doctor's plan.
type ownRun struct {
	c        *cli
	f        ownFlags
	kv       kubeversion.Version // --kubernetes-version, zero when not given
	ms       *doctor.Manifests
	opts     standin.Options
	own      *standin.StandIn
	scs      []suites.Scenario
	settings suites.Settings
	models   []suites.Model
	progress func(string)
	plan     ownPlan
}

// ownPlan is the doctor's plan for a release: its predictions for the
// manifests (preds) and for the stand-in as deployed (expect) and, with
// --prove-fix, the fixed manifests, their stand-in and their predictions.
type ownPlan struct {
	preds, expect, fixedPreds, fixedExpect workloadtest.Predictions
	fixed                                  *standin.StandIn
	fixedMs                                *doctor.Manifests
	lastApplied                            string
	// unfixed still predict drops with the fixes, each with why.
	unfixed []workloadtest.Unfixed
}

func runOwn(ctx context.Context, c *cli, stdin io.Reader, getenv func(string) string, args []string) int {
	f, code, ok := parseOwnFlags(c, getenv, args)
	if !ok {
		return code
	}
	r, code, ok := prepareOwn(ctx, c, stdin, getenv, f)
	if !ok {
		return code
	}
	if r.replan(r.kv.Minor, false) != nil {
		return exitBroken
	}
	if f.dryRun {
		return exitOK
	}
	if code, ok := r.checkImages(ctx); !ok {
		return code
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sess, err := suites.Open(ctx, r.settings, logger, r.progress)
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return exitBroken
	}
	defer func() {
		if err := sess.Close(context.WithoutCancel(ctx), r.progress); err != nil {
			r.progress("close: " + err.Error())
		}
	}()
	if code, ok := r.onCluster(ctx, sess); !ok {
		return code
	}
	all := func(suites.Scenario, suites.Model) bool { return true }
	measured := workloadtest.Measure(ctx, sess, r.scs, suites.OwnHardening, r.own, r.plan.expect, all, r.progress)
	code = printMeasured(c.stdout, r.plan.expect, measured, r.scs, sess.Suite.Models, r.settings.OutDir)
	if f.proveFix && r.plan.fixed != nil {
		dropped := func(sc suites.Scenario, m suites.Model) bool {
			res, ok := measured[sc.Name+"/"+m.Name]
			return ok && res.Outcome() == zdv1.OutcomeHazardReproduced
		}
		after := workloadtest.Measure(ctx, sess, r.scs, suites.OwnFixedHardening, r.plan.fixed, r.plan.fixedExpect.WithUnfixed(r.plan.unfixed), dropped, r.progress)
		// A run that broke before the fix stays the exit code: the fix
		// cannot prove what was never measured.
		if fc := printBeforeAfter(c.stdout, workloadtest.BeforeAfter(measured, after, r.scs, sess.Suite.Models)); code != exitBroken {
			code = fc
		}
	}
	return code
}

// prepareOwn reads the manifests, builds the stand-in, picks the
// disruptions and LB models and prints the stand-in; on bad input it has
// said why and returns false with the exit code.
func prepareOwn(ctx context.Context, c *cli, stdin io.Reader, getenv func(string) string, f ownFlags) (*ownRun, int, bool) {
	r := &ownRun{c: c, f: f, progress: func(msg string) { fmt.Fprintln(c.stderr, "zerodrop test:", msg) }}
	if f.kubeVersion != "" {
		var err error
		if r.kv, err = kubeversion.Parse(f.kubeVersion); err != nil {
			return nil, badInput(c, "test", "--kubernetes-version: %v", err), false
		}
	}
	scs, err := workloadtest.Pick(f.only)
	if err != nil {
		return nil, badInput(c, "test", "--scenario: %v", err), false
	}
	// The existing provider cannot add or remove a pool.
	if f.provider == "existing" {
		needsPools := func(sc suites.Scenario) bool { return sc.NeedsNodepools }
		if i := slices.IndexFunc(scs, needsPools); i >= 0 && f.only != "" {
			return nil, badInput(c, "test", "--scenario %s adds or removes nodes, which the existing provider cannot do: use --provider kind", scs[i].Name), false
		}
		scs = leaveOut(c.stdout, scs, needsPools, "it adds or removes nodes, which the existing provider cannot do")
	}
	if r.ms, err = doctor.LoadContext(ctx, f.paths, stdin, doctor.DefaultLimits()); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return nil, exitBroken, false
	}
	if f.namespace != "" {
		r.ms.SetDefaultNamespace(f.namespace)
	}
	r.opts = f.standInOptions(r.kv)
	owns, err := standin.FromManifests(r.ms, r.opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return nil, exitBroken, false
	}
	if len(owns) > 1 {
		var names []string
		for _, o := range owns {
			names = append(names, o.Service)
		}
		return nil, badInput(c, "test", "the input has %d Services to stand in for (%s): test one at a time", len(owns), strings.Join(names, ", ")), false
	}
	r.own = owns[0]

	// The columns: what the user asked, else the LB the Service names,
	// else every model.
	if r.settings, err = workloadtest.Settings(getenv, f.provider, f.clusterName, f.kubeconfig, f.outDir, f.lbs, r.ms, r.own); err != nil {
		return nil, badInput(c, "test", "%v", err), false
	}
	if f.signKey != "" {
		r.settings.SignKey = f.signKey
	}
	if c.keyDir != "" {
		r.settings.KeyDir = c.keyDir
	}
	if r.models, err = r.settings.Models(); err != nil {
		return nil, badInput(c, "test", "%v", err), false
	}

	printStandIn(c.stdout, r.own, r.models)
	if f.render != "" {
		if err := renderStandIn(c, r.own, f.render); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: --render: %v\n", err)
			return nil, exitBroken, false
		}
	}
	// A readiness flip goes through the echo server's readiness switch:
	// only an HTTP readiness probe sees it, and only the echo server has it.
	noFlip := ""
	if r.own.Own {
		noFlip = "your own image runs, and zerodrop has no switch to turn its readiness"
	} else if rp := workloadtest.ServingReadiness(r.own); rp == nil || rp.HTTPGet == nil {
		noFlip = "the serving container has no HTTP readiness probe, so no Pod of it can be turned unready while it runs"
	}
	if noFlip != "" {
		scs = leaveOut(c.stdout, scs, workloadtest.Triggers(incident.ReadinessFlip), noFlip)
	}
	r.scs = scs
	return r, exitOK, true
}

// predict predicts for m and its stand-in s into *p and *e, printing them
// under title unless quiet and they are what *p and *e held.
func (r *ownRun) predict(title string, m *doctor.Manifests, s *standin.StandIn, kubeMinor int, quiet bool, p, e *workloadtest.Predictions) error {
	np, ne, err := workloadtest.Predict(m, s, r.models, r.scs, kubeMinor)
	if err != nil {
		fmt.Fprintf(r.c.stderr, "zerodrop test: %v\n", err)
		return err
	}
	if !quiet || !reflect.DeepEqual(np, *p) || !reflect.DeepEqual(ne, *e) {
		printPredictions(r.c.stdout, title, np, ne, r.scs, r.models)
	}
	*p, *e = np, ne
	return nil
}

// replan makes the doctor's plan for a release: it predicts and, with
// --prove-fix, makes and writes the fixes. again: print only what differs
// from the last plan. An error is already said.
func (r *ownRun) replan(kubeMinor int, again bool) error {
	p := &r.plan
	if err := r.predict("Doctor's prediction:", r.ms, r.own, kubeMinor, again, &p.preds, &p.expect); err != nil {
		return err
	}
	if !r.f.proveFix {
		return nil
	}
	fixedMs, applied := workloadtest.FixForEvery(r.ms, r.models, kubeMinor)
	// What still predicts drops once fixed is said with why, not left to
	// the prediction with the fixes to show unexplained.
	unfixed, err := workloadtest.UnfixedIn(fixedMs, r.own.Service, r.models, r.scs, kubeMinor)
	if err != nil {
		fmt.Fprintf(r.c.stderr, "zerodrop test: the fixed manifests: %v\n", err)
		return err
	}
	same := again && fmt.Sprint(applied, unfixed) == p.lastApplied
	p.lastApplied, p.unfixed = fmt.Sprint(applied, unfixed), unfixed
	if len(applied) == 0 {
		if !same {
			fmt.Fprintln(r.c.stdout, "--prove-fix: the doctor has no fix it can make itself for these manifests.")
			printUnfixed(r.c.stdout, unfixed)
		}
		p.fixed, p.fixedMs = nil, nil
		return nil
	}
	p.fixedMs = fixedMs
	fixedOwns, err := standin.FromManifests(fixedMs, r.opts)
	if err != nil {
		fmt.Fprintf(r.c.stderr, "zerodrop test: the fixed manifests: %v\n", err)
		return err
	}
	p.fixed = fixedOwns[0]
	path := r.f.fixOut
	if path == "" {
		path = filepath.Join(r.settings.OutDir, "fixed.yaml")
	}
	if err := workloadtest.WriteFixed(path, fixedMs, r.ms, applied, unfixed); err != nil {
		fmt.Fprintf(r.c.stderr, "zerodrop test: --fix-out: %v\n", err)
		return err
	}
	if !same {
		fmt.Fprintf(r.c.stdout, "The doctor's fixes (written to %s):\n", path)
		for _, a := range applied {
			fmt.Fprintf(r.c.stdout, "  - %s\n", a)
		}
		printUnfixed(r.c.stdout, unfixed)
		fmt.Fprintln(r.c.stdout)
	}
	return r.predict("Doctor's prediction with the fixes:", fixedMs, p.fixed, kubeMinor, same, &p.fixedPreds, &p.fixedExpect)
}

// printUnfixed lists the findings that still predict drops after the
// fixes, each on the LB models it holds on, with why the doctor could not
// fix it.
func printUnfixed(w io.Writer, unfixed []workloadtest.Unfixed) {
	if len(unfixed) == 0 {
		return
	}
	fmt.Fprintln(w, "Not fixed: these still predict drops, and the doctor cannot write their fix:")
	for _, u := range unfixed {
		fmt.Fprintf(w, "  - %s\n", u)
	}
}

// checkImages refuses, before a cluster is made, own images the kind
// nodes cannot get.
func (r *ownRun) checkImages(ctx context.Context) (int, bool) {
	if !r.own.Own || r.settings.Provider != "kind" {
		return exitOK, true
	}
	for _, img := range r.own.Images {
		if strings.Contains(img, "@sha256:") {
			// An image loaded into a kind node is not found by its digest
			// (kubernetes-sigs/kind#2394, #4028, open).
			return badInput(r.c, "test", "%s: image %s is pinned by digest, which an image loaded into kind's nodes does not resolve: test a copy that names it by tag", r.own.Workload, img), false
		}
	}
	missing, err := cluster.MissingImages(ctx, r.own.Images...)
	if err != nil {
		fmt.Fprintf(r.c.stderr, "zerodrop test: --image=own: %v\n", err)
		return exitBroken, false
	}
	if len(missing) > 0 {
		return badInput(r.c, "test", "%s (%s): image %s is not in this machine's Docker: build or load it first (docker build, docker load); the kind nodes here pull nothing",
			r.own.Workload, r.own.Source, strings.Join(missing, ", ")), false
	}
	return exitOK, true
}

// onCluster fits the run to the cluster sess opened, before anything is
// deployed: its release (hooks and the doctor's judgement), own images
// loaded, and nodes that take the stand-in's Pods.
func (r *ownRun) onCluster(ctx context.Context, sess *suites.Session) (int, bool) {
	if code, ok := r.onRelease(sess.Suite.Kubernetes); !ok {
		return code, false
	}
	if r.own.Own && r.settings.Provider == "kind" {
		r.progress("loading your images into the nodes: " + strings.Join(r.own.Images, ", "))
		if err := sess.Suite.Provider.LoadImages(ctx, r.own.Images...); err != nil {
			fmt.Fprintf(r.c.stderr, "zerodrop test: --image=own: %v\n", err)
			return exitBroken, false
		}
	}
	return r.placeable(ctx, sess)
}

// onRelease fits the run to the cluster's release v, known only once it
// answers: the stand-ins' hooks take the form it runs, and without
// --kubernetes-version the doctor judges and fixes for it (a fix may write
// a sleep action a release before 1.30 refuses).
func (r *ownRun) onRelease(v kubeversion.Version) (int, bool) {
	if v == (kubeversion.Version{}) {
		return exitOK, true
	}
	rebuild := v.HasSleepAction() != r.opts.Kubernetes.HasSleepAction()
	replan := r.f.kubeVersion == ""
	r.opts.Kubernetes = v
	if rebuild {
		owns, err := standin.FromManifests(r.ms, r.opts)
		// A plan for the cluster's release rebuilds the fixed one.
		if err == nil && r.plan.fixedMs != nil && !replan {
			var fixedOwns []*standin.StandIn
			if fixedOwns, err = standin.FromManifests(r.plan.fixedMs, r.opts); err == nil {
				r.plan.fixed = fixedOwns[0]
			}
		}
		if err != nil {
			fmt.Fprintf(r.c.stderr, "zerodrop test: %v\n", err)
			return exitBroken, false
		}
		r.own = owns[0]
		if !v.HasSleepAction() && !r.own.Own {
			r.progress(fmt.Sprintf("the cluster runs Kubernetes 1.%d, which has no kubelet sleep action (1.30 and later): the stand-in's preStop sleeps run the echo server's sleep command instead", v.Minor))
		}
	}
	if replan {
		r.progress(fmt.Sprintf("the cluster runs Kubernetes 1.%d: the doctor judges for it (what that changes is printed again)", v.Minor))
		if r.replan(v.Minor, true) != nil {
			return exitBroken, false
		}
	}
	if v.HasSleepAction() || !r.own.Own {
		return exitOK, true
	}
	which := ""
	switch {
	case workloadtest.HasSleepAction(r.own):
		which = r.own.Workload
	case r.plan.fixed != nil && workloadtest.HasSleepAction(r.plan.fixed):
		which = "the doctor's fix of " + r.own.Workload + " (made for --kubernetes-version " + r.f.kubeVersion + ")"
	}
	if which != "" {
		return badInput(r.c, "test", "%s has a kubelet sleep action as a hook, which Kubernetes 1.%d does not have (1.30 and later), so the API server would refuse it: test on a newer cluster, with --image=echo, or without --kubernetes-version",
			which, v.Minor), false
	}
	return exitOK, true
}

// placeable refuses Pods that no node of the test cluster takes (they
// would only time out), saying which labels or taints are missing before
// anything is deployed, and leaves out a rollout the cluster cannot make.
func (r *ownRun) placeable(ctx context.Context, sess *suites.Session) (int, bool) {
	nodes, err := sess.Suite.Env.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		// The scenarios will say what is wrong with the cluster.
		return exitOK, true
	}
	own := r.own
	fit, why := own.Placeable(nodes.Items)
	switch {
	case len(fit) == 0:
		return badInput(r.c, "test", "no node of the test cluster takes the stand-in's Pods (%s): the placement is kept as written; label a pool's nodes to match (kubectl label nodes -l %s=pool-a KEY=VALUE) or test a copy without it",
			why, contract.PoolLabel), false
	case own.OnePerNode() && len(fit) < int(own.Replicas):
		return badInput(r.c, "test", "the Pods' required anti-affinity puts one per node: %d replicas need %d nodes, and %d of the test cluster's take them (%s); test a copy with fewer replicas or a preferred anti-affinity",
			own.Replicas, own.Replicas, len(fit), strings.Join(fit, ", ")), false
	case own.OnePerNode() && len(fit) < own.RolloutNodes():
		// The user's cluster may have the nodes; this one has not.
		r.scs = leaveOut(r.c.stdout, r.scs, workloadtest.Triggers(incident.Rollout), fmt.Sprintf(
			"one Pod per node (required anti-affinity) with maxUnavailable 0 must place a surge Pod on a free node first: %d nodes needed, %d of the test cluster's take the Pods (%s); the rollout would wait forever here",
			own.RolloutNodes(), len(fit), strings.Join(fit, ", ")))
	default:
		// A spread that counts nodes the Pods never use stalls on this
		// cluster's nodes too (and on any cluster with a tainted node: the
		// doctor's ZD013 says so from the manifest alone). A drain alone
		// is left out; the pool scenarios add a pool before they drain.
		rollout, drain := own.SpreadStalls(nodes.Items, fit)
		if rollout != "" {
			r.scs = leaveOut(r.c.stdout, r.scs, workloadtest.Triggers(incident.Rollout), "on the test cluster "+rollout)
		}
		if drain != "" {
			r.scs = leaveOut(r.c.stdout, r.scs, func(sc suites.Scenario) bool { return sc.Name == "drain-node" }, "on the test cluster "+drain)
		}
	}
	if len(fit) == 1 {
		r.progress(fmt.Sprintf("only %s takes the stand-in's Pods: disruptions of other nodes will not meet them", strings.Join(fit, ", ")))
	}
	return exitOK, true
}

// printBeforeAfter shows every re-run cell's drops before and after the
// fixes and returns the exit code of the fixed workload's runs.
func printBeforeAfter(w io.Writer, pairs []workloadtest.Pair) int {
	fmt.Fprintln(w, "\nWith the doctor's fixes, the cells that dropped:")
	code := exitOK
	for _, p := range pairs {
		fmt.Fprintf(w, "  %s on %s: %s -> %s\n", p.Scenario, p.Model, measuredCell(p.Before), measuredCell(p.After))
		code = worse(code, p.After)
	}
	if len(pairs) == 0 {
		fmt.Fprintln(w, "  none dropped: nothing to re-run")
	}
	return code
}

// leaveOut drops the scenarios out says, each with a line saying why.
func leaveOut(w io.Writer, scs []suites.Scenario, out func(suites.Scenario) bool, why string) []suites.Scenario {
	keep, left := workloadtest.LeaveOut(scs, out, why)
	for _, l := range left {
		fmt.Fprintf(w, "%s: left out: %s.\n", l.Scenario, l.Why)
	}
	return keep
}

func printStandIn(w io.Writer, s *standin.StandIn, models []suites.Model) {
	kept := 0
	for _, k := range s.Knobs {
		if k.Kept {
			kept++
		}
	}
	fmt.Fprintf(w, "Stand-in for %s behind %s (%s)\n", s.Workload, s.Service, s.Source)
	fmt.Fprintf(w, "  knobs: %d of %d kept as written", kept, len(s.Knobs))
	for _, k := range s.Knobs {
		if !k.Kept {
			fmt.Fprintf(w, "; %s changed", k.Name)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  serving container %s: %s\n    (from %s)\n", s.Serving.Name, s.Serving.Ends, s.Serving.BehaviourFrom)
	fmt.Fprintf(w, "  load: port %d, path %s, %d replicas\n", s.Port, s.Path, s.Replicas)
	if s.Own {
		fmt.Fprintln(w, "  answers are counted by status only: your image does not say which pod answered (non-2xx counts as dropped)")
	}
	if len(s.Changes) > 0 {
		fmt.Fprintln(w, "  changes:")
		for _, ch := range s.Changes {
			fmt.Fprintf(w, "    - %s\n", ch)
		}
	}
	// What each cell changes on its own: the LB model's readiness gate
	// (suites' cell spec gives it, standin.GateFor).
	for _, m := range models {
		if ch, ok := s.GateChange(m.Profile); ok && m.Cloud {
			fmt.Fprintf(w, "    - on %s: %s\n", m.Name, ch)
		}
	}
	fmt.Fprintln(w)
}

func renderStandIn(c *cli, s *standin.StandIn, path string) error {
	b, err := fixtures.RenderYAML(s.Objects()...)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = c.stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// printPredictions prints the doctor's prediction for the user's
// manifests; a cell where the stand-in as deployed is predicted otherwise
// (one of its changes matters to a rule) is marked, and the measurement is
// compared with that one.
func printPredictions(w io.Writer, title string, preds, deployed workloadtest.Predictions, scs []suites.Scenario, models []suites.Model) {
	fmt.Fprintln(w, title)
	tw := cellTable(w, models)
	differs := false
	for _, sc := range scs {
		fmt.Fprintf(tw, "  %s", sc.Name)
		for _, m := range models {
			p, d := preds[sc.Name][m.Name], deployed[sc.Name][m.Name]
			cell := p.String()
			if d.String() != cell {
				cell += " *stand-in: " + d.String()
				differs = true
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if differs {
		fmt.Fprintln(w, "  * the stand-in as deployed is predicted otherwise (see its changes); the measurement is compared with that.")
	}
	fmt.Fprintln(w)
}

// cellTable starts a table of disruptions by LB model: its header row.
func cellTable(w io.Writer, models []suites.Model) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "  disruption")
	for _, m := range models {
		fmt.Fprintf(tw, "\t%s", m.Name)
	}
	fmt.Fprintln(tw)
	return tw
}

// worse is the exit code code becomes with measurement r: a broken run
// outweighs a drop, a drop outweighs nothing.
func worse(code int, r zdv1.Scenario) int {
	switch {
	case r.Outcome() == string(zdv1.Error):
		return exitBroken
	case r.Outcome() == zdv1.OutcomeHazardReproduced && code == exitOK:
		return exitFailed
	}
	return code
}

// printMeasured prints measured drops next to the prediction and returns
// the exit code: 2 when a run broke, 1 when something dropped, else 0.
func printMeasured(w io.Writer, preds workloadtest.Predictions, measured map[string]zdv1.Scenario, scs []suites.Scenario, models []suites.Model, out string) int {
	fmt.Fprintln(w, "Measured (the doctor's prediction in brackets):")
	tw := cellTable(w, models)
	code := exitOK
	agree, decided := 0, 0
	for _, sc := range scs {
		fmt.Fprintf(tw, "  %s", sc.Name)
		for _, m := range models {
			r, ok := measured[sc.Name+"/"+m.Name]
			p := preds[sc.Name][m.Name]
			cell := "not run"
			if ok {
				cell = measuredCell(r)
				code = worse(code, r)
				if r.Expected != nil && r.Expected.Outcome != "" && r.Outcome() != string(zdv1.Error) {
					decided++
					if r.Unexpected() {
						cell += " DISAGREES"
					} else {
						agree++
					}
				}
			}
			fmt.Fprintf(tw, "\t%s [%s]", cell, p)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if decided > 0 {
		fmt.Fprintf(w, "\nAgreement: %d of %d cells the doctor decided (%.0f%%); risk cells and broken runs are not counted.\n", agree, decided, 100*float64(agree)/float64(decided))
	}
	fmt.Fprintf(w, "Evidence: %s (report.json, one run file per cell; zerodrop report %s renders it)\n", out, out)
	return code
}

func measuredCell(r zdv1.Scenario) string {
	if r.Outcome() == string(zdv1.Error) {
		if g := r.Results.GroundMoved; g > 0 {
			// Not the workload's, and not the fix's: the ground check.
			return fmt.Sprintf("ERROR (the ground moved: %d of %d dropped with nothing disrupted yet)", g, r.Results.Total)
		}
		return "ERROR"
	}
	s := fmt.Sprintf("%d dropped of %d", r.Results.Dropped, r.Results.Total)
	if a := r.Results.AfterRemoval; a != nil && a.Served > 0 {
		s += fmt.Sprintf(", %d served after removal", a.Served)
	}
	return s
}

// firstSet is v, or def when v is empty.
func firstSet(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
