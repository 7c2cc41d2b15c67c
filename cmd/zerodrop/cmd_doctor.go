package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/recipe"
)

func doctorCommand() command {
	return command{
		name:    "doctor",
		summary: "predict dropped requests from manifests or a live cluster, before anything runs",
		run: func(ctx context.Context, c *cli, args []string) int {
			return runDoctor(ctx, c, os.Stdin, args)
		},
	}
}

const doctorDescription = `
Reads Kubernetes manifests (files, directories walked for *.yaml/*.yml/*.json,
- for stdin; multi-document YAML and List kinds) or, with no FILE or with
--cluster, the live cluster of KUBECONFIG, and reports for every Service of
type LoadBalancer (and every Service an Ingress or a Gateway API HTTP, gRPC,
TCP, TLS or UDP route sends to) and the workloads behind it the configuration that drops requests during drains,
rollouts and node-pool changes: each finding with the incident it comes from
(docs/incidents.md) and the fix. Flags may follow the FILE arguments.

The LB health-check lag (preStop must outlast it with externalTrafficPolicy
Local) comes from a Service's zerodrop.dev/lb-profile annotation, else
--lb-profile, else the LB its provider annotations or loadBalancerClass name
(aws-load-balancer-type: nlb is aws-nlb, external with nlb-target-type: ip, or
nlb-ip, aws-nlb-ip, other AWS annotations the Classic ELB,
Azure annotations azure-lb, Alibaba Cloud's alibaba-cloud-loadbalancer-
annotations alibaba-slb, GKE's gke-l4 or gcp-nlb), or for a Service only
an Ingress or route exposes, the LB the Ingress or the route's Gateway asks
for when it sends to the Pods (alb.ingress.kubernetes.io/target-type: ip is
aws-alb-ip; cloud.google.com/neg behind a gce Ingress, or an HTTP or gRPC route
on a GKE gke-l7-* Gateway, gclb-neg; other Gateway classes are named, not
modelled); a Service that names no LB is judged against every plausible cloud LB (gke-l4, gcp-nlb, aws-nlb,
aws-elb, azure-lb), each finding saying on which it holds, and the exit code
follows the worst. The provider's health-check annotations on the Service
change the timing. See --list-profiles for every number and its source.

Input: at most 32 MiB in one run, stdin included (files are measured
first; stdin and pipes get what they leave, read into memory and refused
as soon as they cross it), and at most 100000 documents and List items in
one input; every input is measured and its documents counted before any
is parsed. Ctrl-C or SIGTERM stops the reading.

Exit status: 0 no finding at or above --fail-on, 1 such a finding exists,
2 bad input (unreadable or unparseable manifests, or a template placeholder in
a field that decides the verdict, named by file and line) or the cluster could
not be read.`

