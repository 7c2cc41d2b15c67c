package standin

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/internal/kubeversion"
)

// Behaviour is what the stand-in's server does on its termination signal
// (the echo server's ECHO_UNREADY_ON_TERM, ECHO_SHUTDOWN_DELAY,
// ECHO_DRAIN_TIMEOUT and ECHO_KEEPALIVE).
type Behaviour struct {
	// UnreadyOnTerm: readiness fails from the signal on.
	UnreadyOnTerm bool
	// KeepAccepting: it goes on accepting and answering this long after
	// the signal.
	KeepAccepting time.Duration
	// Drain: then in-flight requests get this long; 0 cuts them.
	Drain time.Duration
	// KeepAlive: HTTP keep-alive on.
	KeepAlive bool
}

func (b Behaviour) String() string {
	ready := "keeps its readiness"
	if b.UnreadyOnTerm {
		ready = "fails readiness"
	}
	drain := "cuts in-flight requests"
	if b.Drain > 0 {
		drain = fmt.Sprintf("gives in-flight requests %s", b.Drain)
	}
	ka := "keep-alive on"
	if !b.KeepAlive {
		ka = "keep-alive off"
	}
	return fmt.Sprintf("on SIGTERM %s, accepts for %s more, then %s (%s)", ready, b.KeepAccepting, drain, ka)
}

// Options configure Build.
type Options struct {
	// Namespace receives the stand-in (required): the user's namespaces
	// are not the test's.
	Namespace string
	// Image and PullPolicy are the echo server's (default
	// fixtures.DefaultImage, Never: loaded into kind, never pulled).
	Image      string
	PullPolicy corev1.PullPolicy
	// App, when set, is the behaviour of every server the doctor does not
	// know, instead of the doctor's assumption (stops accepting at the
	// signal, keeps its readiness, cuts in-flight requests).
	App *Behaviour
	// UnknownHook stands in for a preStop hook whose duration the doctor
	// cannot read (a script, an HTTP call): the stand-in sleeps this long;
	// 0 leaves the stand-in without a hook.
	UnknownHook time.Duration
	// Kubernetes is the release the stand-in runs on: where it has no
	// kubelet sleep action (before 1.30, kubeversion.Version.HasSleepAction)
	// the stand-in's preStop sleeps are the echo server's own sleep
	// command instead. Zero: a release that has it.
	Kubernetes kubeversion.Version
	// OwnImage keeps the user's containers as written (their images,
	// commands, hooks and probes) instead of the echo server; PullPolicy
	// then applies to their images ("" keeps the user's), and Path is where
	// the load is sent (default "/"): a path the app answers 200.
	OwnImage bool
	Path     string
	// referenced are the input's ConfigMaps, Secrets and ServiceAccounts
	// (FromManifests sets them).
	referenced []*doctor.Object
}

// Change is one way the stand-in differs from the user's manifests.
type Change struct {
	Object string `json:"object"`
	Field  string `json:"field"`
	Was    string `json:"was,omitempty"`
	Now    string `json:"now,omitempty"`
	Why    string `json:"why"`
}

func (c Change) String() string {
	s := c.Object + " " + c.Field
	switch {
	case c.Was != "" && c.Now != "":
		s += ": " + c.Was + " -> " + c.Now
	case c.Was != "":
		s += ": " + c.Was + " dropped"
	case c.Now != "":
		s += ": now " + c.Now
	}
	return s + " (" + c.Why + ")"
}

// Container is what the stand-in runs in place of one user container.
type Container struct {
	Name string `json:"name"`
	// Listen are the ports its echo server serves; Admin its admin port.
	Listen []int32 `json:"listen"`
	Admin  int32   `json:"admin"`
	// Behaviour is how it ends, and BehaviourFrom why ("the doctor's model
	// of the ingress-nginx controller").
	Behaviour     Behaviour `json:"-"`
	Ends          string    `json:"ends"`
	BehaviourFrom string    `json:"behaviourFrom"`
	// Image is the user's image when it runs as written (Options.OwnImage);
	// Admin is then 0: no echo admin port to turn it unready through.
	Image string `json:"image,omitempty"`
}

