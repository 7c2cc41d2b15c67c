// Package suites holds zerodrop's scenarios: each one reproduces an incident
// told in docs/incidents.md on a real cluster under real load. Scenarios are data (a
// registry of names, seeds, cases and bodies) so that tools can list them and
// reports can cite them; the Ginkgo driver in zerodrop_e2e_test.go (build tag
// e2e) turns each case into a labelled spec.
//
// Run them with `make e2e PROVIDER=kind` (everything, built and set up from
// scratch) or `make e2e-smoke` (the smoke subset).
package suites

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// Settings are a suite run's knobs, read from the environment so that `make`
// and CI can pass them through.
type Settings struct {
	// Provider is the cluster provider: kind or existing (PROVIDER).
	Provider string
	// ClusterName is the kind cluster's name (CLUSTER_NAME).
	ClusterName string
	// LB is what implements LoadBalancer Services: metallb, cloud or all
	// (both side by side, the default) (LB).
	LB string
	// LBProfiles are the cloud LB's columns of the matrix (LB_PROFILE, a
	// comma-separated list; default every profile the cloud LB runs), and
	// metallb-bgp and kube-vip-arp where they are named.
	LBProfiles []string
	// BGP: with LB=all the cluster runs MetalLB's BGP mode behind the
	// upstream router, a column of its own (ZERODROP_BGP, default on;
	// 0 leaves it out, as clusters/cluster.sh then builds no router).
	BGP bool
	// KubeVIP: with LB=all the cluster runs kube-vip (services mode) for
	// the Services of its classes, columns of their own: kube-vip-arp, and
	// kube-vip-bgp where BGP is on too (ZERODROP_KUBE_VIP, default on; 0
	// leaves them out, and clusters/cluster.sh then installs no kube-vip).
	KubeVIP bool
	// KubeVIPBGP: with KubeVIP and BGP on, the cluster also runs kube-vip's
	// BGP mode, column kube-vip-bgp (ZERODROP_KUBE_VIP_BGP, default on; 0
	// leaves it out of the columns and of the cluster). kube-vip v0.9.2
	// in BGP mode holds a machine's shutdown that the kubelet's graceful
	// node shutdown does not handle for systemd's stop timeout
	// (docs/kube-vip.md); a departure whose batch has no kube-vip-bgp cell
	// parks it off the leaving machine first, and its cells come last
	// (Scenario.Last), so only the columns of its own batch share the
	// hold.
	KubeVIPBGP bool
	// Shard runs one part of the matrix (SHARD=I/N); zero runs it all.
	Shard Shard
	// Kubeconfig is where the cluster's kubeconfig is (ZERODROP_KUBECONFIG,
	// else KUBECONFIG for existing, else out/kubeconfig).
	Kubeconfig string
	// OutDir receives the report and every run file (ZERODROP_OUT).
	OutDir string
	// CacheDir keeps what outlives a run: the cluster's host state and the
	// cloud LB's built binary (ZERODROP_CACHE, default /var/cache/zerodrop,
	// where `make host-setup` and the node image keep theirs).
	CacheDir string
	// ToolVersion is recorded in every run file and the report
	// (ZERODROP_VERSION, which the Makefile stamps from git describe;
	// default "dev").
	ToolVersion string
	// Rate is the load of a documentation cell (and the most of any
	// witness), in requests per second (ZERODROP_RATE, default
	// scenario.DefaultRate, what a hazard in flight needs).
	Rate int
	// AssertionRate is the load of an assertion cell and of every
	// control, in requests per second (ZERODROP_ASSERTION_RATE; default
	// half of Rate): RateFor.
	AssertionRate int
	// Witnesses bounds how many witnesses watch one disruption
	// (ZERODROP_WITNESSES; default the load budget loadPerCPU per CPU over
	// the rate): a scenario with
	// more cells repeats its disruption for each batch (Batches).
	Witnesses int
	// MachineWitnesses bounds the witnesses of a disruption that takes
	// or adds machines (Scenario.NeedsNodepools): by default half of
	// Witnesses, since a node's death and its Pods' re-creation on the
	// nodes left (a kind node's containerd and kubelet starting a batch's
	// Pod recipes at once) take the rest of the bench (loadPerCPU,
	// WitnessesFor); ZERODROP_WITNESSES sets both.
	MachineWitnesses int
	// Remeasure is how many times a cell whose measurement the load
	// generator spoiled (zdv1.Scenario.LoadSpoiled) is measured again
	// (ZERODROP_REMEASURE, default 1; 0: never): a stall of the instrument
	// is a finding about this machine, not about the target, and one more
	// disruption is how the cell still gets a verdict.
	Remeasure int
	// NoKeepAlive runs every keep-alive cell with a connection per request
	// instead (ZERODROP_KEEPALIVE=off; Scenario.ConnectionPerRequest).
	NoKeepAlive bool
	// KeepCluster keeps a cluster the suite created (KEEP_CLUSTER=1).
	KeepCluster bool
	// NodeImage is the kind node image (KIND_NODE_IMAGE).
	NodeImage string
	// EchoImage is the echo-server image loaded into the cluster.
	EchoImage string
	// Images are more images the selected cells need on the nodes (the
	// fronts', Plan.Images), loaded like EchoImage.
	Images []string
	// ReadyTimeout bounds every wait for workloads (ZERODROP_READY_TIMEOUT).
	ReadyTimeout time.Duration
	// Control is how long each control cell's load runs (ZERODROP_CONTROL,
	// a duration; zero keeps Timing's default).
	Control time.Duration
	// KubeProxyGates are kube-proxy's feature gates for a kind cluster the
	// suite creates, and what it checks a cluster it reuses has
	// (KUBE_PROXY_FEATURE_GATES, "Name=false,Other=true").
	KubeProxyGates cluster.FeatureGates
	// PauseTraces is how many execution traces of the test process's own
	// pauses to keep (ZERODROP_PAUSE_TRACE; 0, the default, keeps no
	// flight recorder): each pause half the send-lag bound or longer writes the
	// last seconds of trace under OutDir/pause-traces (load.PauseTrace).
	PauseTraces int
	// Realtime has the test process ask for a real-time scheduling class
	// for its load (sched.Raise; ZERODROP_REALTIME=off keeps the
	// default scheduler, and a refusal is said and run through).
	Realtime bool
	// SignKey is the private key that signs every run file
	// (ZERODROP_SIGN_KEY, a path; "none" leaves them unsigned; "" the
	// machine key in KeyDir, made on first use: harness/evidence).
	SignKey string
	// KeyDir holds the machine key (evidence.DefaultKeyDir).
	KeyDir string
}

