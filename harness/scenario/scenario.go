// Package scenario runs one zerodrop scenario against a cluster: it deploys
// the workload, waits until the load balancer serves it, starts the
// observer and the attributed load into a fresh run file, lets the caller
// act on the cluster, then stops the load, closes the run file and computes
// the verdict. It is the harness's unit of work and needs no test framework:
// the Ginkgo specs in suites/ are thin scripts over it.
//
//	run, err := scenario.Begin(ctx, env, spec)
//	defer run.Cleanup(ctx)
//	run.Kube.RestartWorkload(ctx, run.Target.Kind, run.Target.Namespace, run.Target.Workload, 3*time.Minute)
//	run.Settle(ctx, 10*time.Second)
//	result, err := run.Finish(ctx)
package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/lb"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/observe"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/standin"
	"zerodrop.dev/zerodrop/harness/verdict"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// Env is what every scenario of a suite run shares.
type Env struct {
	// Clientset reaches the cluster under test.
	Clientset kubernetes.Interface
	// OutDir receives one directory per scenario run (run file and
	// scenario.json).
	OutDir string
	// Rate is the load in requests per second of a run whose Spec sets
	// none (default DefaultRate).
	Rate int
	// RequestTimeout is the per-request timeout (default
	// DefaultRequestTimeout).
	RequestTimeout time.Duration
	// ReadyTimeout bounds each wait for the workload and its LB address
	// (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// ToolVersion is recorded in every run file.
	ToolVersion string
	// Logger gets one line per step; default discards.
	Logger *slog.Logger
	// Pauses is the process's pause watch, shared by every witness's load
	// (harness/load PauseWatch: one sampling of the process for all of
	// them); nil: each load watches on its own.
	Pauses *load.PauseWatch
	// Ports is the cycle of local ports every witness's new connections
	// take (harness/load Ports), shared so that a Service given an
	// address an earlier one had continues the earlier one's cycle and
	// never meets the conntrack entries of its own 4-tuples; nil: each
	// load has a cycle of its own.
	Ports *load.Ports
	// Sealer signs every run file when it is closed (harness/evidence Key);
	// nil leaves them unsigned.
	Sealer runfile.Sealer
}

// Env's defaults, each written here once: a suite run (suites.Settings)
// starts from the same numbers.
const (
	// DefaultRate is a run's load, in requests per second: at 50/s a naive
	// Pod that exits at once still meets the requests in flight through it
	// (every naive rolling-update cell of the default matrix reproduced its
	// hazard, 18 of 18; at 25/s 8 of 18 missed it: docs/matrix-runs.md,
	// "The stream budget, swept").
	DefaultRate = 50
	// DefaultRequestTimeout counts a blackholed request as dropped well
	// before the scenario moves on.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultReadyTimeout bounds each wait for a workload, its endpoints
	// and its LB address: a rollout of the default matrix's Pods on two
	// cores takes about a minute, so four leave room for a slow image load.
	DefaultReadyTimeout = 4 * time.Minute
)

func (e *Env) defaults() {
	if e.Rate <= 0 {
		e.Rate = DefaultRate
	}
	if e.RequestTimeout <= 0 {
		e.RequestTimeout = DefaultRequestTimeout
	}
	if e.ReadyTimeout <= 0 {
		e.ReadyTimeout = DefaultReadyTimeout
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
}

// Spec is one scenario run: what it is (the report's ScenarioSpec), the
// workload it deploys and how the load is sent.
type Spec struct {
	zdv1.ScenarioSpec
	// Workload builds the echo-server Deployment, Service and PDB.
	Workload []fixtures.Option
	// StandIn, when set, is deployed instead: a user's workload with the
	// echo server in its containers (harness/standin), in its own
	// namespace; Workload is then not read.
	StandIn *standin.StandIn
	// Service, when set, measures a Service already in the cluster, as a
	// user's own suite deployed it: nothing is deployed, and Cleanup
	// removes nothing. Workload and StandIn are then not read.
	Service *ServiceRef
	// KeepAlive turns connection reuse by the load generator on or off
	// (default on, as browsers and most clients do).
	KeepAlive *bool
	// Protocol is how the load's requests travel (load.WithProtocol:
	// zdv1.ProtocolHTTP1, the default, zdv1.ProtocolH2C, zdv1.ProtocolGRPC
	// or zdv1.ProtocolGRPCStream).
	Protocol string
	// Shape is the load's form beyond protocol and rate (streams, their
	// length; load.Shape): the zero Shape is the load's default.
	Shape load.Shape
	// Rate is this run's load in requests per second (0: Env.Rate). A
	// suite gives runs whose evidence is different things different
	// rates: zero dropped of thousands needs fewer per second than a
	// hazard that only the few requests in flight at one moment meet.
	Rate int
	// Connections caps open connections per target (0: load's default).
	Connections int
	// RotateConnections, when set, keeps that many kept-alive connections
	// and sends each request on the next in turn (load.WithRotation).
	RotateConnections int
	// SkipLoad deploys and observes without starting load (for scenarios
	// that start it themselves).
	SkipLoad bool
	// LB connects the run to its load balancer's own view, when the LB
	// has one (zerodrop's cloud LB); zero for an LB without (MetalLB).
	LB LBHooks
	// SharePods lets witnesses begun together (BeginWitnesses; Begin
	// alone ignores it) whose
	// bundled workloads build the same Pods in the same namespace
	// (fixtures.SamePods) share them: whichever comes first creates the
	// namespace, Deployment and PodDisruptionBudget, each adds its own
	// Service (fixtures.WithServiceName) and load stream. So one set of
	// Pod starts and one disruption of them serve every LB model and
	// traffic policy. A user's stand-in never shares.
	SharePods bool
}

// rate is the run's load in requests per second (Spec.Rate, else env's).
func (s Spec) rate(env *Env) int {
	if s.Rate > 0 {
		return s.Rate
	}
	return env.Rate
}

// protocol is the load's protocol by name (Spec.Protocol, default HTTP/1.1).
func (s Spec) protocol() string { return zdv1.ProtocolName(s.Protocol) }

// keepAlive is whether the load reuses connections (Spec.KeepAlive, default on).
func (s Spec) keepAlive() bool { return s.KeepAlive == nil || *s.KeepAlive }

// namespaceDeletion bounds the wait for a witness's namespace to go.
const namespaceDeletion = 3 * time.Minute

// CloudLBHooks connect a run to zerodrop's cloud LB whose admin server is
// at adminURL (harness/lb): its events go into the run file, the load
// starts once it has settled the Service, and AwaitLB ends once it has
// nothing left to do.
func CloudLBHooks(adminURL string, logger *slog.Logger) LBHooks {
	return LBHooks{
		Events: func(ctx context.Context, _, _ string, sink zdv1.EventSink) error {
			return lb.SubscribeEvents(ctx, adminURL, sink, logger)
		},
		WaitSettled: func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
			st, err := lb.WaitSettled(ctx, adminURL, namespace+"/"+name, timeout)
			return st.Summary(), err
		},
		Quiet: func(ctx context.Context, namespace, name string) (bool, string, error) {
			return lb.Quiet(ctx, adminURL, namespace+"/"+name)
		},
	}
}