// StandIn is the built stand-in of one (Service, workload) pair.
type StandIn struct {
	// Service and Workload name the user's objects ("service/ns/name"),
	// Source where the Service was read.
	Service, Workload string
	Source            doctor.Source
	Kind              string // Deployment or StatefulSet
	// Name and Namespace of the stand-in's workload and Service.
	Name, ServiceName, Namespace string
	Replicas                     int32
	// Port is the Service port the load is sent to and Path the path (for
	// the echo server one no probe uses, so every answer is an attributed
	// echo; for the user's own image Options.Path).
	Port int32
	Path string
	// Serving is the container the Service's port reaches.
	Serving    Container
	Containers []Container

	ServiceObj  *corev1.Service
	WorkloadObj runtime.Object
	PDBs        []*policyv1.PodDisruptionBudget
	// BackendConfig is the GKE BackendConfig the user's Service names, in
	// the stand-in's namespace (nil when the input holds none): it is
	// created once the Service exists (BackendConfigFor), since a check
	// that asks the input Service's own pinned healthCheckNodePort asks
	// the port the test cluster allocates instead
	// (BackendConfigAsksHealthCheckNodePort).
	BackendConfig                        *unstructured.Unstructured
	BackendConfigAsksHealthCheckNodePort bool
	// Own: the user's images run as written (Options.OwnImage); Images are
	// they, and Referenced what their Pods name, copied from the input.
	Own        bool
	Images     []string
	Referenced []runtime.Object

	// Profile is the LB model the input implies when the user's Service is
	// exposed by an Ingress rather than being a LoadBalancer itself
	// (doctor.Subject.Via); "" otherwise.
	Profile string
	// Gates are the readiness gates the user's Pod template names, and
	// NamespaceLabels the labels of its namespace when the input holds it:
	// the stand-in's Pods carry none until the LB under test is one that
	// sets such a gate (GateFor).
	Gates           []string
	NamespaceLabels map[string]string

	Changes []Change
	Knobs   []KnobState
}

// Objects are what `kubectl apply` of the stand-in would create: what the
// Pods name, then the workload.
func (s *StandIn) Objects() []runtime.Object {
	out := append(append([]runtime.Object{}, s.Referenced...), s.WorkloadObj, s.ServiceObj)
	for _, p := range s.PDBs {
		out = append(out, p)
	}
	return out
}

