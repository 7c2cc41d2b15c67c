package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/standin"
	"zerodrop.dev/zerodrop/internal/kubeversion"
	"zerodrop.dev/zerodrop/suites"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
LoadBalancer, PodDisruptionBudgets, an HPA; files, directories, - for stdin;
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

// ownScenarios are the disruptions a user's workload can meet as written.
func ownScenarios() []suites.Scenario {
	var out []suites.Scenario
	for _, sc := range suites.Scenarios() {
		if sc.Own {
			out = append(out, sc)
		}
	}
	return out
}

func runOwn(ctx context.Context, c *cli, stdin io.Reader, getenv func(string) string, args []string) int {
	fs := newFlagSet(c, "test", "[flags] FILE|DIR|-...", ownDescription)
	lbs := fs.String("lb-profile", "", "LB models, comma-separated: metallb and the cloud LB's profiles (default: the one the Service's annotations imply, else all)")
	only := fs.String("scenario", "", "disruptions to run, comma-separated (default: every one a workload can meet)")
	dryRun := fs.Bool("dry-run", false, "predict and build the stand-in; deploy nothing")
	render := fs.String("render", "", "write the stand-in's manifests to this `file` (- for stdout)")
	outDir := fs.String("out", "out/test", "evidence `directory` (run files, report.json)")
	signKey := fs.String("sign-key", "", "`PATH` of the Ed25519 private key that signs every run file (zerodrop keygen); default ZERODROP_SIGN_KEY, else this machine's key; none: unsigned")
	namespace := fs.String("namespace", "", "namespace of manifests without one (default \"default\")")
	fs.StringVar(namespace, "n", "", "shorthand for --namespace")
	kubeVersion := fs.String("kubernetes-version", "", "judge for this Kubernetes version (default: the supported releases)")
	provider := fs.String("provider", firstSet(getenv("PROVIDER"), "kind"), "kind (made when none answers) or existing")
	kubeconfig := fs.String("kubeconfig", firstSet(getenv("ZERODROP_KUBECONFIG"), "out/kubeconfig"), "kubeconfig of the test cluster")
	clusterName := fs.String("cluster-name", firstSet(getenv("CLUSTER_NAME"), "zerodrop"), "kind cluster name")
	appUnready := fs.Bool("app-unready-on-term", false, "your server fails readiness on SIGTERM (for a server the doctor does not know)")
	appAccepts := fs.Duration("app-accepts", 0, "your server keeps accepting this long after SIGTERM (for a server the doctor does not know)")
	appDrain := fs.Duration("app-drain", 0, "then gives in-flight requests this long (0: cuts them)")
	appKeepAlive := fs.Bool("app-keepalive", true, "your server keeps HTTP connections alive")
	hook := fs.Duration("hook", 0, "the stand-in sleeps this long for a preStop hook whose duration cannot be read (default: no hook)")
	proveFix := fs.Bool("prove-fix", false, "make the doctor's fixes on a copy, write it (--fix-out), and re-run the cells that dropped on it: before and after")
	fixOut := fs.String("fix-out", "", "where --prove-fix writes the fixed objects (default: OUT/fixed.yaml)")
	image := fs.String("image", "echo", "echo: the zerodrop echo server stands in for each container, ending as the doctor reads your server; own: your images run as written (kind: loaded from this machine's Docker; existing: pulled by the cluster), answers counted by status only")
	loadPath := fs.String("path", "", "with --image=own: the path the load requests, one your server answers 200 (default /)")

	paths, code, ok := parseInterspersed(c, fs, args)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		return badInput(c, "test", "give the manifests: FILE, DIR or - for stdin")
	}
	var kv kubeversion.Version
	if *kubeVersion != "" {
		var err error
		if kv, err = kubeversion.Parse(*kubeVersion); err != nil {
			return badInput(c, "test", "--kubernetes-version: %v", err)
		}
	}
	kubeMinor := kv.Minor
	scs, err := pickScenarios(*only)
	if err != nil {
		return badInput(c, "test", "--scenario: %v", err)
	}
	// The existing provider cannot add or remove a pool.
	if *provider == "existing" {
		needsPools := func(sc suites.Scenario) bool { return sc.NeedsNodepools }
		if i := slices.IndexFunc(scs, needsPools); i >= 0 && *only != "" {
			return badInput(c, "test", "--scenario %s adds and removes nodepools, which the existing provider cannot do: use --provider kind", scs[i].Name)
		}
		scs = leaveOut(c.stdout, scs, needsPools, "it adds and removes nodepools, which the existing provider cannot do")
	}
	ms, err := doctor.Load(paths, stdin)
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return exitBroken
	}
	if *namespace != "" {
		ms.SetDefaultNamespace(*namespace)
	}
	opts := standin.Options{Namespace: "zd-own", UnknownHook: *hook, Kubernetes: kv}
	modelled, appSet := "", false // flags that model the app: meaningless when it runs
	fs.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "app-") || f.Name == "hook" {
			modelled = "--" + f.Name
			appSet = appSet || f.Name != "hook"
		}
	})
	switch *image {
	case "echo":
		if *loadPath != "" {
			return badInput(c, "test", "--path is for --image=own: the echo stand-in answers the load on a path no probe uses")
		}
	case "own":
		if modelled != "" {
			return badInput(c, "test", "%s models a server the echo stand-in plays; with --image=own your own server runs and ends as it does", modelled)
		}
		if *loadPath != "" && !strings.HasPrefix(*loadPath, "/") {
			return badInput(c, "test", "--path %q: want an absolute path such as /healthz", *loadPath)
		}
		opts.OwnImage, opts.Path = true, *loadPath
		if *provider == "kind" {
			// Loaded into the nodes from this machine's Docker: never pulled.
			opts.PullPolicy = corev1.PullNever
		}
	default:
		return badInput(c, "test", "--image %q: want echo (the stand-in) or own (your images as written)", *image)
	}
	if appSet && !opts.OwnImage {
		opts.App = &standin.Behaviour{UnreadyOnTerm: *appUnready, KeepAccepting: *appAccepts, Drain: *appDrain, KeepAlive: *appKeepAlive}
	}
	owns, err := standin.FromManifests(ms, opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return exitBroken
	}
	if len(owns) > 1 {
		var names []string
		for _, o := range owns {
			names = append(names, o.Service)
		}
		return badInput(c, "test", "the input has %d Services of type LoadBalancer (%s): test one at a time", len(owns), strings.Join(names, ", "))
	}
	own := owns[0]

	// The columns: what the user asked, else the LB the Service names,
	// else every model.
	settings, err := ownSettings(getenv, *provider, *clusterName, *kubeconfig, *outDir, *lbs, ms, own)
	if err != nil {
		return badInput(c, "test", "%v", err)
	}
	if *signKey != "" {
		settings.SignKey = *signKey
	}
	if c.keyDir != "" {
		settings.KeyDir = c.keyDir
	}
	models, err := settings.Models()
	if err != nil {
		return badInput(c, "test", "%v", err)
	}

	printStandIn(c.stdout, own)
	if *render != "" {
		if err := renderStandIn(c, own, *render); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: --render: %v\n", err)
			return exitBroken
		}
	}
	// A readiness flip goes through the echo server's readiness switch:
	// only an HTTP readiness probe sees it, and only the echo server has it.
	noFlip := ""
	if own.Own {
		noFlip = "your own image runs, and zerodrop has no switch to turn its readiness"
	} else if rp := servingReadiness(own); rp == nil || rp.HTTPGet == nil {
		noFlip = "the serving container has no HTTP readiness probe, so no Pod of it can be turned unready while it runs"
	}
	if noFlip != "" {
		scs = leaveOut(c.stdout, scs, triggers(incident.ReadinessFlip), noFlip)
	}
	// The doctor judges for a release: the one asked, else (once the
	// cluster answers) the cluster's. plan predicts and, with --prove-fix,
	// makes and writes the fixes, for one; an error is already said.
	var preds, expect, fixedPreds, fixedExpect map[string]map[string]prediction
	var fixed *standin.StandIn
	var fixedMs *doctor.Manifests
	proving := *proveFix
	var lastApplied string
	// predict predicts for m and its stand-in s into *p and *e, printing
	// them under title unless quiet and they are what *p and *e held.
	predict := func(title string, m *doctor.Manifests, s *standin.StandIn, kubeMinor int, quiet bool, p, e *map[string]map[string]prediction) error {
		np, ne, err := predictions(m, s, models, scs, kubeMinor)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
			return err
		}
		if !quiet || !reflect.DeepEqual(np, *p) || !reflect.DeepEqual(ne, *e) {
			printPredictions(c.stdout, title, np, ne, scs, models)
		}
		*p, *e = np, ne
		return nil
	}
	// again: print only what differs from the last plan.
	plan := func(kubeMinor int, again bool) error {
		if err := predict("Doctor's prediction:", ms, own, kubeMinor, again, &preds, &expect); err != nil {
			return err
		}
		if !proving {
			return nil
		}
		var applied []doctor.Applied
		fixedMs, applied = fixForEvery(ms, models, kubeMinor)
		same := again && fmt.Sprint(applied) == lastApplied
		lastApplied = fmt.Sprint(applied)
		if len(applied) == 0 {
			if !same {
				fmt.Fprintln(c.stdout, "--prove-fix: the doctor has no fix it can make itself for these manifests.")
			}
			fixed, fixedMs = nil, nil
			return nil
		}
		fixedOwns, err := standin.FromManifests(fixedMs, opts)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: the fixed manifests: %v\n", err)
			return err
		}
		fixed = fixedOwns[0]
		path := *fixOut
		if path == "" {
			path = filepath.Join(settings.OutDir, "fixed.yaml")
		}
		if err := writeFixed(path, fixedMs, ms, applied); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: --fix-out: %v\n", err)
			return err
		}
		if !same {
			fmt.Fprintf(c.stdout, "The doctor's fixes (written to %s):\n", path)
			for _, a := range applied {
				fmt.Fprintf(c.stdout, "  - %s\n", a)
			}
			fmt.Fprintln(c.stdout)
		}
		return predict("Doctor's prediction with the fixes:", fixedMs, fixed, kubeMinor, same, &fixedPreds, &fixedExpect)
	}
	if plan(kubeMinor, false) != nil {
		return exitBroken
	}
	if *dryRun {
		return exitOK
	}
	// Images the kind nodes cannot get are bad input, found before a
	// cluster is made.
	if own.Own && settings.Provider == "kind" {
		for _, img := range own.Images {
			if strings.Contains(img, "@sha256:") {
				// An image loaded into a kind node is not found by its digest
				// (kubernetes-sigs/kind#2394, #4028, open).
				return badInput(c, "test", "%s: image %s is pinned by digest, which an image loaded into kind's nodes does not resolve: test a copy that names it by tag", own.Workload, img)
			}
		}
		missing, err := cluster.MissingImages(ctx, own.Images...)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop test: --image=own: %v\n", err)
			return exitBroken
		}
		if len(missing) > 0 {
			return badInput(c, "test", "%s (%s): image %s is not in this machine's Docker: build or load it first (docker build, docker load); the kind nodes here pull nothing",
				own.Workload, own.Source, strings.Join(missing, ", "))
		}
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	progress := func(msg string) { fmt.Fprintln(c.stderr, "zerodrop test:", msg) }
	sess, err := suites.Open(ctx, settings, logger, progress)
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
		return exitBroken
	}
	// The cluster's release, known only now: the stand-ins' hooks take the
	// form it runs, and without --kubernetes-version the doctor judges and
	// fixes for it (a fix may write a sleep action a release before 1.30
	// refuses).
	if v := sess.Suite.Kubernetes; v != (kubeversion.Version{}) {
		rebuild := v.HasSleepAction() != opts.Kubernetes.HasSleepAction()
		replan := *kubeVersion == ""
		opts.Kubernetes = v
		if rebuild {
			owns, err := standin.FromManifests(ms, opts)
			// A plan for the cluster's release rebuilds the fixed one.
			if err == nil && fixedMs != nil && !replan {
				var fixedOwns []*standin.StandIn
				if fixedOwns, err = standin.FromManifests(fixedMs, opts); err == nil {
					fixed = fixedOwns[0]
				}
			}
			if err != nil {
				_ = sess.Close(context.WithoutCancel(ctx), progress)
				fmt.Fprintf(c.stderr, "zerodrop test: %v\n", err)
				return exitBroken
			}
			own = owns[0]
			if !v.HasSleepAction() && !own.Own {
				progress(fmt.Sprintf("the cluster runs Kubernetes 1.%d, which has no kubelet sleep action (1.30 and later): the stand-in's preStop sleeps run the echo server's sleep command instead", v.Minor))
			}
		}
		if replan {
			progress(fmt.Sprintf("the cluster runs Kubernetes 1.%d: the doctor judges for it (what that changes is printed again)", v.Minor))
			if plan(v.Minor, true) != nil {
				_ = sess.Close(context.WithoutCancel(ctx), progress)
				return exitBroken
			}
		}
	}
	if v := sess.Suite.Kubernetes; !v.HasSleepAction() && own.Own {
		which := ""
		switch {
		case hasSleepAction(own):
			which = own.Workload
		case fixed != nil && hasSleepAction(fixed):
			which = "the doctor's fix of " + own.Workload + " (made for --kubernetes-version " + *kubeVersion + ")"
		}
		if which != "" {
			_ = sess.Close(context.WithoutCancel(ctx), progress)
			return badInput(c, "test", "%s has a kubelet sleep action as a hook, which Kubernetes 1.%d does not have (1.30 and later), so the API server would refuse it: test on a newer cluster, with --image=echo, or without --kubernetes-version",
				which, v.Minor)
		}
	}
	if own.Own && settings.Provider == "kind" {
		progress("loading your images into the nodes: " + strings.Join(own.Images, ", "))
		if err := sess.Suite.Provider.LoadImages(ctx, own.Images...); err != nil {
			_ = sess.Close(context.WithoutCancel(ctx), progress)
			fmt.Fprintf(c.stderr, "zerodrop test: --image=own: %v\n", err)
			return exitBroken
		}
	}
	// Pods that no node of the test cluster takes would only time out:
	// say which labels or taints are missing before anything is deployed.
	nodes, err := sess.Suite.Env.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err == nil {
		fit, why := own.Placeable(nodes.Items)
		if len(fit) == 0 {
			_ = sess.Close(context.WithoutCancel(ctx), progress)
			return badInput(c, "test", "no node of the test cluster takes the stand-in's Pods (%s): the placement is kept as written; label a pool's nodes to match (kubectl label nodes -l %s=pool-a KEY=VALUE) or test a copy without it",
				why, contract.PoolLabel)
		} else if own.OnePerNode() && len(fit) < int(own.Replicas) {
			_ = sess.Close(context.WithoutCancel(ctx), progress)
			return badInput(c, "test", "the Pods' required anti-affinity puts one per node: %d replicas need %d nodes, and %d of the test cluster's take them (%s); test a copy with fewer replicas or a preferred anti-affinity",
				own.Replicas, own.Replicas, len(fit), strings.Join(fit, ", "))
		} else if own.OnePerNode() && len(fit) < own.RolloutNodes() {
			// The user's cluster may have the nodes; this one has not.
			scs = leaveOut(c.stdout, scs, triggers(incident.Rollout), fmt.Sprintf(
				"one Pod per node (required anti-affinity) with maxUnavailable 0 must place a surge Pod on a free node first: %d nodes needed, %d of the test cluster's take the Pods (%s); the rollout would wait forever here",
				own.RolloutNodes(), len(fit), strings.Join(fit, ", ")))
		}
		if len(fit) == 1 {
			progress(fmt.Sprintf("only %s takes the stand-in's Pods: disruptions of other nodes will not meet them", strings.Join(fit, ", ")))
		}
	}
	all := func(suites.Scenario, suites.Model) bool { return true }
	measured := measure(ctx, sess, scs, suites.OwnProfile, own, expect, all, progress)
	code = printMeasured(c.stdout, expect, measured, scs, sess.Suite.Models, settings.OutDir)
	if *proveFix && fixed != nil {
		dropped := func(sc suites.Scenario, m suites.Model) bool {
			r, ok := measured[sc.Name+"/"+m.Name]
			return ok && r.Outcome() == zdv1.OutcomeHazardReproduced
		}
		after := measure(ctx, sess, scs, suites.OwnFixedProfile, fixed, fixedExpect, dropped, progress)
		// A run that broke before the fix stays the exit code: the fix
		// cannot prove what was never measured.
		if fc := printBeforeAfter(c.stdout, measured, after, scs, sess.Suite.Models); code != exitBroken {
			code = fc
		}
	}
	if err := sess.Close(context.WithoutCancel(ctx), progress); err != nil {
		progress("close: " + err.Error())
	}
	return code
}