// LBHooks are a load balancer's own view of a Service.
type LBHooks struct {
	// Prepare, when set, completes the witness's Service before it is
	// created, for an LB that reads something from the Service that no
	// controller of its own fills in (kube-vip: the address it announces).
	Prepare func(ctx context.Context, svc *corev1.Service) error
	// Events, when set, subscribes to the load balancer's own events (the
	// cloud-style LB; the upstream router of MetalLB's BGP mode) about the
	// Service namespace/name and writes them to sink until ctx is done.
	Events func(ctx context.Context, namespace, name string, sink zdv1.EventSink) error
	// WaitSettled, when set, waits until the load balancer has settled the
	// Service (address forwarded, every node's health verdict matching the
	// cluster: see lb.ServiceState.Settled) and describes what it settled
	// on; the load starts only after. A cloud LB's start-up (fail-open,
	// first checks) is not what a scenario measures.
	WaitSettled func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error)
	// Quiet, when set, asks the load balancer once whether it has anything
	// left to do for the Service (a health verdict not in or not acted on, a
	// backend draining, a removal not programmed: see lb.ServiceState.Quiet)
	// and describes its state. AwaitLB stops waiting out the LB's longest lag
	// once it has.
	Quiet func(ctx context.Context, namespace, name string) (bool, string, error)
}

// Target is what a run deploys and acts on: the names, selector and
// numbers the harness and the scenario bodies need, from the bundled
// workload (fixtures.Config) or from a user's stand-in alike.
type Target struct {
	Namespace string
	// Kind is the workload's kind (kube.KindDeployment or
	// kube.KindStatefulSet); Workload its name, Service the Service's.
	Kind              string
	Workload, Service string
	Selector          map[string]string
	Replicas          int32
	MinReadySeconds   int32
	// Grace is the Pods' termination grace (the API default when unset).
	Grace time.Duration
	// Port and Path are where the load is sent through the LB.
	Port int32
	Path string
	// AdminPort is the serving container's echo admin port.
	AdminPort int32
}

func configTarget(c fixtures.Config) Target {
	return Target{Namespace: c.Namespace, Kind: kube.KindDeployment, Workload: c.Name, Service: c.Service(), Selector: c.SelectorLabels(), Replicas: c.Replicas,
		MinReadySeconds: c.MinReadySeconds, Grace: c.EffectiveTerminationGrace(), Port: c.ServicePort, Path: "/", AdminPort: fixtures.AdminPort}
}

func standInTarget(s *standin.StandIn) (Target, error) {
	_, sel, minReady := s.Spec()
	if s.Kind != kube.KindDeployment && s.Kind != kube.KindStatefulSet {
		return Target{}, fmt.Errorf("a %s stand-in: the harness acts on Deployments and StatefulSets", s.Kind)
	}
	if sel == nil || len(sel.MatchExpressions) > 0 {
		// Pods are listed by matchLabels; expressions would need a
		// selector the observer does not take.
		return Target{}, fmt.Errorf("the %s's selector must be matchLabels only", s.Kind)
	}
	return Target{Namespace: s.Namespace, Kind: s.Kind, Workload: s.Name, Service: s.ServiceName, Selector: sel.MatchLabels, Replicas: s.Replicas,
		MinReadySeconds: minReady, Grace: s.Grace(), Port: s.Port, Path: s.Path, AdminPort: s.Serving.Admin}, nil
}

// ServiceRef names a Service of type LoadBalancer already in the cluster
// and where the load goes on it.
type ServiceRef struct {
	Namespace, Name string
	// Port is the Service port the load is sent to; 0: its first TCP port.
	Port int32
	// Path is the HTTP path requested; "" is "/". The server behind it must
	// answer 2xx there: anything else counts as dropped.
	Path string
}