// Known values.
var (
	providers = []string{"kind", "existing"}
	lbs       = contract.LoadBalancers()
)

// SettingsFromEnv reads and validates the settings; getenv is os.Getenv in
// real runs. repoRoot anchors relative default paths.
func SettingsFromEnv(getenv func(string) string, repoRoot string) (Settings, error) {
	s := Settings{
		Provider:     or(getenv("PROVIDER"), "kind"),
		ClusterName:  or(getenv("CLUSTER_NAME"), "zerodrop"),
		LB:           or(getenv("LB"), contract.LBAll),
		OutDir:       or(getenv("ZERODROP_OUT"), filepath.Join(repoRoot, "out", "e2e")),
		NodeImage:    getenv("KIND_NODE_IMAGE"),
		EchoImage:    or(getenv("ECHO_IMAGE"), fixtures.DefaultImage),
		CacheDir:     or(getenv("ZERODROP_CACHE"), "/var/cache/zerodrop"),
		ToolVersion:  or(getenv("ZERODROP_VERSION"), "dev"),
		ReadyTimeout: scenario.DefaultReadyTimeout,
		BGP:          getenv("ZERODROP_BGP") != "0",
		KubeVIP:      getenv("ZERODROP_KUBE_VIP") != "0",
		KubeVIPBGP:   getenv("ZERODROP_KUBE_VIP_BGP") != "0",
	}
	var problems []string
	s.LBProfiles = ModelList(getenv("LB_PROFILE"))
	if s.LB == contract.LBMetalLB && len(s.LBProfiles) > 0 {
		problems = append(problems, fmt.Sprintf("LB_PROFILE=%q names cloud LB profiles but LB=metallb runs none: use LB=all or LB=cloud", getenv("LB_PROFILE")))
	}
	// Every witness of a disruption streams its own load; the load budget
	// (below) keeps the machine's total within what it generates and
	// serves, so the rate sets how many witnesses one disruption can have.
	s.Rate = scenario.DefaultRate
	if v := getenv("SHARD"); v != "" {
		sh, err := ParseShard(v)
		if err != nil {
			problems = append(problems, err.Error())
		}
		s.Shard = sh
	}
	if !contains(providers, s.Provider) {
		problems = append(problems, fmt.Sprintf("PROVIDER=%q is not one of %s", s.Provider, strings.Join(providers, ", ")))
	}
	if !contains(lbs, s.LB) {
		problems = append(problems, fmt.Sprintf("LB=%q is not one of %s", s.LB, strings.Join(lbs, ", ")))
	}
	s.Kubeconfig = getenv("ZERODROP_KUBECONFIG")
	if s.Kubeconfig == "" && s.Provider == "existing" {
		s.Kubeconfig = getenv("KUBECONFIG")
	}
	if s.Kubeconfig == "" {
		s.Kubeconfig = filepath.Join(repoRoot, "out", "kubeconfig")
	}
	if p := intSetting(getenv, "ZERODROP_RATE", "requests per second", 1, 5000, &s.Rate); p != "" {
		problems = append(problems, p)
	}
	s.AssertionRate = max(s.Rate/2, 1)
	if p := intSetting(getenv, "ZERODROP_ASSERTION_RATE", "requests per second of an assertion cell,", 1, 5000, &s.AssertionRate); p != "" {
		problems = append(problems, p)
	}
	s.Witnesses = max(loadPerCPU*runtime.NumCPU()/s.Rate, 1)
	s.MachineWitnesses = max(s.Witnesses/2, 1)
	if p := intSetting(getenv, "ZERODROP_WITNESSES", "how many witnesses may watch one disruption,", 1, 500, &s.Witnesses); p != "" {
		problems = append(problems, p)
	} else if getenv("ZERODROP_WITNESSES") != "" {
		s.MachineWitnesses = s.Witnesses
	}
	s.Remeasure = 1
	if p := intSetting(getenv, "ZERODROP_REMEASURE", "how many times a measurement the load generator spoiled is taken again,", 0, 5, &s.Remeasure); p != "" {
		problems = append(problems, p)
	}
	if g, err := cluster.ParseFeatureGates(getenv("KUBE_PROXY_FEATURE_GATES")); err != nil {
		problems = append(problems, "KUBE_PROXY_FEATURE_GATES: "+err.Error())
	} else {
		s.KubeProxyGates = g
	}
	if p := intSetting(getenv, "ZERODROP_PAUSE_TRACE", "how many execution traces of pauses to keep,", 0, 100, &s.PauseTraces); p != "" {
		problems = append(problems, p)
	}
	if v := getenv("ZERODROP_READY_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("ZERODROP_READY_TIMEOUT=%q: want a positive duration such as 4m", v))
		} else {
			s.ReadyTimeout = d
		}
	}
	if v := getenv("ZERODROP_CONTROL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second || d > 24*time.Hour {
			problems = append(problems, fmt.Sprintf("ZERODROP_CONTROL=%q: want how long each control runs, a duration from 10s to 24h such as 30m", v))
		} else {
			s.Control = d
		}
	}
	keepAlive := true
	if p := onOffSetting(getenv, "ZERODROP_KEEPALIVE", "on (the default) or off (a connection per request)", &keepAlive); p != "" {
		problems = append(problems, p)
	}
	s.NoKeepAlive = !keepAlive
	s.SignKey = getenv("ZERODROP_SIGN_KEY")
	s.KeyDir = evidence.DefaultKeyDir(getenv)
	s.Realtime = true
	if p := onOffSetting(getenv, "ZERODROP_REALTIME", "on (the default: the load runs in a real-time class where the kernel allows it) or off", &s.Realtime); p != "" {
		problems = append(problems, p)
	}
	switch v := getenv("KEEP_CLUSTER"); v {
	case "", "0", "false":
	case "1", "true":
		s.KeepCluster = true
	default:
		problems = append(problems, fmt.Sprintf("KEEP_CLUSTER=%q: want 1 or 0", v))
	}
	if len(problems) > 0 {
		return s, fmt.Errorf("bad settings: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

// intSetting reads the integer variable name into dst when it is set and
// within lo..hi; otherwise it leaves dst and returns the problem, saying
// what the number is (want).
func intSetting(getenv func(string) string, name, want string, lo, hi int, dst *int) string {
	v := getenv(name)
	if v == "" {
		return ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Sprintf("%s=%q: want %s between %d and %d", name, v, want, lo, hi)
	}
	*dst = n
	return ""
}

// onOffSetting reads an on/off switch into dst, which holds its default;
// it returns the problem with a value that is neither, or "".
func onOffSetting(getenv func(string) string, name, want string, dst *bool) string {
	switch v := getenv(name); v {
	case "":
	case "on":
		*dst = true
	case "off":
		*dst = false
	default:
		return fmt.Sprintf("%s=%q: want %s", name, v, want)
	}
	return ""
}

// WitnessesFor is how many witnesses may watch one disruption of sc:
// MachineWitnesses where it takes or adds machines, else Witnesses. At the
// full budget (36 cells of spot-interruption at 50/s, 1,800/s, on this
// 2-core machine, 2026-11-29) the machine's CPUs had no idle time around
// the node's death and its replacement's join (load average 15): Pods of
// every column flapped between ready and not, every cell of the batch lost
// 650-6,900 requests and the load generator fell behind. At three quarters
// (24 cells, 1,200/s) a batch of the cloud LB's columns (aws-nlb-ip, the
// Azure and Google ones, two of them proxies) still stalled when the dead
// node's Pods were re-created elsewhere: 0.3-2.8 s of timeouts in every
// cell at once in two runs and 30 s of them in a third, the kernel's CPU
// pressure (PSI cpu some) 92 % on average then, 84 % over the whole load.
// At half (16 cells, 800/s) the same columns' batch was judged as expected
// in every cell, nothing lost after the node's end, PSI 74 % throughout.
func (s Settings) WitnessesFor(sc Scenario) int {
	if sc.NeedsNodepools {
		return s.MachineWitnesses
	}
	return s.Witnesses
}

// RateFor is the load of a cell of the role, in requests per second. An
// assertion's evidence is zero dropped over thousands of requests, which
// half the rate still gives (a rollout's cell sends about 2,000 at 25/s);
// a documentation cell's is the few requests in flight when its hazard
// strikes, which needs the rate. The controls judge the ground for every
// cell of their column and are assertions: zero dropped while nothing is
// disrupted. Halving the assertions' streams keeps the bench off its
// saturation knee (loadPerCPU), where a saturated machine, not the
// workload, answers late.
func (s Settings) RateFor(role zdv1.Role) int {
	return s.rate(role, "")
}

// rateOf is cell c's load (RateFor), its protocol's too. A gRPC cell runs
// at the assertion rate whatever its role, a WebSocket cell opens a tenth
// of the full rate's sessions a second. Their evidence of a hazard is the
// streams and sessions open when it strikes, and at those rates some five
// to ten streams of a second and fifteen sessions of three seconds are
// open at any time (load.MatrixShape); their requests cost the bench more
// than HTTP/1.1's, which its witness budget (Settings.Witnesses) was
// measured with: the CPU the load generator and the echo server spend on
// the requests 300/s adds to 100/s, against HTTP/1.1's, is 0.99 for h2c,
// 1.84 for gRPC and 2.86 for WebSocket sessions on loopback (make
// bench-cost, docs/protocols.md "What a request costs the bench",
// 2026-12-06), so at these rates each weighs less than an HTTP/1.1 cell
// at the full rate. At their roles' rates 24 gRPC cells of a rollout
// saturated the bench (every Pod answered in 0.5-3 s for two seconds, and
// hardened cells lost 1-31 calls to timeouts), and at 25 sessions a second
// the WebSocket cells timed out from their first second, before any
// disruption (CPU pressure 97 %, load average 60: each session is also a
// new connection through kube-proxy and the LB, which loopback does not
// pay).
//
// A front's cells (frontCases) run at a fifth of the full rate whatever
// their role: every request crosses a proxy and kube-proxy again on its
// way to the echo server, two servers' work on the same two cores. At the
// assertion rate, 34 front cells of one rollout (850 requests/s) stalled
// the bench twice, as the new proxy Pods started: every cell, hardened or
// not, answered in 1.5-2 s for a second, and three hardened cells lost a
// request each to the 2 s timeout (2026-12-06).
func (s Settings) rateOf(c Case) int {
	if c.Front != "" {
		return max(s.Rate/5, 1)
	}
	return s.rate(c.Role, c.Protocol)
}

func (s Settings) rate(role zdv1.Role, protocol string) int {
	if protocol == zdv1.ProtocolWebSocket {
		return max(s.Rate/10, 1)
	}
	if zdv1.ProtocolIsGRPC(protocol) {
		role = zdv1.RoleAssertion
	}
	if role == zdv1.RoleAssertion && s.AssertionRate > 0 {
		return s.AssertionRate
	}
	return s.Rate
}

// loadPerCPU is the default load budget, in requests per second per CPU:
// the witnesses of one disruption (ZERODROP_WITNESSES, default this budget
// over the documentation rate) stream at most that much together, and
// three quarters of it when half of them are assertions at half the rate
// (RateFor). Measured on a 2-core
// machine (README, "Interference"): 36 witnesses of one rollout restart at
// 50/s each, 1,800/s, over shared Pods (9 Deployments): every hardened cell
// 0 dropped, no load-generator stall; before the Pods were shared the same
// 36 witnesses started 108 Pods at once and every hardened cell dropped.
// It is the bench's saturation knee, not a margin: swept with the host's
// CPU sampled (docs/matrix-runs.md, "The stream budget, swept"), that
// rollout left 9 % of the CPU idle at 1,800/s (under 2 % for a third of
// it), 35 % at 900/s, and none at 3,600/s, where the rollouts stalled.
const loadPerCPU = 900

// Timing is the scenario bodies' timing with the settings' overrides.
func (s Settings) Timing() Timing {
	t := DefaultTiming()
	if s.Control > 0 {
		t.Control = s.Control
	}
	return t
}

// Scenarios is the registry as these settings run it: with a connection
// per request in every keep-alive cell where NoKeepAlive says so.
func (s Settings) Scenarios() []Scenario {
	out := Scenarios()
	if s.NoKeepAlive {
		for i := range out {
			out[i] = out[i].ConnectionPerRequest()
		}
	}
	return out
}

// Shard is part Index of Count of the matrix (1-based): the plan deals its
// batches longest first to the shard with the least work so far (Plan), so
// shards are disjoint, together whole, and end at about the same time;
// every shard also runs the controls of the columns it has cells of.
type Shard struct{ Index, Count int }

// ParseShard reads "I/N".
func ParseShard(v string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(v, "%d/%d", &sh.Index, &sh.Count); err != nil || sh.Count < 1 || sh.Index < 1 || sh.Index > sh.Count ||
		fmt.Sprintf("%d/%d", sh.Index, sh.Count) != v {
		return Shard{}, fmt.Errorf("SHARD=%q: want I/N with 1 <= I <= N, such as 2/4", v)
	}
	return sh, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// ModelList reads a comma-separated list of LB models (LB_PROFILE,
// `zerodrop test --lb-profile`): names trimmed, empty ones dropped.
func ModelList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
