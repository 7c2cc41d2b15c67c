package cloudlb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/clock"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// L4Programmer applies the L4 data plane (a *Dataplane in production).
type L4Programmer interface {
	Apply(ctx context.Context, cfg DPConfig) error
}

// L7Programmer applies the L7 proxy configuration (an *L7Proxy in production).
type L7Programmer interface {
	Apply(ctx context.Context, svcs []L7Service) error
}

// Controller implements Services of type LoadBalancer the way a cloud does:
// nodes as backends, chosen by profile rules and health checks.
type Controller struct {
	programDelay   time.Duration
	cs             kubernetes.Interface
	profiles       profiles.Set
	defaultProfile string
	class          string
	claimUnclassed bool
	pool           *VIPPool
	l4             L4Programmer
	l7             L7Programmer
	check          Checker
	clk            clock.WithTicker
	sink           zdv1.EventSink
	log            *slog.Logger
	resync         time.Duration
	// rules are the service controller's node rules of the cluster's
	// Kubernetes version (rulesSet: fixed by WithKubernetesMinor).
	rules    ServiceControllerRules
	rulesSet bool

	mon     *Monitor
	trigger chan struct{}

	// dyn reads the BackendConfigs a Service may name (WithBackendConfigs);
	// bcs is their cache once Run has synced it (nil: none are read).
	dyn dynamic.Interface
	bcs BackendConfigs

	svcLister   corelisters.ServiceLister
	nodeLister  corelisters.NodeLister
	sliceLister discoverylisters.EndpointSliceLister
	// podLister reads the readiness probes a profile may build its check
	// from (HealthCheck.FromReadinessProbe).
	podLister corelisters.PodLister

	mu    sync.Mutex
	svcs  map[string]*svcState
	ready bool
	// nodeEpoch counts the node changes on which the service controller
	// re-syncs every LB (ServiceControllerRules.Resyncs, node added or
	// deleted); a Service whose synced epoch is older gets a new node set.
	nodeEpoch uint64
}

type svcState struct {
	profile  profiles.Profile
	vip      netip.Addr
	backends *BackendSet
	eligible []string
	excluded map[string]Ineligible
	// synced is the node set the service controller last handed over,
	// at nodeEpoch syncedEpoch and the Service's resourceVersion syncedRV;
	// syncExcluded says why the others were left out, stale which synced
	// nodes the controller would now leave out but has not re-synced.
	synced        []string
	syncExcluded  map[string]Ineligible
	syncedEpoch   uint64
	syncedRV      string
	stale         map[string]Ineligible
	endpointNodes []string
	probes        map[string]Probe // node (or Pod target) -> probe
	// pods are the Pod targets of a Pod-targeted profile by name: the
	// registered ones and those still draining (registerPods).
	pods map[string]podTarget
	err  string
	// forwardFrom is when the data plane may take the VIP's traffic: the
	// programming delay after the last sync that still had to write the
	// status. Zero for a VIP the status already carried when first seen.
	forwardFrom time.Time
	forwarding  bool
	// failOpen is whether the last reconcile spread new flows over every
	// eligible node because none was healthy.
	failOpen bool
	// local: externalTrafficPolicy Local, so only nodes holding a ready
	// endpoint should pass the health check.
	local bool
	// checkNote is what the LB last said about the Service's health check
	// (checkProfile): a BackendConfig applied or refused.
	checkNote string
}

// Option configures a Controller.
type Option func(*Controller)

// WithProfiles sets the profiles Services can name (default: the stock ones).
func WithProfiles(ps profiles.Set) Option { return func(c *Controller) { c.profiles = ps } }

// WithDefaultProfile sets the profile of Services without the annotation.
func WithDefaultProfile(name string) Option { return func(c *Controller) { c.defaultProfile = name } }

// WithClass sets the loadBalancerClass the controller owns; claimUnclassed
// also takes Services without a class (when MetalLB is not installed).
func WithClass(class string, claimUnclassed bool) Option {
	return func(c *Controller) { c.class, c.claimUnclassed = class, claimUnclassed }
}

// WithVIPPool sets where LoadBalancer addresses come from.
func WithVIPPool(p *VIPPool) Option { return func(c *Controller) { c.pool = p } }

// WithL4 sets the L4 data plane.
func WithL4(p L4Programmer) Option { return func(c *Controller) { c.l4 = p } }

// WithL7 sets the L7 proxy.
func WithL7(p L7Programmer) Option { return func(c *Controller) { c.l7 = p } }

// WithChecker sets how health checks are made (default HTTP from here).
func WithChecker(ch Checker) Option { return func(c *Controller) { c.check = ch } }

// WithEventSink receives every LB state change.
func WithEventSink(s zdv1.EventSink) Option { return func(c *Controller) { c.sink = s } }

// WithKubernetesMinor fixes the service controller rules to those of
// Kubernetes 1.minor instead of asking the API server its version.
func WithKubernetesMinor(minor int) Option {
	return func(c *Controller) { c.rules, _ = RulesFor(minor); c.rulesSet = true }
}

// WithBackendConfigs lets Services of profiles that honour a GKE
// BackendConfig (profiles.Profile.BackendConfig) tune their health check:
// Run installs the CRD when the cluster lacks it, as GKE clusters have it,
// and follows the objects.
func WithBackendConfigs(dyn dynamic.Interface) Option { return func(c *Controller) { c.dyn = dyn } }