// existingTarget reads the Service ref names and makes it the run's target.
// Its Pods are found by the Service's selector; no workload is named, since
// the harness does not act on it (the caller's disruption does). knobs are
// what the report shows of the Service.
func existingTarget(ctx context.Context, cs kubernetes.Interface, ref ServiceRef) (Target, map[string]string, error) {
	key := ref.Namespace + "/" + ref.Name
	if ref.Namespace == "" || ref.Name == "" {
		return Target{}, nil, fmt.Errorf("service %q: want a namespace and a name", key)
	}
	svc, err := cs.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return Target{}, nil, fmt.Errorf("service %s: %w (create it before measuring it)", key, err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return Target{}, nil, fmt.Errorf("service %s is of type %s: the load goes through a load balancer, so it must be of type LoadBalancer", key, svc.Spec.Type)
	}
	if len(svc.Spec.Selector) == 0 {
		// The observer follows the Service's Pods by its selector; a
		// Service without one has endpoints someone else manages.
		return Target{}, nil, fmt.Errorf("service %s has no selector: its Pods cannot be followed", key)
	}
	port := ref.Port
	if port == 0 {
		for _, p := range svc.Spec.Ports {
			if p.Protocol == corev1.ProtocolTCP || p.Protocol == "" {
				port = p.Port
				break
			}
		}
		if port == 0 {
			return Target{}, nil, fmt.Errorf("service %s has no TCP port: the load is HTTP", key)
		}
	} else if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Port == port && (p.Protocol == corev1.ProtocolTCP || p.Protocol == "")
	}) {
		return Target{}, nil, fmt.Errorf("service %s has no TCP port %d", key, port)
	}
	path := ref.Path
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		return Target{}, nil, fmt.Errorf("service %s: path %q: want an absolute path", key, path)
	}
	knobs := map[string]string{"service": key, "externalTrafficPolicy": string(svc.Spec.ExternalTrafficPolicy)}
	if knobs["externalTrafficPolicy"] == "" {
		knobs["externalTrafficPolicy"] = string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	if svc.Spec.LoadBalancerClass != nil {
		knobs["loadBalancerClass"] = *svc.Spec.LoadBalancerClass
	}
	return Target{Namespace: ref.Namespace, Service: ref.Name, Selector: svc.Spec.Selector, Port: port, Path: path}, knobs, nil
}