// measure runs the scenarios' cells that pick selects on s, each expecting
// the doctor's prediction, and returns their results by "scenario/model".
func measure(ctx context.Context, sess *suites.Session, scs []suites.Scenario, profile fixtures.Profile, s *standin.StandIn,
	preds map[string]map[string]prediction, pick func(suites.Scenario, suites.Model) bool, progress func(string)) map[string]zdv1.Scenario {
	out := map[string]zdv1.Scenario{}
	for _, sc := range scs {
		var models []suites.Model
		for _, m := range sess.Suite.Models {
			if pick(sc, m) {
				models = append(models, m)
			}
		}
		if len(models) == 0 {
			continue
		}
		cells := sc.OwnCells(models, profile, s, func(m suites.Model) *zdv1.Expectation { return preds[sc.Name][m.Name].expectation() })
		progress(fmt.Sprintf("%s (%s): %d LB models", sc.Name, profile, len(cells)))
		// A shared node or pool disruption goes where most witnesses have
		// Pods; a witness whose Pods ran elsewhere (a single replica) was
		// not met, and runs again with the others not met, until each was
		// (a lone witness always is).
		record := func(cell suites.Cell, res scenario.Result) {
			r := suites.CellResult(sc, cell, res)
			out[sc.Name+"/"+cell.Model.Name] = r
			if err := sess.Collector.Add(r); err != nil {
				progress("report: " + err.Error())
			}
		}
		var prior []scenario.Result // the pending cells' results so far
		for pending := cells; len(pending) > 0; {
			var res []scenario.Result
			if prior == nil {
				res = sess.Suite.RunScenario(ctx, sc, pending)
			} else {
				// Measurements the load spoiled before stay listed.
				res = sess.Suite.RunScenarioAgain(ctx, sc, pending, prior)
			}
			var again []int
			for i, cell := range pending {
				var nm *suites.NotMetError
				if len(pending) > 1 && errors.As(res[i].Err, &nm) {
					again = append(again, i)
					continue
				}
				record(cell, res[i])
			}
			if len(again) == len(pending) {
				// None was met: repeating it cannot do better.
				for _, i := range again {
					record(pending[i], res[i])
				}
				break
			}
			var next []suites.Cell
			prior = nil
			for _, i := range again {
				progress(fmt.Sprintf("%s on %s: not met (its Pods ran elsewhere): again", sc.Name, pending[i].Model.Name))
				next = append(next, pending[i])
				prior = append(prior, res[i])
			}
			pending = next
		}
	}
	return out
}