// withBackendConfigReader reads BackendConfigs from r instead (tests).
func withBackendConfigReader(r BackendConfigs) Option { return func(c *Controller) { c.bcs = r } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *Controller) { c.log = l } }

// WithProgrammingDelay sets how long after writing a Service's
// status.loadBalancer the LB starts forwarding its traffic (default 3s).
// kube-proxy programs a Service's LB address only once it sees that status;
// a SYN that reaches a node before then is not DNATed, is routed back towards
// the VIP (which lives on the LB) and leaves a conntrack entry on the node
// that sends every later connection with the same source port the same way
// for minutes. Clouds hide this behind their provisioning time.
func WithProgrammingDelay(d time.Duration) Option { return func(c *Controller) { c.programDelay = d } }

// NewController returns a controller for the cluster behind cs.
func NewController(cs kubernetes.Interface, opts ...Option) (*Controller, error) {
	c := &Controller{cs: cs, defaultProfile: profiles.DefaultName, class: contract.CloudLBClass, claimUnclassed: true,
		clk: clock.RealClock{}, sink: zdv1.Discard, rules: LatestRules(), log: slog.New(slog.DiscardHandler), resync: 30 * time.Second,
		trigger: make(chan struct{}, 1), svcs: map[string]*svcState{}, programDelay: 3 * time.Second}
	for _, o := range opts {
		o(c)
	}
	if c.profiles == nil {
		ps, err := profiles.Stock()
		if err != nil {
			return nil, err
		}
		c.profiles = ps
	}
	if p, ok := c.profiles[c.defaultProfile]; !ok || !p.Emulated() {
		return nil, fmt.Errorf("default LB profile %q is not one the cloud LB runs; it runs: %s", c.defaultProfile, strings.Join(c.profiles.Emulated(), ", "))
	}
	if c.pool == nil {
		return nil, errors.New("no VIP range: pass WithVIPPool (--vip-range)")
	}
	if c.l4 == nil || c.l7 == nil {
		return nil, errors.New("controller needs an L4 data plane and an L7 proxy")
	}
	if c.check == nil {
		c.check = HTTPChecker(c.clk, nil)
	}
	c.mon = NewMonitor(c.clk, c.check, c.onTransition)
	c.mon.OnChange(c.kick)
	return c, nil
}

func (c *Controller) kick() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run watches the cluster and keeps the LB in line with it until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(c.cs, 0)
	svcInf := f.Core().V1().Services()
	nodeInf := f.Core().V1().Nodes()
	sliceInf := f.Discovery().V1().EndpointSlices()
	podInf := f.Core().V1().Pods()
	c.svcLister, c.nodeLister, c.sliceLister, c.podLister = svcInf.Lister(), nodeInf.Lister(), sliceInf.Lister(), podInf.Lister()
	if !c.rulesSet {
		c.rules = c.discoverRules()
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.kick() },
		UpdateFunc: func(any, any) { c.kick() },
		DeleteFunc: func(any) { c.kick() },
	}
	// Pods: a probe's change changes an inferred check; the EndpointSlices
	// already follow their readiness.
	for _, inf := range []cache.SharedIndexInformer{svcInf.Informer(), sliceInf.Informer(), podInf.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("LB controller: watch: %w", err)
		}
	}
	bump := func() {
		c.mu.Lock()
		c.nodeEpoch++
		c.mu.Unlock()
		c.kick()
	}
	nodeH := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { bump() },
		UpdateFunc: func(o, n any) {
			on, ok1 := o.(*corev1.Node)
			nn, ok2 := n.(*corev1.Node)
			if ok1 && ok2 && c.rules.Resyncs(on, nn) {
				bump()
				return
			}
			c.kick() // addresses, cordon and pool rules of the profile
		},
		DeleteFunc: func(any) { bump() },
	}
	if _, err := nodeInf.Informer().AddEventHandler(nodeH); err != nil {
		return fmt.Errorf("LB controller: watch: %w", err)
	}
	bcSynced := func() bool { return true }
	if c.dyn != nil {
		if err := EnsureBackendConfigCRD(ctx, c.dyn, time.Minute); err != nil {
			c.log.Error("LB controller: Services' BackendConfigs are not applied", "err", err)
		} else {
			df := dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, 0)
			bcInf := df.ForResource(backendConfigs)
			if _, err := bcInf.Informer().AddEventHandler(h); err != nil {
				return fmt.Errorf("LB controller: watch: %w", err)
			}
			df.Start(ctx.Done())
			defer df.Shutdown()
			bcSynced = bcInf.Informer().HasSynced
			c.mu.Lock()
			c.bcs = listerConfigs{bcInf.Lister()}
			c.mu.Unlock()
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	defer c.mon.Stop()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	synced := cache.WaitForCacheSync(syncCtx.Done(), svcInf.Informer().HasSynced, nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced,
		podInf.Informer().HasSynced, bcSynced)
	cancel()
	if !synced {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New("LB controller: the API server's Services, Nodes, EndpointSlices, Pods and BackendConfigs did not sync within 2m: is the kubeconfig right and the API server up?")
	}
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
	c.log.Info("LB controller synced", "class", c.class, "claimUnclassed", c.claimUnclassed, "defaultProfile", c.defaultProfile)
	c.kick()
	timer := c.clk.NewTimer(c.resync)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.trigger:
		case <-timer.C():
		}
		next, err := c.reconcile(ctx)
		if err != nil {
			c.log.Error("LB reconcile failed; retrying in 2s", "err", err)
			next = c.clk.Now().Add(2 * time.Second)
		}
		wait := c.resync
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(c.clk.Now()), 10*time.Millisecond))
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(wait)
	}
}