// Error is input the stand-in cannot be built from: it names the file
// and the object. `zerodrop test` exits 2 on it.
type Error struct {
	Source doctor.Source
	Object string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %v", e.Source, e.Object, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// FromManifests builds a stand-in for every Service of type LoadBalancer
// in m, or where m has none, for every Service an Ingress exposes through
// an LB whose targets are the Pods (objects without a namespace are in
// "default"). Input it cannot
// stand in for is an *Error: no LoadBalancer Service, a Service that
// selects no workload or several, a kind other than Deployment and
// StatefulSet, host networking.
func FromManifests(m *doctor.Manifests, opts Options) ([]*StandIn, error) {
	subs := doctor.Subjects(m, "")
	// A LoadBalancer Service is what the stand-in is for; a Service an
	// Ingress exposes through Pod targets only when the input has none.
	if slices.ContainsFunc(subs, func(s doctor.Subject) bool { return s.Via == nil }) {
		subs = slices.DeleteFunc(subs, func(s doctor.Subject) bool { return s.Via != nil })
	}
	if len(subs) == 0 {
		files := map[string]bool{}
		for _, o := range m.Objects {
			files[o.Source.File] = true
		}
		for _, s := range m.Skipped {
			files[s.Source.File] = true
		}
		names := make([]string, 0, len(files))
		for f := range files {
			names = append(names, f)
		}
		sort.Strings(names)
		return nil, &Error{Source: doctor.Source{File: strings.Join(names, ", ")}, Object: "input",
			Err: errors.New("no Service of type LoadBalancer, nor one an Ingress exposes through an LB that sends to its Pods (alb.ingress.kubernetes.io/target-type: ip; " +
				"cloud.google.com/neg behind a gce Ingress): zerodrop test measures what reaches a workload through its LB; add the Service (type: LoadBalancer) that fronts the workload")}
	}
	var out []*StandIn
	for i, sub := range subs {
		o := opts
		o.referenced = m.Referenced
		if len(subs) > 1 {
			// Several Services: each stand-in in a namespace of its own.
			o.Namespace = fmt.Sprintf("%s-%d", opts.Namespace, i+1)
		}
		s, err := Build(sub, o)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// adminBase is where the stand-in's admin ports start: above the ports
// servers commonly use, skipping any the Pod declares.
const adminBase = 18081

// Build builds the stand-in of one Subject.
func Build(sub doctor.Subject, opts Options) (*StandIn, error) {
	so := sub.Service
	svcIn := so.Obj.(*corev1.Service)
	fail := func(format string, a ...any) error {
		return &Error{Source: so.Source, Object: so.Ref(), Err: fmt.Errorf(format, a...)}
	}
	if opts.Namespace == "" {
		return nil, errors.New("standin: Options.Namespace is empty")
	}
	if opts.Image == "" && !opts.OwnImage {
		opts.Image, opts.PullPolicy = fixtures.DefaultImage, corev1.PullNever
	}
	switch len(sub.Backends) {
	case 0:
		return nil, fail("selector %s picks no Deployment or StatefulSet in the input: add the workload the Service fronts", doctor.SelectorString(svcIn.Spec.Selector))
	case 1:
	default:
		var refs []string
		for _, b := range sub.Backends {
			refs = append(refs, b.Workload.Ref()+" ("+b.Workload.Source.String()+")")
		}
		return nil, fail("selector %s picks %d workloads (%s): the stand-in stands in for one; give the Service a selector that picks one, or test each separately",
			doctor.SelectorString(svcIn.Spec.Selector), len(refs), strings.Join(refs, ", "))
	}
	b := sub.Backends[0]
	wo := b.Workload
	wfail := func(format string, a ...any) error {
		return &Error{Source: wo.Source, Object: wo.Ref(), Err: fmt.Errorf(format, a...)}
	}
	s := &StandIn{Service: so.Ref(), Workload: wo.Ref(), Source: so.Source, Kind: b.Kind, Namespace: opts.Namespace, Name: wo.Name, ServiceName: so.Name}
	var in view
	switch w := wo.Obj.(type) {
	case *appsv1.Deployment:
		in = deploymentView(w)
	case *appsv1.StatefulSet:
		in = statefulSetView(w)
	default:
		return nil, wfail("%s is not supported: zerodrop test stands in for a Deployment or a StatefulSet", b.Kind)
	}
	in.svc, in.pdbs = svcIn.DeepCopy(), pdbSpecs(b.PDBs)
	if len(in.tpl.Spec.Containers) == 0 {
		return nil, wfail("the Pod template has no containers")
	}
	if _, sel, _ := workloadParts(wo.Obj); sel == nil || len(sel.MatchLabels) == 0 || len(sel.MatchExpressions) > 0 {
		return nil, wfail("spec.selector must be matchLabels only: the harness lists the workload's Pods by their labels")
	}
	if st, ok := wo.Obj.(*appsv1.StatefulSet); ok && st.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil, wfail("updateStrategy OnDelete: a rollout restart replaces no Pod, so the disruptions cannot run as written")
	}
	if in.tpl.Spec.HostNetwork {
		return nil, wfail("hostNetwork: true binds the node's own ports, which a stand-in on a shared test cluster cannot do faithfully")
	}
	out := view{kind: in.kind, svc: &corev1.Service{}}
	wref := strings.ToLower(b.Kind) + "/" + opts.Namespace + "/" + wo.Name
	change := func(obj, field, was, now, why string) {
		s.Changes = append(s.Changes, Change{Object: obj, Field: field, Was: was, Now: now, Why: why})
	}

	// Replicas: an HPA owns them; without metrics it cannot scale here, so
	// the stand-in runs the fewest it allows, the doctor's view too.
	replicas := int32(1)
	if in.replicas != nil {
		replicas = *in.replicas
	}
	if b.HPA != nil {
		h := b.HPA.Obj.(*autoscalingv2.HorizontalPodAutoscaler)
		min := int32(1)
		if h.Spec.MinReplicas != nil {
			min = *h.Spec.MinReplicas
		}
		change(wref, "spec.replicas", optInt(in.replicas), strconv.Itoa(int(min)),
			fmt.Sprintf("%s scales it and is not deployed (no metrics in the test cluster): replicas fixed at its minReplicas, the fewest a disruption can meet", b.HPA.Ref()))
		replicas = min
	}
	s.Replicas = replicas
	out.replicas, out.minReady, out.strategy = &replicas, in.minReady, in.strategy

	var tpl *corev1.PodTemplateSpec
	var containers []Container
	var path string
	var err error
	if opts.OwnImage {
		srcNS := wo.Namespace
		if srcNS == "" {
			srcNS = metav1.NamespaceDefault
		}
		tpl, containers, s.Referenced, s.Images, err = ownTemplate(in.tpl, srcNS, opts, wref, change)
		s.Own, path = true, cmp.Or(opts.Path, "/")
	} else {
		tpl, containers, path, err = podTemplate(in.tpl, svcIn, opts, wref, change)
	}
	if err != nil {
		return nil, wfail("%v", err)
	}
	out.tpl = tpl
	s.Containers, s.Path = containers, path

	svc, port, err := service(svcIn, opts.Namespace, change)
	if err != nil {
		return nil, fail("%v", err)
	}
	if sub.Via != nil {
		was := string(cmp.Or(svcIn.Spec.Type, corev1.ServiceTypeClusterIP))
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		change("service/"+opts.Namespace+"/"+svc.Name, "spec.type", was, string(corev1.ServiceTypeLoadBalancer),
			fmt.Sprintf("%s exposes it through an LB that sends to the Pods (profile %s): the test cluster's LB stands in for that LB with Pod targets", sub.Via.Ref(), sub.Profile))
		s.Profile = sub.Profile
	}
	s.NamespaceLabels = maps.Clone(sub.NamespaceLabels)
	for _, g := range in.tpl.Spec.ReadinessGates {
		s.Gates = append(s.Gates, string(g.ConditionType))
	}
	out.svc, s.ServiceObj, s.Port = svc, svc, port
	if sub.BackendConfig != nil {
		s.BackendConfig, s.BackendConfigAsksHealthCheckNodePort = backendConfig(sub.BackendConfig, svcIn, opts.Namespace, change)
	}
	// The doctor's choice (doctor.Backend.Container): containers keep
	// their order in the stand-in.
	si := b.Container
	if si < 0 || si >= len(containers) {
		si = 0
	}
	s.Serving = containers[si]

	for _, po := range b.PDBs {
		pdb := po.Obj.(*policyv1.PodDisruptionBudget)
		cp := &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: cleanMeta(pdb.ObjectMeta, opts.Namespace), Spec: *pdb.Spec.DeepCopy()}
		s.PDBs = append(s.PDBs, cp)
		out.pdbs = append(out.pdbs, cp.Spec)
	}

	meta := cleanMeta(metav1.ObjectMeta{Name: wo.Name, Labels: objLabels(wo), Annotations: objAnnotations(wo)}, opts.Namespace)
	switch w := wo.Obj.(type) {
	case *appsv1.Deployment:
		d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta, Spec: *w.Spec.DeepCopy()}
		d.Spec.Replicas, d.Spec.Template = &replicas, *tpl
		s.WorkloadObj = d
	case *appsv1.StatefulSet:
		st := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta, Spec: *w.Spec.DeepCopy()}
		st.Spec.Replicas, st.Spec.Template = &replicas, *tpl
		if len(st.Spec.VolumeClaimTemplates) > 0 {
			if opts.OwnImage {
				// The user's containers still mount them: same names,
				// emptyDir, or the API server refuses every Pod.
				for _, c := range st.Spec.VolumeClaimTemplates {
					if !slices.ContainsFunc(st.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.Name }) {
						st.Spec.Template.Spec.Volumes = append(st.Spec.Template.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
					}
				}
				change(wref, "spec.volumeClaimTemplates", fmt.Sprint(len(st.Spec.VolumeClaimTemplates), " claim templates"), "emptyDir volumes of the same names",
					"claims would need a provisioner the test cluster may not have; the data does not outlive a Pod")
			} else {
				change(wref, "spec.volumeClaimTemplates", fmt.Sprint(len(st.Spec.VolumeClaimTemplates), " claim templates"), "",
					"the echo server stores nothing; claims would need a provisioner the test cluster may not have")
			}
			st.Spec.VolumeClaimTemplates = nil
		}
		s.WorkloadObj = st
	}
	s.Knobs = compare(in, out)
	return s, nil
}