// Run is a scenario in progress.
type Run struct {
	Env  *Env
	Spec Spec
	// Config is the resolved bundled workload (zero for a stand-in).
	Config fixtures.Config
	// Target is what the run deployed and acts on.
	Target Target
	// Kube acts on the cluster and records each step in the run file.
	Kube *kube.Client
	// Address is the Service's load balancer address; URL the load's target.
	Address, URL string
	// Dir holds this run's files; RunFile is the run file's path.
	Dir, RunFile string
	// Observer follows nodes, pods and endpoints.
	Observer *observe.Observer

	// shared: the Pods and their namespace are shared with other witnesses
	// (Spec.SharePods); Cleanup removes the Service only and the witnesses'
	// Cleanup the namespace.
	shared bool
	// existing: the run measures a Service already in the cluster
	// (Spec.Service); it deploys and removes nothing.
	existing bool
	runCtx   context.Context
	w        *runfile.Writer
	sink     *deferredSink
	load     *load.Load
	running  *load.Running
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	// stopped: the load and background work ended (stop); finished: the
	// run file is closed too (close). cause is what broke the run, for its
	// end line.
	stopped  bool
	finished bool
	cause    error
	log      *slog.Logger
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// DirName turns a scenario name and labels into a directory name.
func DirName(name string) string {
	s := unsafeName.ReplaceAllString(name, "-")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// Begin deploys the workload, waits until its load balancer answers, and
// starts observing and loading. On error everything it created is removed
// again.
func Begin(ctx context.Context, env *Env, spec Spec) (*Run, error) {
	r, err := begin(ctx, env, spec, false)
	if err != nil {
		return nil, err
	}
	if err := r.startLoad(); err != nil {
		r.abort(ctx, err)
		return nil, err
	}
	return r, nil
}

// begin is Begin up to the load, which startLoad starts; share says
// whether the run shares its Pods with others begun together
// (BeginWitnesses, Spec.SharePods), whose Cleanup then removes their
// namespace.
func begin(ctx context.Context, env *Env, spec Spec, share bool) (_ *Run, err error) {
	begun := time.Now()
	env.defaults()
	var (
		cfg    fixtures.Config
		target Target
	)
	knobs := map[string]string{}
	switch {
	case spec.Service != nil:
		if target, knobs, err = existingTarget(ctx, env.Clientset, *spec.Service); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
	case spec.StandIn != nil:
		if target, err = standInTarget(spec.StandIn); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
	default:
		if cfg, err = fixtures.NewConfig(spec.Workload...); err != nil {
			return nil, fmt.Errorf("scenario %s: workload: %w", spec.Name, err)
		}
		target = configTarget(cfg)
	}
	if spec.Config == nil {
		spec.Config = map[string]string{}
	}
	if spec.Service == nil && spec.StandIn == nil {
		knobs = describe(cfg)
	}
	for k, v := range knobs {
		if _, set := spec.Config[k]; !set {
			spec.Config[k] = v
		}
	}
	r := &Run{Env: env, Spec: spec, Config: cfg, Target: target, shared: share && spec.StandIn == nil && spec.Service == nil,
		existing: spec.Service != nil, log: env.Logger.With("scenario", spec.Name)}
	r.Dir = filepath.Join(env.OutDir, DirName(spec.Name))
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("scenario %s: create output directory: %w", spec.Name, err)
	}
	keepAlive := spec.keepAlive()
	// The load is built before anything is deployed so that a bad setting
	// fails without touching the cluster; the target is filled in below.
	opts := []load.Option{load.WithRate(spec.rate(env)), load.WithTimeout(env.RequestTimeout), load.WithKeepAlive(keepAlive)}
	if env.Ports != nil {
		opts = append(opts, load.WithPorts(env.Ports))
	}
	if env.Pauses != nil {
		opts = append(opts, load.WithPauseWatch(env.Pauses))
	}
	if spec.RotateConnections > 0 {
		opts = append(opts, load.WithRotation(spec.RotateConnections))
	}
	if spec.Protocol != "" {
		opts = append(opts, load.WithProtocol(spec.Protocol))
	}
	opts = append(opts, spec.Shape.Options()...)
	if spec.Connections > 0 {
		opts = append(opts, load.WithMaxConnections(spec.Connections))
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel, r.runCtx = cancel, runCtx
	defer func() {
		if err != nil {
			r.abort(ctx, err)
		}
	}()

	r.RunFile = filepath.Join(r.Dir, "run.jsonl")
	// A re-run of the same scenario replaces its old evidence, its
	// signature included (a run that breaks before its run file is
	// signed must not stand beside an old one's).
	_ = os.Remove(r.RunFile)
	_ = os.Remove(evidence.SignatureFile(r.RunFile))
	// The run file's header names the load, which needs the LB address, so
	// events of the deployment wait in memory until the file exists.
	r.sink = &deferredSink{}
	r.Kube = kube.New(env.Clientset, kube.WithEventSink(r.sink))
	if err := r.deploy(ctx, cfg); err != nil {
		return nil, err
	}
	if r.existing {
		// The caller's own Service: no workload to wait for and no known
		// number of Pods; it serves once every endpoint it has is ready.
		if _, err := r.Kube.WaitEndpointsSettled(ctx, target.Namespace, target.Service, env.ReadyTimeout); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
	} else {
		if cfg.Front != "" {
			if err := r.Kube.WaitWorkload(ctx, kube.KindDeployment, target.Namespace, cfg.BackendName(), env.ReadyTimeout); err != nil {
				return nil, fmt.Errorf("scenario %s: the echo server behind %s: %w\n%s", spec.Name, cfg.Front, err, r.podsState(ctx))
			}
		}
		if err := r.Kube.WaitWorkload(ctx, target.Kind, target.Namespace, target.Workload, env.ReadyTimeout); err != nil {
			return nil, fmt.Errorf("scenario %s: %w\n%s", spec.Name, err, r.podsState(ctx))
		}
		if _, err := r.Kube.WaitReadyEndpoints(ctx, target.Namespace, target.Service, int(target.Replicas), env.ReadyTimeout); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
	}
	r.Address, err = r.Kube.WaitLoadBalancer(ctx, target.Namespace, target.Service, env.ReadyTimeout)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
	}
	if spec.LB.WaitSettled != nil {
		settled, err := spec.LB.WaitSettled(ctx, target.Namespace, target.Service, env.ReadyTimeout)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
		r.step("lb-settled", "backends", settled)
		r.Kube.Note("lb", "load balancer settled before the load: "+settled)
	}
	r.URL = "http://" + net.JoinHostPort(r.Address, strconv.Itoa(int(target.Port))) + target.Path
	if err := waitServing(ctx, r.URL, env.ReadyTimeout, env.Ports); err != nil {
		return nil, fmt.Errorf("scenario %s: %w%s", spec.Name, err, podPortHint(ctx, env.Clientset, target.Namespace, target.Service, target.Port))
	}
	r.step("serving", "url", r.URL)

	if spec.SkipLoad {
		if err := r.createRunFile(nil); err != nil {
			return nil, err
		}
	} else {
		opts = append(opts, load.WithTargets(r.URL), load.WithRunID(runIDPrefix(spec.Name)))
		r.load, err = load.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: load: %w", spec.Name, err)
		}
		settings := r.load.Settings()
		if err := r.createRunFile(&settings); err != nil {
			return nil, err
		}
	}

	if spec.LB.Events != nil {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			if err := spec.LB.Events(runCtx, target.Namespace, target.Service, lbEventsOf(target.Namespace+"/"+target.Service, begun, r.sink)); err != nil && runCtx.Err() == nil {
				r.log.Warn("load balancer event stream ended", "err", err)
				r.Kube.Note("lb", "load balancer event stream ended: "+err.Error())
			}
		}()
	}
	r.Observer = observe.New(env.Clientset, observe.Target{
		Namespace: target.Namespace, Service: target.Service, PodSelector: selector(target.Selector),
	}, r.sink)
	if err := r.Observer.Start(runCtx); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", spec.Name, err)
	}
	return r, nil
}