// fixForEvery is the doctor's fix of ms for every column's LB in turn,
// the longest lag first: a fix only adds or lengthens (a preStop is never
// shortened), so what one column needs stays for the next, and a column
// whose LB wants a change of its own (gclb's BackendConfig, which points
// its check at kube-proxy) gets it besides the longest preStop.
func fixForEvery(ms *doctor.Manifests, models []suites.Model, kubeMinor int) (*doctor.Manifests, []doctor.Applied) {
	var ps []doctor.LBProfile
	for _, m := range models {
		if p, ok := doctor.LookupProfile(m.Name); ok {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].RemovalLag() > ps[j].RemovalLag() })
	fixed, all := ms, []doctor.Applied(nil)
	for _, p := range ps {
		var applied []doctor.Applied
		fixed, applied = doctor.Fix(fixed, doctor.WithLBProfile(p), doctor.WithKubernetesMinor(kubeMinor))
		all = append(all, applied...)
	}
	return fixed, all
}

// writeFixed writes the objects Fix changed, whole, with the changes as a
// comment on top: the user applies them or diffs them against their own.
func writeFixed(path string, fixed, orig *doctor.Manifests, applied []doctor.Applied) error {
	var objs []runtime.Object
	for i, o := range fixed.Objects {
		ro, ok := o.Obj.(runtime.Object)
		// Objects past the original's are new (a budget the fix adds).
		if !ok || (i < len(orig.Objects) && equality.Semantic.DeepEqual(o.Obj, orig.Objects[i].Obj)) {
			continue
		}
		objs = append(objs, ro)
	}
	b, err := fixtures.RenderYAML(objs...)
	if err != nil {
		return err
	}
	var head strings.Builder
	head.WriteString("# zerodrop test --prove-fix: the objects the doctor changed or added, whole.\n")
	for _, a := range applied {
		head.WriteString("# - " + a.String() + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(head.String()), b...), 0o644)
}