// discoverRules picks the service controller rules of the API server's
// version, and says which (or why it fell back to the newest).
func (c *Controller) discoverRules() ServiceControllerRules {
	r := LatestRules()
	v, err := c.cs.Discovery().ServerVersion()
	var minor int
	if err == nil {
		minor, err = strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	}
	if err != nil {
		c.emit(zdv1.EventNote, "lb", fmt.Sprintf("LB could not read the Kubernetes version (%v); it applies the node rules of the %s", err, r), nil)
		return r
	}
	r, known := RulesFor(minor)
	msg := fmt.Sprintf("LB applies the node rules of the %s to Kubernetes %s.%s (%s)", r, v.Major, v.Minor, r.Source)
	if !known {
		msg = fmt.Sprintf("LB knows no service controller rules as old as Kubernetes %s.%s; it applies the oldest it knows, the %s", v.Major, v.Minor, r)
	}
	c.emit(zdv1.EventNote, "lb", msg, map[string]string{"kubernetes": v.GitVersion, "rulesSince": "1." + strconv.Itoa(r.Since)})
	return r
}

// Ready reports whether the caches synced (for /healthz).
func (c *Controller) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

func (c *Controller) owns(svc *corev1.Service) bool {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.LoadBalancerClass == nil {
		return c.claimUnclassed
	}
	return *svc.Spec.LoadBalancerClass == c.class
}

func (c *Controller) emit(typ, object, msg string, fields map[string]string) {
	e := zdv1.Event{Time: c.clk.Now(), Source: zdv1.SourceLB, Type: typ, Object: object, Message: msg, Fields: fields}
	if err := c.sink.Event(e); err != nil {
		c.log.Warn("event sink refused an event", "type", typ, "err", err)
	}
}

func (c *Controller) onTransition(tr Transition) {
	c.mu.Lock()
	st := c.svcs[tr.Key.Service]
	var hc profiles.HealthCheck
	prof := profiles.Profile{}
	if st != nil {
		prof = st.profile
		if p, ok := st.probes[tr.Key.Node]; ok {
			hc = p.HealthCheck
		} else {
			hc = prof.HealthCheck
		}
	}
	obj, field := targetRef(tr.Key, st)
	c.mu.Unlock()
	typ, verdict, n := zdv1.EventLBNodeHealthy, "healthy", hc.HealthyThreshold
	if !tr.Healthy {
		typ, verdict, n = zdv1.EventLBNodeUnhealthy, "unhealthy", hc.UnhealthyThreshold
	}
	if field == "pod" {
		typ = zdv1.EventLBTargetHealthy
		if !tr.Healthy {
			typ = zdv1.EventLBTargetUnhealthy
		}
	}
	var recent []string
	for _, r := range tr.Recent {
		recent = append(recent, r.String())
	}
	fields := map[string]string{
		"service": tr.Key.Service, field: tr.Key.Node, "profile": prof.Name,
		"check": tr.Result.String(), "url": tr.Result.URL, "status": strconv.Itoa(tr.Result.Status),
		"interval": hc.Interval.D().String(), "threshold": strconv.Itoa(n), "results": strings.Join(recent, "; "),
	}
	if tr.Result.Error != "" {
		fields["error"] = tr.Result.Error
	}
	c.emit(typ, obj,
		fmt.Sprintf("LB marked %s %s %s for service %s after %d consecutive checks (last: %s)", field, tr.Key.Node, verdict, tr.Key.Service, n, tr.Result),
		fields)
}

// natTargets maps each Pod target of an L4 LB (active or draining) to
// the Pod address each TCP port of the Service sends to: the Pod's own
// port for the Service port (a named targetPort may differ per Pod). UDP
// ports get none (podTargets reads TCP ports only): the L4 data plane does
// not send them to Pods.
func (st *svcState) natTargets(svc *corev1.Service, active, draining []string) map[string]map[DPPort]netip.AddrPort {
	out := map[string]map[DPPort]netip.AddrPort{}
	for _, n := range append(append([]string(nil), active...), draining...) {
		for _, p := range svc.Spec.Ports {
			if p.Protocol != corev1.ProtocolTCP && p.Protocol != "" {
				continue
			}
			ap, ok := st.backendAddr(n, p, nil)
			if !ok {
				continue
			}
			if out[n] == nil {
				out[n] = map[DPPort]netip.AddrPort{}
			}
			out[n][DPPort{Proto: ProtoTCP, Port: uint16(p.Port)}] = ap
		}
	}
	return out
}

// backendAddr is where port p's traffic for target n goes: the Pod's own
// address and port for a Pod target (the L7 proxy's requests and the NAT
// data plane's connections alike), or the node's address and the NodePort
// for the L7 proxy's node backends.
func (st *svcState) backendAddr(n string, p corev1.ServicePort, nodeIPs map[string]netip.Addr) (netip.AddrPort, bool) {
	if t, ok := st.pods[n]; ok {
		port, ok := t.Ports[p.Name]
		return netip.AddrPortFrom(t.IP, port), ok
	}
	ip, ok := nodeIPs[n]
	return netip.AddrPortFrom(ip, uint16(p.NodePort)), ok && p.NodePort != 0
}

