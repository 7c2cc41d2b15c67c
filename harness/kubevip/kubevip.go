// Package kubevip reads and feeds kube-vip's services mode (ARP, a leader
// election per Service): the node that holds a Service's address, and the
// address itself, which kube-vip does not allocate (a Service names it in
// contract.KubeVIPAddressAnnotation). The cluster provider records the
// range those addresses come from (harness/cluster, the ConfigMap
// contract.KubeVIPConfigMap); Addresses hands them out.
package kubevip

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// LeaseName is the Lease, in the Service's namespace, that kube-vip's Pods
// campaign for to announce service's address (kube-vip v0.9.2
// pkg/manager/servicesLeader.go StartServicesLeaderElection:
// "kubevip-<service name>").
func LeaseName(service string) string { return "kubevip-" + service }

// Holder is who holds a Service's lease, as the Lease says.
type Holder struct {
	// Node is the holder's identity: kube-vip runs with vip_nodename, the
	// node's name ("" when nobody holds it).
	Node string
	// Renewed is the holder's last renewal; Duration the lease's term.
	Renewed  time.Time
	Duration time.Duration
}

// Current reports whether the lease was renewed within its term at now:
// an expired holder (its node gone) announces nothing any more.
func (h Holder) Current(now time.Time) bool {
	return h.Node != "" && !h.Renewed.IsZero() && now.Sub(h.Renewed) <= h.Duration
}

func holderOf(l *coordinationv1.Lease) Holder {
	var h Holder
	if l.Spec.HolderIdentity != nil {
		h.Node = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		h.Renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		h.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return h
}

// Lease reads who holds service's lease; a zero Holder when there is no
// Lease yet (no node has campaigned: with externalTrafficPolicy Local,
// none has a serving local endpoint).
func Lease(ctx context.Context, cs kubernetes.Interface, namespace, service string) (Holder, error) {
	l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, LeaseName(service), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, fmt.Errorf("kube-vip lease of service %s/%s: %w", namespace, service, err)
	}
	return holderOf(l), nil
}

// Announcer is the node that announces service's address now: the
// current holder of its lease. All of the Service's traffic enters the
// cluster there; with externalTrafficPolicy Local that node's own Pods
// serve it all.
func Announcer(ctx context.Context, cs kubernetes.Interface, namespace, service string) (string, error) {
	h, err := Lease(ctx, cs, namespace, service)
	if err != nil {
		return "", err
	}
	if !h.Current(time.Now()) {
		return "", fmt.Errorf("kube-vip announcer of service %s/%s: lease %s has no current holder (%+v); is kube-vip running on the workers (kubectl -n kube-system get ds kube-vip)?",
			namespace, service, LeaseName(service), h)
	}
	return h.Node, nil
}

// ParseRange reads a range "first-last" of IPv4 addresses.
func ParseRange(s string) (first, last netip.Addr, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return first, last, fmt.Errorf("address range %q: want first-last", s)
	}
	if first, err = netip.ParseAddr(strings.TrimSpace(a)); err != nil {
		return first, last, fmt.Errorf("address range %q: %w", s, err)
	}
	if last, err = netip.ParseAddr(strings.TrimSpace(b)); err != nil {
		return first, last, fmt.Errorf("address range %q: %w", s, err)
	}
	if !first.Is4() || !last.Is4() || last.Less(first) {
		return first, last, fmt.Errorf("address range %q: want two IPv4 addresses, the first not above the last", s)
	}
	return first, last, nil
}

// ErrNotInstalled is Range's and Park's answer on a cluster without the provider's
// kube-vip (of that mode).
var ErrNotInstalled = errors.New("the cluster runs no such kube-vip of zerodrop's")

// Range is the range of addresses the cluster provider gave one kube-vip's
// Services, from its ConfigMap in kube-system (contract.KubeVIPConfigMap
// for ARP, contract.KubeVIPBGPConfigMap for BGP).
func Range(ctx context.Context, cs kubernetes.Interface, configMap string) (first, last netip.Addr, err error) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, configMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return first, last, fmt.Errorf("%w (no ConfigMap kube-system/%s)", ErrNotInstalled, configMap)
	}
	if err != nil {
		return first, last, fmt.Errorf("kube-vip address range: %w", err)
	}
	first, last, err = ParseRange(cm.Data["range"])
	if err != nil {
		return first, last, fmt.Errorf("kube-vip address range (ConfigMap kube-system/%s): %w", configMap, err)
	}
	return first, last, nil
}