// deploy creates what the run measures: the namespace, workload, Service
// (and BackendConfig) of the bundled workload or of a stand-in; nothing for
// a Service already in the cluster (Spec.Service).
func (r *Run) deploy(ctx context.Context, cfg fixtures.Config) error {
	spec, target := r.Spec, r.Target
	if r.existing {
		r.step("measure", "service", target.Namespace+"/"+target.Service, "port", target.Port, "path", target.Path)
		return nil
	}
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target.Namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "zerodrop"}}}}
	if spec.StandIn != nil {
		r.step("deploy", "namespace", target.Namespace, "workload", "stand-in of "+spec.StandIn.Workload)
		if spec.LB.Prepare != nil {
			if err := spec.LB.Prepare(ctx, spec.StandIn.ServiceObj); err != nil {
				return fmt.Errorf("scenario %s: service %s/%s: %w", spec.Name, target.Namespace, target.Service, err)
			}
		}
		objs = append(objs, spec.StandIn.Objects()...)
	} else {
		r.step("deploy", "namespace", target.Namespace, "workload", cfg.String(), "shared", r.shared)
		// A front's configuration and the echo server behind it come
		// before its Pods, which read the one and forward to the other.
		objs = append(objs, fixtures.BuildFront(cfg)...)
		objs = append(objs, fixtures.BuildDeployment(cfg))
		if pdb := fixtures.BuildPDB(cfg); pdb != nil {
			objs = append(objs, pdb)
		}
	}
	create := r.Kube.Create
	if r.shared {
		create = r.Kube.CreateShared
	}
	if err := create(ctx, objs...); err != nil {
		return fmt.Errorf("scenario %s: %w", spec.Name, err)
	}
	var bcErr error
	if spec.StandIn == nil {
		// The Service is the witness's own, shared Pods or not.
		svc := fixtures.BuildService(cfg)
		if spec.LB.Prepare != nil {
			if err := spec.LB.Prepare(ctx, svc); err != nil {
				return fmt.Errorf("scenario %s: service %s/%s: %w", spec.Name, target.Namespace, target.Service, err)
			}
		}
		if err := r.Kube.Create(ctx, svc); err != nil {
			return fmt.Errorf("scenario %s: %w", spec.Name, err)
		}
		if cfg.LBCheck != nil {
			bcErr = r.createBackendConfig(ctx, target.Namespace, target.Service, func(port int32) (*unstructured.Unstructured, error) {
				if port == 0 {
					return nil, errors.New("its BackendConfig's check asks the Service's healthCheckNodePort, and it has none (externalTrafficPolicy Local gives one)")
				}
				return fixtures.BuildBackendConfig(cfg, port), nil
			})
		}
	} else if spec.StandIn.BackendConfig != nil {
		bcErr = r.createBackendConfig(ctx, target.Namespace, target.Service, func(port int32) (*unstructured.Unstructured, error) {
			return spec.StandIn.BackendConfigFor(port), nil
		})
	}
	if bcErr != nil {
		return fmt.Errorf("scenario %s: %w", spec.Name, bcErr)
	}
	return nil
}

// createBackendConfig creates the GKE BackendConfig the Service ns/name
// names, as build makes it from the healthCheckNodePort the API server gave
// the Service (a check that asks kube-proxy needs that port, known only
// once the Service exists: fixtures.BuildBackendConfig, standin
// BackendConfigFor).
func (r *Run) createBackendConfig(ctx context.Context, ns, name string, build func(healthCheckNodePort int32) (*unstructured.Unstructured, error)) error {
	svc, err := r.Env.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read service %s/%s for its healthCheckNodePort: %w", ns, name, err)
	}
	port := svc.Spec.HealthCheckNodePort
	bc, err := build(port)
	if err != nil {
		return fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	r.step("backend-config", "service", name, "healthCheckNodePort", port, "backendconfig", bc.GetName())
	return r.Kube.CreateCustom(ctx, profiles.BackendConfigResource, bc)
}

// startLoad starts the run's load (none with Spec.SkipLoad); on error the
// caller aborts the run.
func (r *Run) startLoad() error {
	if r.Spec.SkipLoad || r.load == nil {
		return nil
	}
	running, err := r.load.Start(r.runCtx, r.w)
	if err != nil {
		return fmt.Errorf("scenario %s: start load: %w", r.Spec.Name, err)
	}
	r.running = running
	r.step("load started", "rate", r.Spec.rate(r.Env), "keepalive", r.Spec.keepAlive(), "protocol", r.Spec.protocol())
	return nil
}

func runIDPrefix(name string) string {
	id := runfile.NewRunID()
	if len(id) > 8 {
		id = id[:8]
	}
	return DirName(name) + "-" + id
}

func selector(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += k + "=" + l[k]
	}
	return s
}

func (r *Run) step(msg string, kv ...any) { r.log.Info(msg, kv...) }

// lbEventsOf passes on the LB events about service from since on: the LB's
// stream replays its whole history, every Service's, and a run file holds only
// its own scenario's (a namespace reused by an earlier run on the same LB
// included).
func lbEventsOf(service string, since time.Time, sink zdv1.EventSink) zdv1.EventSink {
	return zdv1.EventFunc(func(e zdv1.Event) error {
		if e.Fields["service"] != service || e.Time.Before(since) {
			return nil
		}
		return sink.Event(e)
	})
}

func (r *Run) podsState(ctx context.Context) string {
	pods, err := r.Kube.Pods(ctx, r.Target.Namespace, selector(r.Target.Selector))
	if err != nil {
		return err.Error()
	}
	s := "pods:"
	for _, p := range pods {
		s += fmt.Sprintf("\n  %s node=%s phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				s += fmt.Sprintf(" waiting=%s(%s)", cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Message)
			}
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			// Why a Pod is not ready is in the kubelet's events: a probe
			// that fails, an image it cannot pull.
			if w, err := r.Kube.LastWarning(ctx, r.Target.Namespace, p.Name); err == nil && w != "" {
				s += " last warning: " + w
			}
		}
	}
	return s
}

// Disrupt marks in the run file that the disruption begins now (what says
// which): call it just before its first step. Whatever failed before it
// failed with nothing disrupted yet, and the verdict calls that the ground
// moving, never the workload's hazard (Witnesses.Disrupt does the same for
// witnesses begun together).
func (r *Run) Disrupt(what string) {
	_ = r.sink.Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventDisruption, Message: what})
}

