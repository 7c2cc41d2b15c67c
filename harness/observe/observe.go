// Package observe turns what Kubernetes does during a scenario into run-file
// events on the harness's clock: nodes cordoned, added and removed; pods
// turning ready, unready and terminating; endpoints added, terminating and
// removed from a Service's EndpointSlices.
//
// The events carry the time the watch delivered the change, not the object's
// own timestamps: those have one-second precision and come from another
// clock (the API server's), while failure windows are measured to the
// millisecond on the host. The lag between the change and its delivery is a
// few milliseconds on a local cluster, far below the windows it explains.
package observe

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
)

// Target says what to watch.
type Target struct {
	// Namespace of the workload and its Service.
	Namespace string
	// Service whose EndpointSlices are followed.
	Service string
	// PodSelector selects the workload's pods (label selector syntax).
	PodSelector string
}

// Option configures an Observer.
type Option func(*Observer)

// Observer follows a target and reports changes to a sink. The first state it
// lists is the baseline: it produces no events, so a scenario's events start
// with what changed while it ran.
type Observer struct {
	client      kubernetes.Interface
	target      Target
	sink        zdv1.EventSink
	now         func() time.Time
	syncTimeout time.Duration

	mu        sync.Mutex
	nodes     map[string]nodeState
	pods      map[string]podState
	endpoints map[string]map[string]endpointState // slice name -> endpoint key -> state
	synced    bool
}

type nodeState struct {
	unschedulable bool
	ready         bool
	pool          string
}

type podState struct {
	node        string
	ready       bool
	terminating bool
}

// endpointState is an endpoint as the Service's EndpointSlices say.
type endpointState = kube.Endpoint

// New returns an Observer; Run starts it.
func New(client kubernetes.Interface, target Target, sink zdv1.EventSink, opts ...Option) *Observer {
	o := &Observer{
		client:      client,
		target:      target,
		sink:        sink,
		now:         time.Now,
		syncTimeout: 30 * time.Second,
		nodes:       map[string]nodeState{},
		pods:        map[string]podState{},
		endpoints:   map[string]map[string]endpointState{},
	}
	for _, opt := range opts {
		opt(o)
	}
	if o.sink == nil {
		o.sink = zdv1.Discard
	}
	return o
}

// Start begins watching and returns once every watch has listed its initial
// state, so that the caller can start acting knowing no change is missed.
// Watching stops when ctx is done.
func (o *Observer) Start(ctx context.Context) error {
	if o.target.Namespace == "" {
		return fmt.Errorf("observe: target namespace is empty")
	}
	if _, err := labels.Parse(o.target.PodSelector); err != nil {
		return fmt.Errorf("observe: pod selector %q: %w", o.target.PodSelector, err)
	}
	cluster := informers.NewSharedInformerFactory(o.client, 0)
	scoped := informers.NewSharedInformerFactoryWithOptions(o.client, 0,
		informers.WithNamespace(o.target.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.target.PodSelector }))
	slices := informers.NewSharedInformerFactoryWithOptions(o.client, 0,
		informers.WithNamespace(o.target.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = discoveryv1.LabelServiceName + "=" + o.target.Service
		}))

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{cluster.Core().V1().Nodes().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.onNode(obj, false) },
			UpdateFunc: func(_, obj any) { o.onNode(obj, false) },
			DeleteFunc: func(obj any) { o.onNode(obj, true) },
		}},
		{scoped.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.onPod(obj, false) },
			UpdateFunc: func(_, obj any) { o.onPod(obj, false) },
			DeleteFunc: func(obj any) { o.onPod(obj, true) },
		}},
	}
	if o.target.Service != "" {
		handlers = append(handlers, struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandlerFuncs
		}{slices.Discovery().V1().EndpointSlices().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.onSlice(obj, false) },
			UpdateFunc: func(_, obj any) { o.onSlice(obj, false) },
			DeleteFunc: func(obj any) { o.onSlice(obj, true) },
		}})
	}
	var syncs []cache.InformerSynced
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("observe: add handler: %w", err)
		}
		syncs = append(syncs, h.inf.HasSynced)
	}
	cluster.Start(ctx.Done())
	scoped.Start(ctx.Done())
	slices.Start(ctx.Done())

	syncCtx, cancel := context.WithTimeout(ctx, o.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), syncs...) {
		return fmt.Errorf("observe: nodes, pods of %q and EndpointSlices of service %s/%s did not list within %s: is the API server reachable?",
			o.target.PodSelector, o.target.Namespace, o.target.Service, o.syncTimeout)
	}
	o.mu.Lock()
	o.synced = true
	o.mu.Unlock()
	return nil
}