func optInt(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func objLabels(o *doctor.Object) map[string]string {
	if m, ok := o.Obj.(metav1.Object); ok {
		return m.GetLabels()
	}
	return nil
}

func objAnnotations(o *doctor.Object) map[string]string {
	if m, ok := o.Obj.(metav1.Object); ok {
		return m.GetAnnotations()
	}
	return nil
}

// cleanMeta keeps what a user writes (name, labels, annotations) in the
// stand-in's namespace; server-set fields of `kubectl get -o yaml` output
// (uid, resourceVersion, managedFields, ...) would make the create fail.
func cleanMeta(m metav1.ObjectMeta, ns string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: ns, Labels: maps.Clone(m.Labels)}
	for k, v := range m.Annotations {
		if k == "kubectl.kubernetes.io/last-applied-configuration" || k == "deployment.kubernetes.io/revision" {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

// service copies the user's Service into ns. Fields the test cluster's LB
// owns (class, fixed address, source ranges, node ports) are left to it.
func service(in *corev1.Service, ns string, change func(obj, field, was, now, why string)) (*corev1.Service, int32, error) {
	ref := "service/" + ns + "/" + in.Name
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: cleanMeta(in.ObjectMeta, ns)}
	sp := in.Spec.DeepCopy()
	spec := corev1.ServiceSpec{
		Type: sp.Type, Selector: sp.Selector, ExternalTrafficPolicy: sp.ExternalTrafficPolicy, InternalTrafficPolicy: sp.InternalTrafficPolicy,
		SessionAffinity: sp.SessionAffinity, SessionAffinityConfig: sp.SessionAffinityConfig, PublishNotReadyAddresses: sp.PublishNotReadyAddresses,
		TrafficDistribution: sp.TrafficDistribution,
	}
	// The test cluster's LBs time their health checks by their profile;
	// the provider's own timing annotations would make the doctor judge a
	// timing the LB does not apply.
	for _, k := range doctor.TimingAnnotations() {
		if v, ok := svc.Annotations[k]; ok {
			delete(svc.Annotations, k)
			change(ref, "metadata.annotations["+k+"]", v, "", "the test cluster's LBs do not read the provider's health-check annotations; each LB model's profile times the checks")
		}
	}
	for _, p := range sp.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if proto != corev1.ProtocolTCP {
			change(ref, "spec.ports["+portName(p)+"]", string(proto), "", "the load is HTTP over TCP; the stand-in's LB data plane serves TCP ports")
			continue
		}
		if p.NodePort != 0 {
			p.NodePort = 0 // allocated by the test cluster
		}
		spec.Ports = append(spec.Ports, p)
	}
	if len(spec.Ports) == 0 {
		return nil, 0, errors.New("no TCP port: the load is HTTP over TCP")
	}
	drop := func(field string, set bool, was, why string) {
		if set {
			change(ref, field, was, "", why)
		}
	}
	drop("spec.loadBalancerClass", sp.LoadBalancerClass != nil, deref(sp.LoadBalancerClass), "each LB model under test sets its own class")
	drop("spec.loadBalancerIP", sp.LoadBalancerIP != "", sp.LoadBalancerIP, "the test cluster's LB hands out its own addresses")
	drop("spec.loadBalancerSourceRanges", len(sp.LoadBalancerSourceRanges) > 0, strings.Join(sp.LoadBalancerSourceRanges, ","), "the load comes from the test host's own network")
	drop("spec.externalIPs", len(sp.ExternalIPs) > 0, strings.Join(sp.ExternalIPs, ","), "addresses of another network")
	drop("spec.healthCheckNodePort", sp.HealthCheckNodePort != 0, strconv.Itoa(int(sp.HealthCheckNodePort)), "allocated by the test cluster")
	drop("spec.ipFamilyPolicy", sp.IPFamilyPolicy != nil && *sp.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack, "dual-stack", "the test cluster is IPv4 only")
	drop("spec.allocateLoadBalancerNodePorts", sp.AllocateLoadBalancerNodePorts != nil && !*sp.AllocateLoadBalancerNodePorts, "false",
		"the test cluster's LBs reach nodes through node ports")
	svc.Spec = spec
	return svc, loadPort(spec.Ports), nil
}

// backendConfig copies the BackendConfig bo the user's Service in names
// into ns; asks: its check asks in's pinned healthCheckNodePort, which the
// stand-in's Service does not keep (the test cluster allocates one).
func backendConfig(bo *doctor.Object, in *corev1.Service, ns string, change func(obj, field, was, now, why string)) (*unstructured.Unstructured, bool) {
	u, ok := bo.Obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	meta := cleanMeta(metav1.ObjectMeta{Name: u.GetName(), Labels: u.GetLabels(), Annotations: u.GetAnnotations()}, ns)
	cp := &unstructured.Unstructured{Object: map[string]any{}}
	cp.SetAPIVersion(u.GetAPIVersion())
	cp.SetKind(u.GetKind())
	cp.SetName(meta.Name)
	cp.SetNamespace(ns)
	cp.SetLabels(meta.Labels)
	cp.SetAnnotations(meta.Annotations)
	if spec, found, _ := unstructured.NestedMap(u.Object, "spec"); found {
		_ = unstructured.SetNestedMap(cp.Object, spec, "spec")
	}
	port, found, _ := unstructured.NestedInt64(cp.Object, "spec", "healthCheck", "port")
	asks := found && in.Spec.HealthCheckNodePort != 0 && port == int64(in.Spec.HealthCheckNodePort)
	if asks {
		change("backendconfig/"+ns+"/"+cp.GetName(), "spec.healthCheck.port", strconv.FormatInt(port, 10), "the Service's healthCheckNodePort",
			"the input's check asks its Service's healthCheckNodePort, which the test cluster allocates anew")
	}
	return cp, asks
}

// BackendConfigFor is the stand-in's BackendConfig once its Service has
// healthCheckNodePort port (nil when it has none): a check that asked the
// input Service's own port asks this one.
func (s *StandIn) BackendConfigFor(port int32) *unstructured.Unstructured {
	if s.BackendConfig == nil {
		return nil
	}
	u := s.BackendConfig.DeepCopy()
	if s.BackendConfigAsksHealthCheckNodePort {
		_ = unstructured.SetNestedField(u.Object, int64(port), "spec", "healthCheck", "port")
	}
	return u
}

// loadPort is where the load goes: the port named "http", else port 80,
// else the first.
func loadPort(ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Name == "http" {
			return p.Port
		}
	}
	for _, p := range ports {
		if p.Port == 80 {
			return p.Port
		}
	}
	return ports[0].Port
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func portName(p corev1.ServicePort) string {
	if p.Name != "" {
		return p.Name
	}
	return strconv.Itoa(int(p.Port))
}

// usedPorts are every port the Pod declares or probes, so admin ports and
// defaults can avoid them.
func usedPorts(spec *corev1.PodSpec) map[int32]bool {
	used := map[int32]bool{}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, p := range c.Ports {
			used[p.ContainerPort] = true
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p == nil {
				continue
			}
			if p.HTTPGet != nil && p.HTTPGet.Port.Type == intstr.Int {
				used[p.HTTPGet.Port.IntVal] = true
			}
			if p.TCPSocket != nil && p.TCPSocket.Port.Type == intstr.Int {
				used[p.TCPSocket.Port.IntVal] = true
			}
		}
	}
	return used
}