// failOpenSet is what the LB spreads new flows over when none of eligible
// is healthy: every eligible node; for Pod targets only those that failed
// their checks, not those still in their first ones (AWS: "If a target
// group contains only unhealthy registered targets, the load balancer
// routes requests to all those targets", ALB user guide, "Health checks
// for your target groups"; a target in "initial" is not unhealthy, and a
// rollout that leaves only Initial or Draining targets is an outage,
// aws-load-balancer-controller docs/deploy/pod_readiness_gate.md).
func (c *Controller) failOpenSet(key string, prof profiles.Profile, eligible map[string]bool) map[string]bool {
	if !prof.PodBackends() {
		return eligible
	}
	open := map[string]bool{}
	for n := range eligible {
		if !c.mon.Initial(ProbeKey{Service: key, Node: n}) {
			open[n] = true
		}
	}
	return open
}

// targetRef is the event object and field name of one of a Service's
// targets: node/<name> and "node", or, for a Pod-targeted Service,
// pod/<namespace>/<name> and "pod". st may be nil (a Service gone).
func targetRef(k ProbeKey, st *svcState) (object, field string) {
	if st != nil && st.profile.PodBackends() {
		ns, _, _ := strings.Cut(k.Service, "/")
		return "pod/" + ns + "/" + k.Node, "pod"
	}
	return "node/" + k.Node, "node"
}

func nodeIP(n *corev1.Node) netip.Addr {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
				return ip
			}
		}
	}
	return netip.Addr{}
}

func svcKey(s *corev1.Service) string { return s.Namespace + "/" + s.Name }

// probeURL is what the profile's health check for svc's traffic policy asks
// on node ip: an http:// URL, or tcp://ip:port for a connect-only check.
func probeURL(p profiles.Profile, svc *corev1.Service, ip netip.Addr) (string, error) {
	hc := p.HealthCheckFor(svc.Spec.ExternalTrafficPolicy)
	switch hc.Target {
	case profiles.TargetFixedPort:
		return fmt.Sprintf("http://%s%s", netip.AddrPortFrom(ip, uint16(hc.Port)), hc.Path), nil
	case profiles.TargetNodePort, profiles.TargetTrafficPort:
		for _, port := range svc.Spec.Ports {
			if port.NodePort != 0 && (port.Protocol == corev1.ProtocolTCP || port.Protocol == "") {
				ap := netip.AddrPortFrom(ip, uint16(port.NodePort))
				if hc.Target == profiles.TargetTrafficPort {
					return "tcp://" + ap.String(), nil
				}
				return fmt.Sprintf("http://%s%s", ap, hc.Path), nil
			}
		}
		return "", fmt.Errorf("profile %s checks the Service's NodePort (%s) but the Service has no TCP NodePort (allocateLoadBalancerNodePorts: false, or UDP ports only, whose checks this LB does not model)", p.Name, hc.Target)
	default:
		if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			if svc.Spec.HealthCheckNodePort == 0 {
				return "", errors.New("externalTrafficPolicy Local without a healthCheckNodePort yet")
			}
			return fmt.Sprintf("http://%s/healthz", netip.AddrPortFrom(ip, uint16(svc.Spec.HealthCheckNodePort))), nil
		}
		return fmt.Sprintf("http://%s/healthz", netip.AddrPortFrom(ip, profiles.KubeProxyHealthzPort)), nil
	}
}