// printBeforeAfter shows every re-run cell's drops before and after the
// fixes and returns the exit code of the fixed workload's runs.
func printBeforeAfter(w io.Writer, before, after map[string]zdv1.Scenario, scs []suites.Scenario, models []suites.Model) int {
	fmt.Fprintln(w, "\nWith the doctor's fixes, the cells that dropped:")
	code := exitOK
	n := 0
	for _, sc := range scs {
		for _, m := range models {
			a, ok := after[sc.Name+"/"+m.Name]
			if !ok {
				continue
			}
			n++
			b := before[sc.Name+"/"+m.Name]
			fmt.Fprintf(w, "  %s on %s: %s -> %s\n", sc.Name, m.Name, measuredCell(b), measuredCell(a))
			switch {
			case a.Outcome() == string(zdv1.Error):
				code = exitBroken
			case a.Outcome() == zdv1.OutcomeHazardReproduced && code == exitOK:
				code = exitFailed
			}
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none dropped: nothing to re-run")
	}
	return code
}

// leaveOut drops the scenarios out says, each with a line saying why.
func leaveOut(w io.Writer, scs []suites.Scenario, out func(suites.Scenario) bool, why string) []suites.Scenario {
	var keep []suites.Scenario
	for _, sc := range scs {
		if out(sc) {
			fmt.Fprintf(w, "%s: left out: %s.\n", sc.Name, why)
			continue
		}
		keep = append(keep, sc)
	}
	return keep
}

// triggers selects the scenarios whose disruption does t to a user's
// workload.
func triggers(t incident.Trigger) func(suites.Scenario) bool {
	return func(sc suites.Scenario) bool { return slices.Contains(sc.OwnTriggerSet(), t) }
}

func pickScenarios(only string) ([]suites.Scenario, error) {
	all := ownScenarios()
	if only == "" {
		return all, nil
	}
	var out []suites.Scenario
	var names []string
	for _, sc := range all {
		names = append(names, sc.Name)
	}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, sc := range all {
			if sc.Name == n {
				out, found = append(out, sc), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is not a disruption a workload of yours can meet here (%s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// ownSettings are the suite's settings for a user's workload: the
// environment's, with the flags on top and the columns chosen.
func ownSettings(getenv func(string) string, provider, clusterName, kubeconfig, outDir, lbs string, ms *doctor.Manifests, own *standin.StandIn) (suites.Settings, error) {
	env := map[string]string{"PROVIDER": provider, "CLUSTER_NAME": clusterName, "ZERODROP_KUBECONFIG": kubeconfig, "ZERODROP_OUT": outDir}
	names := suites.ModelList(lbs)
	if len(names) == 0 {
		names = impliedLB(ms, own)
	}
	cloud := []string{}
	metallb := len(names) == 0
	for _, n := range names {
		if n == "metallb" {
			metallb = true
		} else {
			cloud = append(cloud, n)
		}
	}
	switch {
	case provider == "existing":
		env["LB_PROFILE"] = strings.Join(names, ",")
	case metallb && len(cloud) == 0 && len(names) > 0:
		env["LB"] = "metallb"
	case !metallb:
		env["LB"], env["LB_PROFILE"] = "cloud", strings.Join(cloud, ",")
	default:
		env["LB"], env["LB_PROFILE"] = "all", strings.Join(cloud, ",")
	}
	get := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}
	abs, err := filepath.Abs(".")
	if err != nil {
		return suites.Settings{}, err
	}
	return suites.SettingsFromEnv(get, abs)
}

// impliedLB is the one LB model the Service's annotations name, if they
// name exactly one the cloud LB runs (the doctor's reading); none means
// every model.
func impliedLB(ms *doctor.Manifests, own *standin.StandIn) []string {
	rep := doctor.Check(ms)
	for _, s := range rep.Services {
		if s.Service == own.Service && !strings.Contains(s.Profile, ",") && s.Profile != "" {
			if _, ok := doctor.LookupProfile(s.Profile); ok {
				return []string{s.Profile}
			}
		}
	}
	return nil
}

// prediction is the doctor's answer for one cell.
type prediction struct {
	doctor.Prediction
	// unknown: the doctor has no profile for the model.
	unknown bool
	why     string
}

func (p prediction) String() string {
	switch {
	case p.unknown:
		return "?"
	case len(p.Rules) > 0:
		return string(p.Outcome) + " (" + strings.Join(p.Rules, ",") + ")"
	}
	return string(p.Outcome)
}

// expectation is the prediction as a documentation cell's expected
// outcome: a measurement that differs is flagged UNEXPECTED in the report.
func (p prediction) expectation() *zdv1.Expectation {
	switch {
	case p.unknown:
		return &zdv1.Expectation{Why: "the doctor has no profile for this LB model"}
	case p.Outcome == doctor.PredictDrops:
		return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardReproduced, Why: "the doctor predicts drops: " + p.why}
	case p.Outcome == doctor.PredictClean:
		return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardNotReproduced, Why: "the doctor finds nothing this disruption meets"}
	}
	return &zdv1.Expectation{Why: "the doctor warns (" + p.why + ") but cannot tell: either outcome"}
}

// predict runs the doctor once per LB model on objs with the Service
// (service, "service/ns/name") named for that model, as the suite deploys
// it (the zerodrop.dev/lb-profile annotation), and reads its prediction for
// every scenario: [scenario][model]. On the user's manifests this is what
// the doctor says of them on each LB; on the stand-in as deployed it is
// what the measurement is compared with (the stand-in's changes included).
func predict(objs []runtime.Object, service string, models []suites.Model, scs []suites.Scenario, kubeMinor int) (map[string]map[string]prediction, error) {
	out := map[string]map[string]prediction{}
	for _, sc := range scs {
		out[sc.Name] = map[string]prediction{}
	}
	for _, m := range models {
		if _, ok := doctor.LookupProfile(m.Name); !ok {
			for _, sc := range scs {
				out[sc.Name][m.Name] = prediction{unknown: true}
			}
			continue
		}
		ms, err := onModel(objs, service, m.Name)
		if err != nil {
			return nil, err
		}
		rep := doctor.Check(ms, doctor.WithKubernetesMinor(kubeMinor))
		for _, sc := range scs {
			p := prediction{Prediction: rep.Predict(service, sc.OwnTriggerSet())}
			var why []string
			for _, f := range rep.Findings {
				for _, id := range p.Rules {
					if f.RuleID == id && f.Service == service {
						why = append(why, id+" "+f.Message)
					}
				}
			}
			p.why = strings.Join(why, "; ")
			out[sc.Name][m.Name] = p
		}
	}
	return out, nil
}

// onModel is objs with the Service named service annotated for LB model
// name, read back as the doctor reads manifests.
func onModel(objs []runtime.Object, service, model string) (*doctor.Manifests, error) {
	var cp []runtime.Object
	for _, o := range objs {
		o = o.DeepCopyObject()
		if svc, ok := o.(*corev1.Service); ok {
			ns := svc.Namespace
			if ns == "" {
				ns = "default"
			}
			if "service/"+ns+"/"+svc.Name == service {
				if svc.Annotations == nil {
					svc.Annotations = map[string]string{}
				}
				svc.Annotations[contract.LBProfileAnnotation] = model
			}
		}
		cp = append(cp, o)
	}
	b, err := fixtures.RenderYAML(cp...)
	if err != nil {
		return nil, err
	}
	return doctor.Read(service+" on "+model, bytes.NewReader(b))
}

// typedObjects are the objects the doctor decoded (the kinds it analyses).
func typedObjects(ms *doctor.Manifests) []runtime.Object {
	var out []runtime.Object
	for _, o := range ms.Objects {
		if ro, ok := o.Obj.(runtime.Object); ok {
			ro = ro.DeepCopyObject()
			if mo, ok := ro.(metav1.Object); ok && mo.GetNamespace() == "" {
				mo.SetNamespace(o.Namespace)
			}
			out = append(out, ro)
		}
	}
	return out
}

func printStandIn(w io.Writer, s *standin.StandIn) {
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
func printPredictions(w io.Writer, title string, preds, deployed map[string]map[string]prediction, scs []suites.Scenario, models []suites.Model) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "  disruption")
	for _, m := range models {
		fmt.Fprintf(tw, "\t%s", m.Name)
	}
	fmt.Fprintln(tw)
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

// predictions are the doctor's predictions for the user's manifests and
// for the stand-in as deployed.
func predictions(ms *doctor.Manifests, own *standin.StandIn, models []suites.Model, scs []suites.Scenario, kubeMinor int) (user, deployed map[string]map[string]prediction, err error) {
	if user, err = predict(typedObjects(ms), own.Service, models, scs, kubeMinor); err != nil {
		return nil, nil, fmt.Errorf("predict for the manifests: %w", err)
	}
	if deployed, err = predict(own.Objects(), "service/"+own.Namespace+"/"+own.ServiceName, models, scs, kubeMinor); err != nil {
		return nil, nil, fmt.Errorf("predict for the stand-in: %w", err)
	}
	return user, deployed, nil
}

func servingReadiness(s *standin.StandIn) *corev1.Probe {
	tpl, _, _ := s.Spec()
	for _, c := range tpl.Spec.Containers {
		if c.Name == s.Serving.Name {
			return c.ReadinessProbe
		}
	}
	return nil
}

// printMeasured prints measured drops next to the prediction and returns
// the exit code: 2 when a run broke, 1 when something dropped, else 0.
func printMeasured(w io.Writer, preds map[string]map[string]prediction, measured map[string]zdv1.Scenario, scs []suites.Scenario, models []suites.Model, out string) int {
	fmt.Fprintln(w, "Measured (the doctor's prediction in brackets):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "  disruption")
	for _, m := range models {
		fmt.Fprintf(tw, "\t%s", m.Name)
	}
	fmt.Fprintln(tw)
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
				switch {
				case r.Outcome() == string(zdv1.Error):
					code = exitBroken
				case r.Outcome() == zdv1.OutcomeHazardReproduced && code == exitOK:
					code = exitFailed
				}
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

// hasSleepAction reports whether a container of s's Pods has a kubelet
// sleep action as a hook.
func hasSleepAction(s *standin.StandIn) bool {
	tpl, _, _ := s.Spec()
	for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
		if l := c.Lifecycle; l != nil && ((l.PreStop != nil && l.PreStop.Sleep != nil) || (l.PostStart != nil && l.PostStart.Sleep != nil)) {
			return true
		}
	}
	return false
}