// Addresses hands out kube-vip addresses from the cluster's range, one per
// Service: kube-vip does not notice two Services naming the same address
// (each campaigns for its own lease, and two nodes may then answer ARP for
// it), so no address that a Service in the cluster names, or that this
// allocator handed out and no Service names yet, is handed out again. Of
// the free ones the least recently handed out goes first: a host's
// neighbour cache may still map an address just released to its last
// node. Safe for concurrent use.
type Addresses struct {
	cs        kubernetes.Interface
	configMap string
	// pending bounds how long an address handed out counts as taken
	// before any Service names it.
	pending time.Duration

	mu          sync.Mutex
	first, last netip.Addr
	handed      map[netip.Addr]handout
}

// handout is when an address was handed out, and whether a Service in the
// cluster has named it since (then its Service's end frees it).
type handout struct {
	at    time.Time
	named bool
}

// NewAddresses allocates from the range that configMap (Range) records in
// the cluster cs talks to.
func NewAddresses(cs kubernetes.Interface, configMap string) *Addresses {
	return &Addresses{cs: cs, configMap: configMap, pending: 10 * time.Minute, handed: map[netip.Addr]handout{}}
}

// Assign names a free address in svc's KubeVIPAddressAnnotation (svc is
// about to be created). A Service that already names one keeps it.
func (a *Addresses) Assign(ctx context.Context, svc *corev1.Service) error {
	if svc.Annotations[contract.KubeVIPAddressAnnotation] != "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.first.IsValid() {
		first, last, err := Range(ctx, a.cs, a.configMap)
		if err != nil {
			return err
		}
		a.first, a.last = first, last
	}
	list, err := a.cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kube-vip addresses in use: %w", err)
	}
	used := map[netip.Addr]bool{}
	for _, s := range list.Items {
		for _, v := range strings.Split(s.Annotations[contract.KubeVIPAddressAnnotation], ",") {
			if ip, err := netip.ParseAddr(strings.TrimSpace(v)); err == nil {
				used[ip] = true
			}
		}
		for _, in := range s.Status.LoadBalancer.Ingress {
			if ip, err := netip.ParseAddr(in.IP); err == nil {
				used[ip] = true
			}
		}
	}
	for ip, h := range a.handed {
		if used[ip] && !h.named {
			a.handed[ip] = handout{at: h.at, named: true}
		}
	}
	now := time.Now()
	addr, ok := pick(a.first, a.last, now, a.pending, used, a.handed)
	if !ok {
		return fmt.Errorf("kube-vip: every address of %s-%s is taken (%d Services name one, %d handed out in the last %s); wait for old namespaces to go",
			a.first, a.last, len(used), len(a.handed), a.pending)
	}
	a.handed[addr] = handout{at: now}
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[contract.KubeVIPAddressAnnotation] = addr.String()
	return nil
}

// pick is the free address of first..last handed out least recently
// (never first, then in order); one a Service names is not free, nor one
// handed out within pending that no Service has named yet.
func pick(first, last netip.Addr, now time.Time, pending time.Duration, used map[netip.Addr]bool, handed map[netip.Addr]handout) (netip.Addr, bool) {
	var best netip.Addr
	var bestAt time.Time
	for ip := first; ip.IsValid() && !last.Less(ip); ip = ip.Next() {
		if used[ip] {
			continue
		}
		h, was := handed[ip]
		if !was {
			return ip, true
		}
		if !h.named && now.Sub(h.at) < pending {
			continue
		}
		if !best.IsValid() || h.at.Before(bestAt) {
			best, bestAt = ip, h.at
		}
	}
	return best, best.IsValid()
}