func runDoctor(ctx context.Context, c *cli, stdin io.Reader, args []string) int {
	fs := newFlagSet(c, "doctor", "[flags] [FILE|DIR|-]...", doctorDescription)
	output := fs.String("output", "text", "output format: text, json or sarif (SARIF 2.1.0 for CI annotations)")
	fs.StringVar(output, "o", "text", "shorthand for --output")
	failOn := fs.String("fail-on", "error", "exit 1 when a finding at or above this severity exists: error, warning, info or none")
	profile := fs.String("lb-profile", "", "LB profile for Services that do not name one (default: inferred per Service, else every plausible cloud LB; see --list-profiles)")
	namespace := fs.String("namespace", "", "namespace of manifests without one (default \"default\"); with the cluster, the namespace to read (default: the kubeconfig context's)")
	fs.StringVar(namespace, "n", "", "shorthand for --namespace")
	allNS := fs.Bool("all-namespaces", false, "with the cluster: read every namespace")
	fs.BoolVar(allNS, "A", false, "shorthand for --all-namespaces")
	useCluster := fs.Bool("cluster", false, "read the live cluster of KUBECONFIG (implied when no FILE is given)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `path` (default: $KUBECONFIG, then ~/.kube/config)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: the current context)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the API server when reading the cluster")
	kubeVersion := fs.String("kubernetes-version", "", "judge for this Kubernetes version (1.MINOR or v1.MINOR.PATCH; default: the cluster's when reading one, else every supported release, 1.28 and later)")
	nodeShutdown := fs.String("node-shutdown-grace", "", "the nodes' kubelet graceful node shutdown, `PERIOD/CRITICAL` (shutdownGracePeriod/shutdownGracePeriodCriticalPods, e.g. 30s/15s) or off: ZD025 checks that a node's shutdown leaves the Pods time for the LB to follow (default: not checked)")
	listRules := fs.Bool("list-rules", false, "print the rules (ID, severity, seeds, summary, fix) and exit")
	listProfiles := fs.Bool("list-profiles", false, "print the LB profiles with their health-check timing and sources and exit")
	listRecipes := fs.Bool("list-recipes", false, "print the hardened recipe (preStop, shutdown, grace, readiness, minReadySeconds) per LB profile and traffic policy, which the fixes apply, and exit")

	paths, code, ok := parseInterspersed(c, fs, args)
	if !ok {
		return code
	}
	format, err := doctor.ParseFormat(*output)
	if err != nil {
		return badInput(c, "doctor", "%v", err)
	}
	threshold, err := doctor.ParseSeverity(*failOn)
	if err != nil {
		return badInput(c, "doctor", "--fail-on: %v", err)
	}
	if *listRules {
		return printRules(c, format)
	}
	if *listProfiles {
		return printProfiles(c, format)
	}
	if *listRecipes {
		return printRecipes(c, format)
	}
	var profOpt doctor.Option
	if *profile != "" {
		prof, found := doctor.LookupProfile(*profile)
		if !found {
			return badInput(c, "doctor", "--lb-profile %q: unknown profile (known: %s)", *profile, strings.Join(doctor.ProfileNames(), ", "))
		}
		profOpt = doctor.WithLBProfile(prof)
	}
	kubeMinor := 0
	if *kubeVersion != "" {
		if kubeMinor, err = doctor.ParseKubernetesVersion(*kubeVersion); err != nil {
			return badInput(c, "doctor", "--kubernetes-version: %v", err)
		}
	}
	shutdownOpt := doctor.Option(nil)
	if *nodeShutdown != "" {
		g, err := recipe.ParseShutdownGrace(*nodeShutdown)
		if err != nil {
			return badInput(c, "doctor", "--node-shutdown-grace: %v", err)
		}
		shutdownOpt = doctor.WithNodeShutdown(g)
	}
	if *allNS && len(paths) > 0 && !*useCluster {
		return badInput(c, "doctor", "--all-namespaces applies to the cluster, not to files")
	}

	var ms *doctor.Manifests
	defaultNS := *namespace
	if len(paths) > 0 && *useCluster {
		return badInput(c, "doctor", "give FILE arguments or --cluster, not both")
	}
	if len(paths) == 0 {
		var ns string
		var clusterMinor int
		ms, ns, clusterMinor, err = loadFromCluster(ctx, *kubeconfig, *kubeContext, *namespace, *allNS, *timeout)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
			return exitBroken
		}
		defaultNS = ns
		if kubeMinor == 0 {
			kubeMinor = clusterMinor
		}
	} else {
		// Ctrl-C or SIGTERM (ctx) stops the reading, stdin's included.
		ms, err = doctor.LoadContext(ctx, paths, stdin, doctor.DefaultLimits())
		if err != nil {
			if errors.Is(err, context.Canceled) {
				fmt.Fprintf(c.stderr, "zerodrop doctor: interrupted: %v\n", err)
				return exitBroken
			}
			fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
			return exitBroken
		}
	}

	rep := doctor.Check(ms, profOpt, doctor.WithDefaultNamespace(defaultNS), doctor.WithKubernetesMinor(kubeMinor), shutdownOpt)
	if err := doctor.Write(c.stdout, rep, format); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
		return exitBroken
	}
	if rep.Failed(threshold) {
		return exitFailed
	}
	return exitOK
}

// parseInterspersed parses flags that may appear before, between and after
// the positional arguments (`zerodrop doctor k8s/ -o sarif`); everything after
// "--" is positional.
func parseInterspersed(c *cli, fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	rest := args
	for {
		if code, ok := parseFlags(c, fs, rest); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	return append(positional, tail...), 0, true
}

// loadFromCluster reads the cluster of the kubeconfig; it returns the
// namespace that objects without one belong to.
func loadFromCluster(ctx context.Context, kubeconfig, kubeContext, namespace string, all bool, timeout time.Duration) (*doctor.Manifests, string, int, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", 0, errors.New("no input: give FILE, DIR or - arguments, or point KUBECONFIG (or --kubeconfig) at a cluster to read it live")
		}
		return nil, "", 0, fmt.Errorf("cannot build a client from the kubeconfig (%s): %w", kubeconfigWhere(rules), err)
	}
	if namespace == "" && !all {
		ns, _, err := cc.Namespace()
		if err != nil {
			return nil, "", 0, fmt.Errorf("cannot read the namespace of the kubeconfig context: %w (pass --namespace)", err)
		}
		namespace = ns
	}
	defaultNS := namespace
	if all {
		namespace = ""
		defaultNS = "default"
	}
	cfg.Timeout = timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", 0, fmt.Errorf("cannot create a Kubernetes client for %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ms, err := doctor.LoadCluster(ctx, cs, namespace)
	if err != nil {
		return nil, "", 0, fmt.Errorf("reading the cluster at %s (waited up to %v): %w", cfg.Host, timeout, err)
	}
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, "", 0, fmt.Errorf("reading the Kubernetes version of %s: %w", cfg.Host, err)
	}
	minor, err := doctor.ParseKubernetesVersion(sv.GitVersion)
	if err != nil {
		return nil, "", 0, fmt.Errorf("the cluster at %s reports version %q (pass --kubernetes-version): %w", cfg.Host, sv.GitVersion, err)
	}
	return ms, defaultNS, minor, nil
}