// Settle keeps the load running for d (or until ctx is done), so that what
// happens after an action is measured too.
func (r *Run) Settle(ctx context.Context, d time.Duration) error {
	r.step("settle", "for", d)
	if err := waitfor.Sleep(ctx, d); err != nil {
		return fmt.Errorf("scenario %s: settling for %s: %w", r.Spec.Name, d, err)
	}
	return nil
}

// AwaitLB keeps the load running while the load balancer acts on a
// disruption, for at most lag (the LB's longest removal lag) and then margin
// more, so the load sees the LB's final state. An LB that says what it does
// (LBHooks.Quiet) ends the wait early, once the workload has no terminating
// Pod and the LB has had nothing left to do for the Service on two checks in a
// row: a health check of 60 s x 10 (gclb) is then not waited out for a
// disruption that never made a node fail it. Reaching lag is not an error:
// it is the wait an LB that reports nothing always gets.
func (r *Run) AwaitLB(ctx context.Context, lag, margin time.Duration) error {
	if r.Spec.LB.Quiet == nil {
		return r.Settle(ctx, lag+margin)
	}
	r.step("settle: until the LB has nothing left to do", "at most", lag, "then", margin)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, lag)
	what, err := r.waitQuiet(wctx)
	cancel()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("scenario %s: waiting for the LB to act: %w", r.Spec.Name, ctx.Err())
	case err != nil:
		r.Kube.Note("lb", fmt.Sprintf("settle: the LB's longest lag (%s) passed with the LB or the workload still busy: %s", lag, err))
	default:
		r.Kube.Note("lb", fmt.Sprintf("settle: the LB has nothing left to do after %s (longest lag %s): %s",
			time.Since(start).Round(time.Millisecond), lag, what))
	}
	return r.Settle(ctx, margin)
}

// quietChecks is how many checks in a row must find the workload and the LB
// quiet, quietEvery apart: one check could read the LB before its watch
// delivered the disruption's last EndpointSlice change.
const (
	quietChecks = 2
	quietEvery  = time.Second
)

// waitQuiet polls until the workload has no terminating Pod and the LB is
// quiet for the Service, quietChecks times in a row, or ctx ends; it returns
// the LB's last description and, on timeout, what was still going on.
func (r *Run) waitQuiet(ctx context.Context) (string, error) {
	var what string
	streak := 0
	for {
		busy := r.terminatingPod(ctx)
		if busy == "" {
			quiet, desc, err := r.Spec.LB.Quiet(ctx, r.Target.Namespace, r.Target.Service)
			what = desc
			switch {
			case err != nil:
				busy = err.Error()
			case !quiet:
				busy = "the LB is still acting: " + desc
			}
		}
		if busy == "" {
			streak++
		} else {
			streak = 0
		}
		if streak >= quietChecks {
			return what, nil
		}
		if err := waitfor.Sleep(ctx, quietEvery); err != nil {
			if busy == "" {
				busy = "quiet on one check only"
			}
			return what, errors.New(busy)
		}
	}
}

// terminatingPod describes a pod of the workload still terminating (or why
// the pods could not be listed); "" when none is.
func (r *Run) terminatingPod(ctx context.Context) string {
	pods, err := r.Kube.Pods(ctx, r.Target.Namespace, selector(r.Target.Selector))
	if err != nil {
		return err.Error()
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return "pod " + p.Name + " is terminating"
		}
	}
	return ""
}

// Snapshot is the load's tally so far.
func (r *Run) Snapshot() load.Summary {
	if r.running == nil {
		return load.Summary{}
	}
	return r.running.Snapshot()
}

// Pods are the workload's current Pods, by name.
func (r *Run) Pods(ctx context.Context) ([]corev1.Pod, error) {
	return r.Kube.Pods(ctx, r.Target.Namespace, selector(r.Target.Selector))
}

// ExpectPods adds the workload's current pods to the criteria's expected
// pods, so one that never gets traffic is reported with zero.
func (r *Run) ExpectPods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := r.Pods(ctx)
	if err != nil {
		return nil, err
	}
	err = r.SetCriteria("expect the workload's pods to serve", func(c *zdv1.Criteria) {
		seen := map[string]bool{}
		for _, p := range c.ExpectedPods {
			seen[p] = true
		}
		for _, p := range pods {
			if !seen[p.Name] && p.DeletionTimestamp == nil {
				c.ExpectedPods = append(c.ExpectedPods, p.Name)
			}
		}
	})
	return pods, err
}

// SetCriteria changes the run's criteria after Begin wrote the run file's
// header (some criteria depend on what the cluster did: the pods that
// exist, the address the load balancer shows, the pod a scenario turned
// unready) and records the complete criteria in the run file as a criteria
// event. The verdict reads the criteria from the run file alone, so
// re-analysing it gives the suite's verdict. why says what changed.
func (r *Run) SetCriteria(why string, change func(*zdv1.Criteria)) error {
	if r.stopped {
		return fmt.Errorf("scenario %s: criteria set after the run stopped: %s", r.Spec.Name, why)
	}
	change(&r.Spec.Criteria)
	b, err := json.Marshal(r.Spec.Criteria)
	if err != nil {
		return fmt.Errorf("scenario %s: encode criteria: %w", r.Spec.Name, err)
	}
	if err := r.sink.Event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceHarness, Type: zdv1.EventCriteria,
		Object: "scenario/" + r.Spec.Name, Message: why, Fields: map[string]string{zdv1.CriteriaField: string(b)}}); err != nil {
		return fmt.Errorf("scenario %s: record criteria (%s): %w", r.Spec.Name, why, err)
	}
	return nil
}