// reconcile computes the whole LB from the caches and applies it. It returns
// when it must run again at the latest (a drain deadline).
func (c *Controller) reconcile(ctx context.Context) (time.Time, error) {
	now := c.clk.Now()
	svcList, err := c.svcLister.List(labels.Everything())
	if err != nil {
		return time.Time{}, err
	}
	nodeList, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return time.Time{}, err
	}
	sort.Slice(svcList, func(i, j int) bool { return svcKey(svcList[i]) < svcKey(svcList[j]) })
	nodeIPs := map[string]netip.Addr{}
	for _, n := range nodeList {
		if ip := nodeIP(n); ip.IsValid() {
			nodeIPs[n.Name] = ip
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	var probes []Probe
	var dp DPConfig
	dp.Nodes = nodeIPs
	dp.PodCIDRs = podCIDRs(nodeList)
	var l7 []L7Service
	var next time.Time
	gates := map[gateKey]*gateWant{}
	seen := map[string]bool{}
	var statusUpdates, finalize, cleanups []*corev1.Service
	for _, svc := range svcList {
		if c.needsCleanup(svc) {
			cleanups = append(cleanups, svc) // not seen: its LB is released below
			continue
		}
		if !c.owns(svc) || svc.DeletionTimestamp != nil {
			continue
		}
		key := svcKey(svc)
		seen[key] = true
		prof, perr := c.profiles.Lookup(svc.Annotations, c.defaultProfile)
		if perr == nil {
			perr = prof.Refuses(svc)
		}
		st := c.svcs[key]
		if st == nil {
			if perr != nil {
				c.svcs[key] = &svcState{err: perr.Error()}
				c.emit(zdv1.EventNote, "service/"+key, "LB cannot implement service: "+perr.Error(), map[string]string{"service": key})
				continue
			}
			st = &svcState{profile: prof, backends: NewBackendSet(prof.Flows)}
			c.svcs[key] = st
		}
		if perr != nil {
			if st.err != perr.Error() {
				c.emit(zdv1.EventNote, "service/"+key, "LB keeps the service's previous profile and settings: "+perr.Error(), map[string]string{"service": key})
			}
			st.err = perr.Error()
			if st.backends == nil {
				continue
			}
			prof = st.profile
		} else {
			st.err = ""
			if st.backends == nil {
				st.backends = NewBackendSet(prof.Flows)
			}
			if st.profile.Name != prof.Name {
				if st.profile.Name != "" {
					c.emit(zdv1.EventNote, "service/"+key, fmt.Sprintf("LB profile of %s changed from %s to %s", key, st.profile.Name, prof.Name),
						map[string]string{"service": key, "profile": prof.Name})
				}
				st.profile = prof
				st.backends.SetFlows(prof.Flows)
			}
		}
		// A Pod-targeted profile reads the Service's Pods once per pass:
		// its check may come from their readiness probe, and they are
		// its targets.
		var targets []podTarget
		if prof.PodBackends() {
			slices, err := c.slicesOf(svc)
			if err != nil {
				st.err = fmt.Sprintf("list EndpointSlices of %s: %v", key, err)
			}
			targets = podTargets(slices)
		}
		// The check may come from the Pods' readiness probe, and a
		// BackendConfig may tune it after that (GKE's Ingress LBs).
		prof, probeNote := c.probeProfile(prof, svc, targets)
		prof, bcNote := checkProfile(prof, svc, c.bcs)
		note := joinNonEmpty("; ", probeNote, bcNote)
		if note != st.checkNote {
			msg := note
			if msg == "" {
				msg = fmt.Sprintf("LB checks %s with profile %s's own health check again", key, prof.Name)
			}
			c.emit(zdv1.EventNote, "service/"+key, msg, map[string]string{"service": key, "check": describeCheck(prof.HealthCheckFor(svc.Spec.ExternalTrafficPolicy))})
			st.checkNote = note
		}
		// Address.
		if !st.vip.IsValid() {
			var prefer netip.Addr
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(ing.IP); err == nil {
					prefer = a
				}
			}
			vip, err := c.pool.Allocate(key, prefer)
			if err != nil {
				if st.err != err.Error() {
					c.emit(zdv1.EventNote, "service/"+key, "LB cannot give service an address: "+err.Error(), map[string]string{"service": key})
				}
				st.err = err.Error()
				continue
			}
			st.vip = vip
			c.emit(zdv1.EventNote, "service/"+key, fmt.Sprintf("LB assigned %s to service %s (profile %s)", vip, key, prof.Name),
				map[string]string{"service": key, "vip": vip.String(), "profile": prof.Name})
		}
		if !servicehelper.HasLBFinalizer(svc) {
			finalize = append(finalize, svc)
		}
		if !hasIngress(svc, st.vip) {
			statusUpdates = append(statusUpdates, svc)
			st.forwardFrom = now.Add(c.programDelay)
		}
		var eligible map[string]bool
		if prof.PodBackends() {
			eligible = c.registerPods(key, st, prof, svc, targets)
		} else {
			eligible = c.registerNodes(key, st, prof, svc, nodeList, nodeIPs)
		}
		for _, n := range sortedKeys(eligible) {
			probes = append(probes, st.probes[n])
		}
		active := map[string]bool{}
		for n := range eligible {
			if c.mon.Healthy(ProbeKey{Service: key, Node: n}) {
				active[n] = true
			}
		}
		healthy := sortedKeys(active)
		open := c.failOpenSet(key, prof, eligible)
		failOpen := len(active) == 0 && len(open) > 0 && prof.NoHealthyBackends == profiles.NoHealthyFailOpen
		if failOpen {
			for n := range open {
				active[n] = true
			}
		}
		// Leaving fail-open removes every node that has not passed yet at
		// once, the moment the first one passes: say so, or the evidence shows
		// a healthy-looking node dropped for no reason.
		endedFailOpen := ""
		if st.failOpen && !failOpen {
			endedFailOpen = fmt.Sprintf("fail-open over (%s passed its health check); ", strings.Join(healthy, ", "))
		}
		if failOpen != st.failOpen {
			msg := fmt.Sprintf("LB fails open for service %s: no eligible node has passed its health check, so new flows go to every eligible node (%s)",
				key, strings.Join(sortedKeys(open), ", "))
			if prof.PodBackends() {
				msg = fmt.Sprintf("LB fails open for service %s: every registered Pod failed its health check, so requests go to all of them (%s)",
					key, strings.Join(sortedKeys(open), ", "))
			}
			if !failOpen {
				msg = fmt.Sprintf("LB stops failing open for service %s: %s passed its health check; new flows go to healthy nodes only", key, strings.Join(healthy, ", "))
			}
			c.emit(zdv1.EventNote, "service/"+key, msg, map[string]string{"service": key, "profile": prof.Name, "failOpen": strconv.FormatBool(failOpen)})
			st.failOpen = failOpen
		}
		reasons := map[string]string{}
		for n, why := range st.excluded {
			reasons[n] = string(why)
		}
		for n := range eligible {
			if !active[n] {
				r := "not yet passed a health check"
				if res, ok := c.mon.Last(ProbeKey{Service: key, Node: n}); ok {
					if res.OK {
						r = fmt.Sprintf("not yet healthy (needs %d consecutive passes; last: %s)", prof.HealthCheckFor(svc.Spec.ExternalTrafficPolicy).HealthyThreshold, res)
					} else {
						r = "failed health check: " + res.String()
					}
				}
				reasons[n] = endedFailOpen + r
			}
		}
		changes := st.backends.Update(now, active, eligible, reasons)
		if prof.PodBackends() {
			present := map[string]bool{}
			for _, t := range targets {
				present[t.Name] = true
			}
			changes = append(changes, st.backends.ForgetDrained(func(n string) bool { return !present[n] })...)
		}
		for _, ch := range changes {
			c.emitBackendChange(key, st, prof, ch, failOpen, st.backends)
		}
		if d := st.backends.NextDeadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
		// Data plane, once kube-proxy has had time to program the address.
		if now.Before(st.forwardFrom) {
			if next.IsZero() || st.forwardFrom.Before(next) {
				next = st.forwardFrom
			}
			continue
		}
		if !st.forwarding {
			st.forwarding = true
			if !st.forwardFrom.IsZero() {
				c.emit(zdv1.EventNote, "service/"+key, fmt.Sprintf("LB forwards %s for service %s from now on (%s after its status was written, for kube-proxy to program the address)",
					st.vip, key, c.programDelay), map[string]string{"service": key, "vip": st.vip.String()})
			}
		}
		if prof.PodBackends() {
			c.wantGates(gates, key, st, prof)
		}
		dp.VIPs = append(dp.VIPs, st.vip)
		activeNodes := st.backends.Nodes(cloudlbv1.Active)
		switch prof.Mode {
		case profiles.ModeL4:
			ds := DPService{Key: key, VIP: st.vip, Active: activeNodes, Draining: st.backends.Nodes(cloudlbv1.Draining),
				ClientIP:    prof.KeepsClientOnNode(svc),
				CloseAction: prof.Flows.CloseAction, NoBackends: prof.Flows.CloseAction, IdleTimeout: prof.Flows.IdleTimeout.D()}
			if prof.NoHealthyBackends == profiles.NoHealthyDrop {
				ds.NoBackends = profiles.CloseDrop
			}
			ds.Ports = l4Ports(svc)
			if prof.PodBackends() {
				ds.Targets = st.natTargets(svc, activeNodes, ds.Draining)
			}
			dp.Services = append(dp.Services, ds)
		case profiles.ModeL7:
			for _, p := range svc.Spec.Ports {
				if p.Protocol != corev1.ProtocolTCP && p.Protocol != "" {
					continue
				}
				var to []netip.AddrPort
				for _, n := range activeNodes {
					if ap, ok := st.backendAddr(n, p, nodeIPs); ok {
						to = append(to, ap)
					}
				}
				// Connection draining applies to a backend that leaves (GCP:
				// "when ... an endpoint is removed"; ALB: deregistration):
				// one that only fails its check keeps its requests in flight.
				draining := map[netip.AddrPort]time.Time{}
				for n := range eligible {
					if ap, ok := st.backendAddr(n, p, nodeIPs); ok && !active[n] {
						draining[ap] = time.Time{}
					}
				}
				for _, b := range st.backends.Backends() {
					if ap, ok := st.backendAddr(b.Node, p, nodeIPs); ok && b.State == cloudlbv1.Draining {
						draining[ap] = b.Deadline
					}
				}
				if prof.PodBackends() || p.NodePort != 0 {
					l7 = append(l7, L7Service{Key: key, VIP: st.vip, Port: uint16(p.Port), Backends: to, Draining: draining, L7: *prof.L7})
				}
			}
		}
	}
	for key, st := range c.svcs {
		if !seen[key] {
			c.pool.Release(key)
			delete(c.svcs, key)
			if st.vip.IsValid() {
				c.emit(zdv1.EventNote, "service/"+key, fmt.Sprintf("LB released %s of service %s", st.vip, key), map[string]string{"service": key, "vip": st.vip.String()})
			}
		}
	}
	c.mon.Set(ctx, probes)
	var errs []error
	// L4 first: it puts every VIP on lo, which the L7 listeners bind to.
	if err := c.l4.Apply(ctx, dp); err != nil {
		errs = append(errs, err)
	}
	if err := c.l7.Apply(ctx, l7); err != nil {
		errs = append(errs, err)
	}
	forwarding := len(errs) == 0 // as computed: released addresses are gone
	// The finalizer before the status, as the service controller orders it:
	// a Service that shows an address can no longer vanish under its LB.
	unfinalized := map[string]bool{}
	for _, svc := range finalize {
		if err := c.patchFinalizer(ctx, svc, true); err != nil {
			unfinalized[svcKey(svc)] = true
			errs = append(errs, err)
		}
	}
	for _, svc := range statusUpdates {
		if unfinalized[svcKey(svc)] {
			continue
		}
		if err := c.writeStatus(ctx, svc, c.svcs[svcKey(svc)].vip); err != nil {
			errs = append(errs, err)
		}
	}
	// Readiness gates once the data plane sends to what the LB calls
	// healthy: a Pod the gate lets go Ready is one the LB already uses.
	if err := c.setGates(ctx, gates); err != nil {
		errs = append(errs, err)
	}
	// Cleanups after the data plane stopped forwarding their addresses.
	if forwarding {
		for _, svc := range cleanups {
			if err := c.cleanUp(ctx, svc); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return next, errors.Join(errs...)
}

func (c *Controller) emitBackendChange(key string, st *svcState, prof profiles.Profile, ch BackendChange, failOpen bool, bs *BackendSet) {
	obj, field := targetRef(ProbeKey{Service: key, Node: ch.Node}, st)
	fields := map[string]string{"service": key, field: ch.Node, "profile": prof.Name, "from": string(ch.From), "to": string(ch.To)}
	if ch.Reason != "" {
		fields["reason"] = ch.Reason
	}
	if t, ok := st.pods[ch.Node]; ok {
		fields["ip"], fields["node"] = t.IP.String(), t.Node
	}
	switch {
	case ch.To == cloudlbv1.Active:
		msg := fmt.Sprintf("LB added %s %s to the backends of %s", field, ch.Node, key)
		if failOpen {
			msg += " (no node is healthy: failing open to every eligible node)"
			fields["failOpen"] = "true"
		}
		c.emit(zdv1.EventLBBackendAdded, obj, msg, fields)
	case ch.From == cloudlbv1.Active:
		flows := "established flows are closed (" + string(prof.Flows.CloseAction) + ")"
		if ch.To == cloudlbv1.Draining {
			flows = "established flows keep flowing"
			for _, b := range bs.Backends() {
				if b.Node == ch.Node && !b.Deadline.IsZero() {
					flows += " until " + b.Deadline.UTC().Format(time.RFC3339)
					fields["drainUntil"] = b.Deadline.UTC().Format(time.RFC3339Nano)
				}
			}
		}
		fields["flows"] = flows
		c.emit(zdv1.EventLBBackendRemoved, obj, fmt.Sprintf("LB removed %s %s from the backends of %s: %s; %s", field, ch.Node, key, ch.Reason, flows), fields)
	default:
		c.emit(zdv1.EventNote, obj, fmt.Sprintf("LB %s flows of %s on %s %s: %s", ch.To, key, field, ch.Node, ch.Reason), fields)
	}
}

// registerNodes makes the Service's targets its nodes: the node set the
// service controller hands over (re-synced only when its rules say so), less
// what the cloud itself leaves out, each checked by the profile's check for
// the Service's traffic policy. It returns the eligible nodes.
func (c *Controller) registerNodes(key string, st *svcState, prof profiles.Profile, svc *corev1.Service, nodeList []*corev1.Node, nodeIPs map[string]netip.Addr) map[string]bool {
	c.syncNodes(key, st, prof, svc, nodeList)
	st.endpointNodes = c.readyEndpointNodes(svc)
	st.local = svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	st.pods = nil
	eligible := map[string]bool{}
	st.probes = map[string]Probe{}
	for _, n := range st.eligible {
		ip, ok := nodeIPs[n]
		if !ok {
			continue
		}
		u, err := probeURL(prof, svc, ip)
		if err != nil {
			st.err = err.Error()
			continue
		}
		eligible[n] = true
		st.probes[n] = Probe{Key: ProbeKey{Service: key, Node: n}, URL: u, HealthCheck: prof.HealthCheckFor(svc.Spec.ExternalTrafficPolicy)}
	}
	return eligible
}

// registerPods makes the Service's targets its Pods (container-native load
// balancing: GKE NEG, AWS IP targets). The vendors' controllers register
// the endpoints the EndpointSlices call ready and deregister the others
// (ingress-gce pkg/neg/syncers, aws-load-balancer-controller
// pkg/targetgroupbinding/resource_manager.go); each registered Pod is
// checked on its serving port, straight from the LB, so the traffic policy
// and kube-proxy play no part. A Pod that is no longer registered leaves
// the set as the profile's flows.onRemoved says (the deregistration delay).
// targets are the Service's Pods (podTargets). It returns the registered
// Pods.
func (c *Controller) registerPods(key string, st *svcState, prof profiles.Profile, svc *corev1.Service, targets []podTarget) map[string]bool {
	st.local = false
	st.eligible, st.excluded, st.endpointNodes = nil, map[string]Ineligible{}, nil
	st.probes = map[string]Probe{}
	// Keep what the LB still forwards to (draining Pods whose endpoint is
	// gone): their addresses are in no slice any more.
	kept := map[string]podTarget{}
	if st.backends != nil {
		for _, b := range st.backends.Backends() {
			if t, ok := st.pods[b.Node]; ok {
				kept[b.Node] = t
			}
		}
	}
	st.pods = kept
	eligible := map[string]bool{}
	for _, t := range targets {
		st.pods[t.Name] = t
		if t.Ready {
			st.endpointNodes = append(st.endpointNodes, t.Name)
		}
		if !t.registered(prof.Pods.Register) && (t.Terminating || !c.waitsOnGate(svc.Namespace, t.Name, prof.ReadinessGate())) {
			st.excluded[t.Name] = IneligibleNotRegistered(prof.Pods.Register, t)
			continue
		}
		u, err := podProbeURL(prof, svc, t)
		if err != nil {
			st.err = err.Error()
			continue
		}
		st.eligible = append(st.eligible, t.Name)
		eligible[t.Name] = true
		st.probes[t.Name] = Probe{Key: ProbeKey{Service: key, Node: t.Name}, URL: u, HealthCheck: prof.HealthCheck}
	}
	return eligible
}

// podCIDRs maps each node's Pod range to the node's address.
func podCIDRs(nodes []*corev1.Node) map[netip.Prefix]netip.Addr {
	out := map[netip.Prefix]netip.Addr{}
	for _, n := range nodes {
		ip := nodeIP(n)
		if !ip.IsValid() {
			continue
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
				out[p.Masked()] = ip
			}
		}
	}
	return out
}

// syncNodes sets st.eligible and st.excluded. The service controller's part
// is recomputed when a node change it re-syncs on happened since the last
// time, or the Service changed; otherwise the last set stands, and each of its
// nodes the controller would now leave out is reported once as stale.
func (c *Controller) syncNodes(key string, st *svcState, prof profiles.Profile, svc *corev1.Service, nodes []*corev1.Node) {
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	if st.syncExcluded == nil || st.syncedEpoch != c.nodeEpoch || st.syncedRV != svc.ResourceVersion {
		st.synced, st.syncExcluded = nil, map[string]Ineligible{}
		for _, n := range nodes {
			if why := c.rules.Excluded(svc, n); why != "" {
				st.syncExcluded[n.Name] = why
				continue
			}
			st.synced = append(st.synced, n.Name)
		}
		sort.Strings(st.synced)
		st.syncedEpoch, st.syncedRV, st.stale = c.nodeEpoch, svc.ResourceVersion, nil
	}
	st.eligible, st.excluded = nil, maps.Clone(st.syncExcluded)
	for _, name := range st.synced {
		n := byName[name]
		if n == nil {
			continue // deleted: the epoch moves and the next pass re-syncs
		}
		if why := c.rules.Excluded(svc, n); why != "" && st.stale[name] != why {
			if st.stale == nil {
				st.stale = map[string]Ineligible{}
			}
			st.stale[name] = why
			c.emit(zdv1.EventNote, "node/"+name, fmt.Sprintf("node %s now fails the service controller's node rules (%s) but stays a backend of service %s: the %s does not re-sync LBs on that change, so it leaves at the next re-sync (a node added, deleted or (un)labelled %s, or a change to the Service)",
				name, why, key, c.rules, labelExcludeLB), map[string]string{"service": key, "node": name, "reason": string(why), "rulesSince": "1." + strconv.Itoa(c.rules.Since)})
		}
		if why := ProfileExcludes(prof, svc, n); why != "" {
			st.excluded[name] = why
			continue
		}
		st.eligible = append(st.eligible, name)
	}
}

// l4Ports are the ports of svc the L4 data plane forwards: TCP and UDP
// (SCTP is not forwarded; see the package doc).
func l4Ports(svc *corev1.Service) []DPPort {
	var out []DPPort
	for _, p := range svc.Spec.Ports {
		switch p.Protocol {
		case corev1.ProtocolTCP, "":
			out = append(out, DPPort{Proto: ProtoTCP, Port: uint16(p.Port)})
		case corev1.ProtocolUDP:
			out = append(out, DPPort{Proto: ProtoUDP, Port: uint16(p.Port)})
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func hasIngress(svc *corev1.Service, vip netip.Addr) bool {
	ing := svc.Status.LoadBalancer.Ingress
	return len(ing) == 1 && ing[0].IP == vip.String()
}

func (c *Controller) writeStatus(ctx context.Context, svc *corev1.Service, vip netip.Addr) error {
	mode := corev1.LoadBalancerIPModeVIP
	return c.patchLBStatus(ctx, svc, []corev1.LoadBalancerIngress{{IP: vip.String(), IPMode: &mode}})
}

// patchLBStatus sets status.loadBalancer.ingress with a merge patch on the
// status subresource: unlike an update of the informer's copy it cannot
// conflict with (or undo) the finalizer patch just before it.
func (c *Controller) patchLBStatus(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}})
	if err != nil {
		return err
	}
	if _, err := c.cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("write status.loadBalancer of service %s: %w", svcKey(svc), err)
	}
	return nil
}