func (o *Observer) emit(typ, object, msg string, fields map[string]string) {
	_ = o.sink.Event(zdv1.Event{
		Time:    o.now(),
		Source:  zdv1.SourceKubernetes,
		Type:    typ,
		Object:  object,
		Message: msg,
		Fields:  fields,
	})
}

func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (o *Observer) onNode(obj any, deleted bool) {
	n, ok := unwrap(obj).(*corev1.Node)
	if !ok {
		return
	}
	now := nodeState{unschedulable: n.Spec.Unschedulable, ready: nodeReady(n), pool: n.Labels[PoolLabel]}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, known := o.nodes[n.Name]
	if deleted {
		delete(o.nodes, n.Name)
	} else {
		o.nodes[n.Name] = now
	}
	if !o.synced {
		return
	}
	for _, e := range nodeChanges(n.Name, prev, known, now, deleted) {
		o.emit(e.typ, e.object, e.msg, e.fields)
	}
}

// PoolLabel is the node label naming the nodepool a node belongs to.
const PoolLabel = contract.PoolLabel

type change struct {
	typ, object, msg string
	fields           map[string]string
}

func nodeChanges(name string, prev nodeState, known bool, now nodeState, deleted bool) []change {
	obj := "node/" + name
	pool := map[string]string{"pool": now.pool}
	if now.pool == "" {
		pool = nil
	}
	switch {
	case deleted:
		return []change{{zdv1.EventNodeRemoved, obj, "node object deleted", pool}}
	case !known:
		return []change{{zdv1.EventNodeAdded, obj, fmt.Sprintf("node registered (ready=%t)", now.ready), pool}}
	}
	var out []change
	if now.unschedulable != prev.unschedulable {
		if now.unschedulable {
			out = append(out, change{zdv1.EventCordon, obj, "node marked unschedulable", pool})
		} else {
			out = append(out, change{zdv1.EventUncordon, obj, "node marked schedulable", pool})
		}
	}
	if now.ready != prev.ready {
		out = append(out, change{zdv1.EventNote, obj, fmt.Sprintf("node Ready condition %t -> %t", prev.ready, now.ready), pool})
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (o *Observer) onPod(obj any, deleted bool) {
	p, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	now := podState{node: p.Spec.NodeName, ready: podReady(p), terminating: p.DeletionTimestamp != nil}
	key := p.Namespace + "/" + p.Name
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, known := o.pods[key]
	if deleted {
		delete(o.pods, key)
	} else {
		o.pods[key] = now
	}
	if !o.synced {
		return
	}
	for _, e := range podChanges(key, prev, known, now, deleted) {
		o.emit(e.typ, e.object, e.msg, e.fields)
	}
}

func podChanges(key string, prev podState, known bool, now podState, deleted bool) []change {
	obj := "pod/" + key
	fields := map[string]string{}
	if now.node != "" {
		fields["node"] = now.node
	}
	if deleted {
		return []change{{zdv1.EventPodDeleted, obj, "pod object deleted", fields}}
	}
	var out []change
	if !known {
		out = append(out, change{zdv1.EventNote, obj, "pod created", fields})
	}
	if now.terminating && !prev.terminating {
		out = append(out, change{zdv1.EventPodTerminating, obj, "deletion requested: preStop and SIGTERM follow", fields})
	}
	if now.ready != prev.ready && (known || now.ready) {
		if now.ready {
			out = append(out, change{zdv1.EventPodReady, obj, "Ready condition true", fields})
		} else {
			out = append(out, change{zdv1.EventPodUnready, obj, "Ready condition false", fields})
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (o *Observer) onSlice(obj any, deleted bool) {
	s, ok := unwrap(obj).(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	now := map[string]endpointState{}
	if !deleted {
		now = sliceEndpoints(s)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.endpoints[s.Name]
	if deleted {
		delete(o.endpoints, s.Name)
	} else {
		o.endpoints[s.Name] = now
	}
	if !o.synced {
		return
	}
	svc := s.Namespace + "/" + o.target.Service
	for _, e := range endpointChanges(svc, prev, now) {
		o.emit(e.typ, e.object, e.msg, e.fields)
	}
}

func sliceEndpoints(s *discoveryv1.EndpointSlice) map[string]endpointState {
	out := map[string]endpointState{}
	for _, e := range kube.SliceEndpoints(s) {
		key := e.Pod
		if key == "" {
			key = e.Address
		}
		out[key] = e
	}
	return out
}

// endpointChanges reports, per endpoint, the transitions that matter to a
// load balancer: an endpoint starts receiving new connections (added), stops
// receiving them while it still serves existing ones (terminating, KEP-1669),
// or stops for good (removed: gone from the slice, or neither ready nor
// serving).
func endpointChanges(svc string, prev, now map[string]endpointState) []change {
	keys := map[string]bool{}
	for k := range prev {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []change
	for _, k := range sorted {
		p, hadP := prev[k]
		n, hasN := now[k]
		fields := func(s endpointState) map[string]string {
			f := map[string]string{"service": svc}
			for kk, v := range map[string]string{"pod": s.Pod, "node": s.Node, "address": s.Address} {
				if v != "" {
					f[kk] = v
				}
			}
			return f
		}
		obj := "endpoint/" + svc + "/" + k
		wasIn := hadP && p.Ready
		isIn := hasN && n.Ready
		switch {
		case !wasIn && isIn:
			out = append(out, change{zdv1.EventEndpointAdded, obj, "endpoint ready: receives new connections", fields(n)})
		case wasIn && !isIn && hasN && n.Terminating && n.Serving:
			out = append(out, change{zdv1.EventEndpointTerminating, obj, "endpoint terminating but still serving (no new connections)", fields(n)})
		case wasIn && !isIn && hasN:
			out = append(out, change{zdv1.EventEndpointRemoved, obj, fmt.Sprintf("endpoint not ready (serving=%t terminating=%t)", n.Serving, n.Terminating), fields(n)})
		case hadP && !hasN:
			out = append(out, change{zdv1.EventEndpointRemoved, obj, "endpoint gone from EndpointSlice", fields(p)})
		case !wasIn && !isIn && hadP && hasN && p.Terminating && p.Serving && !n.Serving:
			out = append(out, change{zdv1.EventEndpointStoppedServing, obj, "terminating endpoint stopped serving", fields(n)})
		}
	}
	return out
}

// Describe summarises what the observer currently believes, for failure
// messages ("where are the endpoints right now?").
func (o *Observer) Describe() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	names := make([]string, 0, len(o.nodes))
	for n := range o.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := o.nodes[n]
		fmt.Fprintf(&b, "node %s pool=%s ready=%t unschedulable=%t\n", n, s.pool, s.ready, s.unschedulable)
	}
	pods := make([]string, 0, len(o.pods))
	for p := range o.pods {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, p := range pods {
		s := o.pods[p]
		fmt.Fprintf(&b, "pod %s node=%s ready=%t terminating=%t\n", p, s.node, s.ready, s.terminating)
	}
	return b.String()
}