func kubeconfigWhere(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	return strings.Join(rules.Precedence, ":")
}

func printRules(c *cli, format doctor.Format) int {
	rules := doctor.Rules()
	if format != doctor.FormatText {
		return printJSON(c, rules)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSEVERITY\tSEEDS\tSUMMARY")
	for _, r := range rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Severity, strings.Join(r.Seeds, ","), r.Summary)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
		return exitBroken
	}
	return exitOK
}

func printProfiles(c *cli, format doctor.Format) int {
	profiles := doctor.Profiles()
	if format != doctor.FormatText {
		return printJSON(c, profiles)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tALIASES\tINTERVAL\tHEALTHY\tUNHEALTHY\tREMOVAL LAG\tCLUSTER POLICY\tSOURCE")
	for _, p := range profiles {
		name, cluster := p.Name, p.ClusterCheck
		if p.Historical != "" {
			name += " (historical)"
		}
		if cluster == "" {
			cluster = "same"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%v\t%s\t%s\n", name, strings.Join(p.Aliases, ","), p.Interval,
			p.HealthyThreshold, p.UnhealthyThreshold, p.RemovalLag(), cluster, p.Source)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
		return exitBroken
	}
	return exitOK
}

// printRecipes prints harness/recipe's hardened timing for every profile
// and both policies: what the doctor's fixes and the bundled hardened
// workload apply, and where it differs, what the bundled workload gets in
// a disruption whose nodes never get it back (fate "leaves").
func printRecipes(c *cli, format doctor.Format) int {
	type row struct {
		Profile       string `json:"profile"`
		Policy        string `json:"policy"`
		Fate          string `json:"fate"`
		Mechanism     string `json:"mechanism"`
		PreStop       string `json:"preStop"`
		UnreadyOnTerm bool   `json:"unreadyOnTerm"`
		ShutdownDelay string `json:"shutdownDelay"`
		Grace         string `json:"terminationGracePeriod"`
		Readiness     string `json:"readiness"`
		MinReady      string `json:"minReadySeconds"`
		// LBCheck is the check the recipe asks the LB for (a GKE
		// BackendConfig), "" for the LB's own.
		LBCheck string `json:"lbCheck,omitempty"`
		// ReadinessGate is the LB's pod readiness gate the Pods name, ""
		// for none.
		ReadinessGate string `json:"readinessGate,omitempty"`
		Why           string `json:"why"`
	}
	var rows []row
	for _, p := range doctor.Profiles() {
		lb := p.RecipeLB()
		for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
			for _, fate := range []recipe.Fate{recipe.Replaced, recipe.Leaves} {
				r := recipe.For(lb, policy, fate)
				if fate != recipe.Replaced && reflect.DeepEqual(r, recipe.Hardened(lb, policy)) {
					continue
				}
				var check string
				if h := r.LBCheck; h != nil {
					check = fmt.Sprintf("BackendConfig: %s on the healthCheckNodePort, %v x %d", h.Path, h.Interval.D(), h.UnhealthyThreshold)
				}
				rows = append(rows, row{Profile: p.Name, Policy: string(policy), Fate: fate.String(), Mechanism: string(r.Mechanism), PreStop: r.PreStop.String(),
					UnreadyOnTerm: r.UnreadyOnTerm, ShutdownDelay: r.ShutdownDelay.String(), Grace: r.Grace.String(),
					Readiness: fmt.Sprintf("%v x %d", r.ReadinessPeriod, r.ReadinessFailureThreshold), MinReady: r.MinReady.String(), LBCheck: check, ReadinessGate: r.ReadinessGate, Why: r.Why})
			}
		}
	}
	if format != doctor.FormatText {
		return printJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tPOLICY\tFATE\tMECHANISM\tPRESTOP\tUNREADY ON TERM\tSHUTDOWN DELAY\tGRACE\tREADINESS\tMIN READY\tLB CHECK\tREADINESS GATE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Profile, r.Policy, r.Fate, r.Mechanism, r.PreStop, r.UnreadyOnTerm,
			r.ShutdownDelay, r.Grace, r.Readiness, r.MinReady, cmp.Or(r.LBCheck, "the LB's"), cmp.Or(r.ReadinessGate, "-"))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
		return exitBroken
	}
	return exitOK
}

func printJSON(c *cli, v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop doctor: %v\n", err)
		return exitBroken
	}
	return exitOK
}