// Describe is one kube-vip of the cluster as its DaemonSet (in
// kube-system) runs it: image, mode, and the timing its Pods read from
// their environment (lease and ARP, or BGP timers).
func Describe(ctx context.Context, cs kubernetes.Interface, daemonSet string) (string, error) {
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, daemonSet, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("kube-vip's DaemonSet: %w", err)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != "kube-vip" {
			continue
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		// Unset variables take kube-vip v0.9.2's defaults (cmd/kube-vip.go,
		// pkg/kubevip config_environment.go).
		election := "no leader election"
		switch {
		case env["svc_election"] == "true":
			election = "a leader per Service"
		case env["vip_leaderelection"] == "true":
			election = "one leader for all Services"
		}
		if env["bgp_enable"] == "true" {
			return fmt.Sprintf("kube-vip %s, services mode, BGP (AS %s, peers %s), %s, hold time %ss, keepalive %ss", c.Image,
				cmp.Or(env["bgp_as"], "65000"), env["bgp_peers"], election, cmp.Or(env["bgp_hold_time"], "30"), cmp.Or(env["bgp_keepalive_interval"], "10")), nil
		}
		return fmt.Sprintf("kube-vip %s, services mode, ARP, %s, lease %ss/%ss/%ss, gratuitous ARP every %sms", c.Image, election,
			cmp.Or(env["vip_leaseduration"], "5"), cmp.Or(env["vip_renewdeadline"], "3"), cmp.Or(env["vip_retryperiod"], "1"), cmp.Or(env["vip_arpRate"], "3000")), nil
	}
	return "", fmt.Errorf("kube-vip's DaemonSet kube-system/%s has no container named kube-vip", daemonSet)
}

// ErrNotParkable is Park's answer for a DaemonSet whose node affinity
// does not leave a parked node out (a cluster made before it did).
var ErrNotParkable = errors.New("cannot be parked")

// Park takes daemonSet's Pod (namespace kube-system) off node for good:
// the node gets label, which the DaemonSet's node affinity requires absent
// (contract.KubeVIPBGPParkedLabel for kube-vip-bgp), so its controller
// deletes the Pod and does not start it again. It waits until no Pod of
// the DaemonSet is left on node, at most timeout, and returns how long
// that took: the Pod's own grace when it does not end on SIGTERM (30 s
// for kube-vip in BGP mode, v0.9.2, docs/kube-vip.md). A second delete
// with a shorter grace does not shorten it here (measured: 30.0 s after
// the controller's delete, against 3.4 s for a grace of 1 s on its own),
// and deleting first would race the controller, which starts a new Pod
// on a node that still matches. A node whose Node object goes (a machine
// that leaves) takes the label with it: its replacement runs the Pod
// again.
func Park(ctx context.Context, cs kubernetes.Interface, daemonSet, label, node string, timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, daemonSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("park %s on %s: %w (no DaemonSet kube-system/%s)", daemonSet, node, ErrNotInstalled, daemonSet)
	}
	if err != nil {
		return 0, fmt.Errorf("park %s on %s: %w", daemonSet, node, err)
	}
	if !excludes(ds, label) {
		return 0, fmt.Errorf("park %s on %s: %w: its node affinity does not require %s absent, so its controller would start it again; re-create the cluster with this zerodrop's manifests (make cluster-down, then make cluster LB=all)", daemonSet, node, ErrNotParkable, label)
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return 0, fmt.Errorf("park %s on %s: its selector: %w", daemonSet, node, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, label)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return 0, fmt.Errorf("park %s on %s: label the node %s: %w", daemonSet, node, label, err)
	}
	list := metav1.ListOptions{LabelSelector: sel.String(), FieldSelector: "spec.nodeName=" + node}
	err = waitfor.Until(ctx, fmt.Sprintf("%s's Pod to leave node %s", daemonSet, node), timeout, 250*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			pods, err := cs.CoreV1().Pods("kube-system").List(ctx, list)
			if err != nil {
				return false, err.Error(), nil
			}
			var left []string
			for _, p := range pods.Items {
				if p.Spec.NodeName == node {
					left = append(left, p.Name)
				}
			}
			if len(left) == 0 {
				return true, "", nil
			}
			return false, "still there: " + strings.Join(left, ", "), nil
		})
	if err != nil {
		return time.Since(began), fmt.Errorf("park %s on %s: %w", daemonSet, node, err)
	}
	return time.Since(began), nil
}

// excludes says whether ds's Pods may run only on nodes without label:
// every term of its required node affinity asks for it absent.
func excludes(ds *appsv1.DaemonSet, label string) bool {
	a := ds.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !slices.ContainsFunc(t.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == label && r.Operator == corev1.NodeSelectorOpDoesNotExist
		}) {
			return false
		}
	}
	return true
}