// Finish stops the load, closes the run file, computes the verdict and
// writes scenario.json beside the run file.
func (r *Run) Finish(ctx context.Context) (zdv1.Scenario, error) {
	if err := r.end(); err != nil {
		return zdv1.Scenario{}, err
	}
	return r.analyze(ctx)
}

// end stops the load and closes the run file: the cheap half of Finish.
func (r *Run) end() error {
	if r.finished {
		return errors.New("scenario already finished")
	}
	r.stop()
	return r.close()
}

// stop stops the load and the background work (observer, LB event stream)
// and takes no more events; the run file stays open. Witnesses stop each
// run at its own time but close the run files only once every load has
// stopped: closing one seals it, and sealing reads the whole file back
// (harness/evidence Key.Seal), which while other loads still ran starved
// their load generators on 2 cores — requests in flight when the first
// loads of a batch ended waited 1-2 s or timed out (measured in 10- and
// 30-minute controls, docs/still-ground.md). It is safe to call more than
// once.
func (r *Run) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	sum, loadErr := r.stopBackground()
	if r.running != nil {
		r.step("load stopped", "results", sum.Results, "dropped", sum.Dropped, "rate", fmt.Sprintf("%.1f", sum.Rate()))
	}
	if loadErr != nil && r.cause == nil {
		r.cause = loadErr
	}
	if r.sink != nil {
		r.sink.close()
	}
}

// close closes (and seals) the run file of a stopped run, with the error
// that broke it, if any.
func (r *Run) close() error {
	if r.finished {
		return nil
	}
	r.finished = true
	if r.w == nil {
		return nil
	}
	if r.cause != nil {
		_ = r.w.CloseWithError(r.cause)
		return nil
	}
	if err := r.w.Close(); err != nil {
		return fmt.Errorf("scenario %s: close run file: %w", r.Spec.Name, err)
	}
	return nil
}

// analyze decides the verdict from the closed run file and writes
// scenario.json next to it.
func (r *Run) analyze(ctx context.Context) (zdv1.Scenario, error) {
	// The criteria are the run file's own (header, then criteria events):
	// exactly what `zerodrop analyze` reads back.
	sc, err := verdict.AnalyzeFile(ctx, r.RunFile, verdict.WithRunFileName("run.jsonl"))
	if err != nil {
		return zdv1.Scenario{}, fmt.Errorf("scenario %s: analyze %s: %w", r.Spec.Name, r.RunFile, err)
	}
	sc.RunFile = filepath.Join(DirName(r.Spec.Name), "run.jsonl")
	if err := writeJSON(filepath.Join(r.Dir, "scenario.json"), sc); err != nil {
		return sc, fmt.Errorf("scenario %s: %w", r.Spec.Name, err)
	}
	return sc, nil
}

// abort ends a run that failed to start: it stops whatever started, closes
// the run file with the error (so the evidence of what broke stays) and
// deletes the namespace.
func (r *Run) abort(ctx context.Context, cause error) {
	_, _ = r.stopBackground()
	if r.w == nil && r.sink != nil {
		// Keep the evidence of what broke even when the run never got as
		// far as its load.
		_ = r.createRunFile(nil)
	}
	if r.sink != nil {
		r.sink.close()
	}
	r.stopped, r.cause = true, cause
	_ = r.close()
	r.Cleanup(ctx)
}

// Stop ends a run that will not be finished (its disruption failed, its
// caller gave up): the load and background work stop, and the run file,
// closed by Cleanup, ends with cause, so it reads as a broken run and says
// why.
func (r *Run) Stop(cause error) {
	if r.finished || r.stopped {
		return
	}
	r.halt(cause)
}

// halt ends the run's load and background work; its run file is closed
// with cause (keeping the evidence of what broke) by close, once the other
// witnesses' loads have stopped too.
func (r *Run) halt(cause error) {
	r.cause = cause
	r.stop()
}