// slicesOf lists the EndpointSlices of svc from the cache.
func (c *Controller) slicesOf(svc *corev1.Service) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	return c.sliceLister.EndpointSlices(svc.Namespace).List(sel)
}

// joinNonEmpty joins the parts that are not empty with sep.
func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func (c *Controller) readyEndpointNodes(svc *corev1.Service) []string {
	slices, err := c.slicesOf(svc)
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				set[*e.NodeName] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// State returns the LB's view of every Service it implements.
func (c *Controller) State() []cloudlbv1.ServiceState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cloudlbv1.ServiceState
	for key, st := range c.svcs {
		s := cloudlbv1.ServiceState{Service: key, Profile: st.profile.Name, Eligible: st.eligible, EndpointNodes: st.endpointNodes,
			Health: map[string]cloudlbv1.NodeHealth{}, Excluded: map[string]string{}, Error: st.err,
			FailingOpen: st.failOpen, Forwarding: st.forwarding, Policy: "Cluster"}
		if st.local {
			s.Policy = "Local"
		}
		if st.vip.IsValid() {
			s.VIP = st.vip.String()
		}
		for n, why := range st.excluded {
			s.Excluded[n] = string(why)
		}
		if st.backends != nil {
			s.Active = st.backends.Nodes(cloudlbv1.Active)
			for _, b := range st.backends.Backends() {
				if b.State == cloudlbv1.Draining {
					s.Draining = append(s.Draining, b)
				}
			}
		}
		// Read live from the monitor: a first check that fails flips nothing
		// and triggers no reconcile, yet it is a verdict.
		for n, p := range st.probes {
			// With Local a node should pass only where it holds a ready
			// endpoint; a Pod target only while its endpoint is ready.
			h := cloudlbv1.NodeHealth{Healthy: c.mon.Healthy(p.Key), URL: p.URL,
				Expected: !st.local && st.pods == nil || slices.Contains(st.endpointNodes, n)}
			r, checked := c.mon.Last(p.Key)
			if checked {
				h.Last = &r
			}
			s.Health[n] = h
			if !checked || h.Healthy != h.Expected || h.Healthy && !slices.Contains(s.Active, n) {
				s.Pending = append(s.Pending, n)
			}
		}
		sort.Strings(s.Pending)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}