func freePort(used map[int32]bool, from int32) int32 {
	p := from
	for used[p] {
		p++
	}
	used[p] = true
	return p
}

func joinPorts(ps []int32) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = ":" + strconv.Itoa(int(p))
	}
	return strings.Join(parts, ",")
}

// In is a copy of s in namespace ns (one per witness of a scenario).
func (s *StandIn) In(ns string) *StandIn {
	cp := *s
	cp.Namespace = ns
	cp.ServiceObj = s.ServiceObj.DeepCopy()
	cp.ServiceObj.Namespace = ns
	cp.WorkloadObj = s.WorkloadObj.DeepCopyObject()
	if m, ok := cp.WorkloadObj.(metav1.Object); ok {
		m.SetNamespace(ns)
	}
	if s.BackendConfig != nil {
		cp.BackendConfig = s.BackendConfig.DeepCopy()
		cp.BackendConfig.SetNamespace(ns)
	}
	cp.PDBs = nil
	for _, p := range s.PDBs {
		p = p.DeepCopy()
		p.Namespace = ns
		cp.PDBs = append(cp.PDBs, p)
	}
	cp.Changes = append([]Change(nil), s.Changes...)
	cp.Knobs = append([]KnobState(nil), s.Knobs...)
	cp.Containers = append([]Container(nil), s.Containers...)
	cp.Referenced = nil
	for _, o := range s.Referenced {
		o = o.DeepCopyObject()
		if m, ok := o.(metav1.Object); ok {
			m.SetNamespace(ns)
		}
		cp.Referenced = append(cp.Referenced, o)
	}
	return &cp
}

// workloadParts are the Pod template, selector and minReadySeconds of a
// Deployment or a StatefulSet (zero for any other object).
func workloadParts(o any) (*corev1.PodTemplateSpec, *metav1.LabelSelector, int32) {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template, w.Spec.Selector, w.Spec.MinReadySeconds
	case *appsv1.StatefulSet:
		return &w.Spec.Template, w.Spec.Selector, w.Spec.MinReadySeconds
	}
	return &corev1.PodTemplateSpec{}, nil, 0
}

// Grace is the stand-in Pods' termination grace (the API default when
// unset).
func (s *StandIn) Grace() time.Duration {
	tpl, _, _ := s.Spec()
	return grace(&tpl.Spec)
}

// Spec is the stand-in workload's Pod template, selector and
// minReadySeconds.
func (s *StandIn) Spec() (tpl *corev1.PodTemplateSpec, sel *metav1.LabelSelector, minReadySeconds int32) {
	return workloadParts(s.WorkloadObj)
}