// stopBackground stops the load and waits for the observer and the LB
// event stream to end; it returns the load's tally and error (zero when no
// load ran).
func (r *Run) stopBackground() (sum load.Summary, err error) {
	if r.running != nil {
		sum, err = r.running.Stop()
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.bg.Wait()
	return sum, err
}

// Cleanup deletes the scenario's namespace and waits for it to go; a
// witness that shares its Pods (Spec.SharePods) deletes its Service only,
// and the witnesses' Cleanup the namespace once every one has; a run of a
// Service already in the cluster (Spec.Service) deletes nothing. It is safe
// to call more than once and after a failed Begin.
func (r *Run) Cleanup(ctx context.Context) {
	if !r.finished && (r.stopped || r.running != nil) {
		// Cleaned up before Finish closed it: the run file ends with why,
		// so it reads as a broken run, not a complete one.
		if r.cause == nil {
			r.cause = errors.New("the run was cleaned up before it finished")
		}
		r.stop()
		_ = r.close()
	}
	if r.cancel != nil {
		r.cancel()
	}
	if r.Kube == nil || r.existing {
		return
	}
	if r.shared {
		if err := r.Kube.DeleteService(context.WithoutCancel(ctx), r.Target.Namespace, r.Target.Service); err != nil {
			r.log.Warn("cleanup", "err", err)
		}
		return
	}
	if err := r.Kube.DeleteNamespace(context.WithoutCancel(ctx), r.Target.Namespace, namespaceDeletion); err != nil {
		r.log.Warn("cleanup", "err", err)
	}
}

// WaitServing polls url until it answers 200 twice in a row, so the load
// starts only once the load balancer really routes to the workload.
func WaitServing(ctx context.Context, url string, timeout time.Duration) error {
	return waitServing(ctx, url, timeout, nil)
}

// waitServing is WaitServing with its connections' local ports from ports
// (nil: the kernel's): the probes of a Service that got an address an
// earlier one had must not meet the earlier one's conntrack entries
// either (harness/load Ports).
// podPortHint says where a Service's port port lands on its Pods, for a
// load that never got an answer: the Service's targetPort, and the port
// its EndpointSlices resolved it to (a named targetPort no container
// declares gives no endpoint port at all). "" when the Service cannot be
// read.
func podPortHint(ctx context.Context, cs kubernetes.Interface, ns, name string, port int32) string {
	if cs == nil {
		return ""
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return fmt.Sprintf("; Service %s/%s has no port %d", ns, name, port)
	}
	tp := doctor.TargetPort(*sp)
	target := tp.String()
	resolved := map[int32]bool{}
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err == nil {
		for _, es := range list.Items {
			for _, p := range es.Ports {
				if p.Port != nil && (p.Name == nil && sp.Name == "" || p.Name != nil && *p.Name == sp.Name) {
					resolved[*p.Port] = true
				}
			}
		}
	}
	if len(resolved) == 0 {
		return fmt.Sprintf("; Service %s/%s sends port %d to the Pods' port %s, which no endpoint has: a targetPort name the Pods' containers do not declare gets none",
			ns, name, port, target)
	}
	var got []string
	for p := range resolved {
		got = append(got, strconv.Itoa(int(p)))
	}
	sort.Strings(got)
	return fmt.Sprintf("; Service %s/%s sends port %d to the Pods' port %s (endpoints: %s): if nothing answers there, the app does not listen on it",
		ns, name, port, target, strings.Join(got, ", "))
}

func waitServing(ctx context.Context, url string, timeout time.Duration, ports *load.Ports) error {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if ports != nil {
		tr.DialContext = ports.Dialer(net.Dialer{Timeout: 2 * time.Second})
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	deadline := time.Now().Add(timeout)
	var last string
	ok := 0
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probe %s: %w", url, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok++
				if ok >= 2 {
					return nil
				}
				continue
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		ok = 0
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to answer: %w (last: %s)", url, ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("waiting for %s to answer 200: %w after %s (last: %s); is the load balancer announcing the address?",
		url, kube.ErrTimeout, timeout, last)
}

// SourceAddress is the local address this host uses to reach addr: the
// client IP a Service should see when it preserves the source.
func SourceAddress(addr string) (string, error) {
	// A UDP "connection" only asks the kernel for a route; no packet is sent.
	c, err := net.Dial("udp", net.JoinHostPort(addr, "9"))
	if err != nil {
		return "", fmt.Errorf("find the route to %s: %w", addr, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// describe lists the knobs of a workload that decide drops, for the report.
func describe(c fixtures.Config) map[string]string {
	m := map[string]string{
		"profile":               string(c.Hardening),
		"externalTrafficPolicy": string(c.Policy),
		"replicas":              strconv.Itoa(int(c.Replicas)),
		"preStopSleep":          c.PreStopSleep.String(),
		"terminationGrace":      c.EffectiveTerminationGrace().String(),
		"minReadySeconds":       strconv.Itoa(int(c.MinReadySeconds)),
		"pdb":                   fmt.Sprint(c.PDB),
		"spread":                strconv.FormatBool(c.Spread),
	}
	if len(c.Pools) > 0 {
		m["pools"] = fmt.Sprint(c.Pools)
	}
	if c.Front != "" {
		m["front"] = string(c.Front)
		m["frontImage"] = c.Front.Image()
	}
	return m
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Events is the run file as an event sink, for steps taken outside Kube
// (a cluster provider adding a nodepool, say).
func (r *Run) Events() zdv1.EventSink { return r.sink }

// createRunFile creates the run file and sends the events held so far to
// it.
func (r *Run) createRunFile(settings *zdv1.LoadSettings) error {
	var opts []runfile.WriterOption
	if r.Env.Sealer != nil {
		opts = append(opts, runfile.WithSealer(r.Env.Sealer))
	}
	w, err := runfile.Create(r.RunFile, zdv1.Header{
		RunID: runfile.NewRunID(), ToolVersion: r.Env.ToolVersion, Scenario: r.Spec.ScenarioSpec, Load: settings,
	}, opts...)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", r.Spec.Name, err)
	}
	r.w = w
	return r.sink.attach(w)
}

// deferredSink holds events until the run file exists, then forwards them.
// Once closed (the run file is), events are dropped: a disruption shared
// with other runs may still report after this run finished.
type deferredSink struct {
	mu     sync.Mutex
	buf    []zdv1.Event
	w      zdv1.EventSink
	closed bool
}

func (d *deferredSink) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed, d.w, d.buf = true, nil, nil
}

func (d *deferredSink) Event(e zdv1.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if d.w == nil {
		d.buf = append(d.buf, e)
		return nil
	}
	return d.w.Event(e)
}

func (d *deferredSink) attach(w zdv1.EventSink) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w = w
	var errs []error
	for _, e := range d.buf {
		if err := w.Event(e); err != nil {
			errs = append(errs, err)
		}
	}
	d.buf = nil
	return errors.Join(errs...)
}
