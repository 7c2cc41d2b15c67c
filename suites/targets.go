package suites

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kubevip"
	"zerodrop.dev/zerodrop/harness/metallb"
	"zerodrop.dev/zerodrop/harness/scenario"
)

// Where one disruption for many witnesses goes (a drain, a pool's
// replacement, a scale-down's victims). Witnesses share nodes and Pods,
// so a place is one sample for all of them: it must meet as many as it
// can, and above all the witnesses whose traffic enters the cluster at
// one node only (MetalLB L2 with externalTrafficPolicy Local: the node
// announcing the address, whose own Pods serve everything), since a
// disruption elsewhere leaves those untouched and their cell would say
// nothing about the hazard it documents.

// placeWeight is what a candidate place (a node, or a pool) is weighed by,
// in this order.
type placeWeight struct {
	// covers counts the witnesses with an endpoint there.
	covers int
	// hazards counts the witnesses announced from there that document the
	// hazard (their expected outcome is the hazard reproduced), anchored
	// every witness announced from there.
	hazards, anchored int
	// served is the answers served there so far, over all witnesses.
	served int64
}

func (a placeWeight) compare(b placeWeight) int {
	return cmp.Or(cmp.Compare(a.covers, b.covers), cmp.Compare(a.hazards, b.hazards),
		cmp.Compare(a.anchored, b.anchored), cmp.Compare(a.served, b.served))
}

// drainTarget is the place of most weight (the first by name among
// equals); "" when there is none.
func drainTarget(weights map[string]placeWeight) string {
	best := ""
	for _, p := range slices.Sorted(maps.Keys(weights)) {
		if best == "" || weights[p].compare(weights[best]) > 0 {
			best = p
		}
	}
	return best
}

// NotMetError is a witness a shared disruption did not meet: its Pods run
// where the disruption was not (a user's single replica on another node or
// pool). Nothing was measured; run on its own, the disruption goes where
// its Pods are.
type NotMetError struct{ msg string }

func (e *NotMetError) Error() string { return e.msg }

// endpointNodes is, for every live witness, the places (where(node): the
// node itself, or its pool) holding one of its endpoints, and the answers
// each place served so far over all witnesses. A witness whose endpoints
// cannot be read fails.
func endpointNodes(ctx context.Context, ws *scenario.Witnesses, where func(node string) string) (holds map[int]map[string]bool, served map[string]int64) {
	holds, served = map[int]map[string]bool{}, map[string]int64{}
	for _, i := range ws.Live() {
		r, _ := ws.Run(i)
		eps, err := r.Kube.Endpoints(ctx, r.Target.Namespace, r.Target.Service)
		if err != nil {
			ws.Fail(i, err)
			continue
		}
		snap := r.Snapshot().ByNode
		holds[i] = map[string]bool{}
		seen := map[string]bool{}
		for _, ep := range eps {
			if ep.Node == "" || seen[ep.Node] {
				continue // a node's answers count once per witness
			}
			seen[ep.Node] = true
			at := where(ep.Node)
			served[at] += snap[ep.Node]
			holds[i][at] = true
		}
	}
	return holds, served
}

// announced reports whether cell c's traffic enters the cluster at the one
// node that announces its address and is served there: MetalLB L2
// (metallb.Announcer) or kube-vip's ARP (kubevip.Announcer), with Local.
func announced(c Cell) bool {
	return (c.Model.Name == contract.LBMetalLB || kubeVIPModel(c.Model)) && c.Policy == corev1.ServiceExternalTrafficPolicyLocal
}

// announcer is the node announcing cell c's address on layer 2.
func announcer(ctx context.Context, c Cell, r *scenario.Run) (string, error) {
	if kubeVIPModel(c.Model) {
		return kubevip.Announcer(ctx, r.Env.Clientset, r.Target.Namespace, r.Target.Service)
	}
	return metallb.Announcer(ctx, r.Kube, r.Target.Namespace, r.Target.Service)
}

// documentsHazard reports whether cell c expects its scenario's hazard.
func documentsHazard(c Cell) bool {
	return c.Expected != nil && c.Expected.Outcome == zdv1.OutcomeHazardReproduced
}

// announcers is, for every live witness whose cell is announced, the node
// announcing its address. One whose announcer cannot be read is left out
// with a note in its run file: the disruption may then miss it, and its
// cell says so by what it measured.
func announcers(ctx context.Context, ws *scenario.Witnesses, cells []Cell) map[int]string {
	out := map[int]string{}
	for _, i := range ws.Live() {
		if !announced(cells[i]) {
			continue
		}
		r, _ := ws.Run(i)
		node, err := announcer(ctx, cells[i], r)
		if err != nil {
			r.Kube.Note("service/"+r.Target.Namespace+"/"+r.Target.Service, "the disruption cannot aim at this witness's entry node: "+err.Error())
			continue
		}
		out[i] = node
	}
	return out
}

// sharedChoice is where a shared disruption goes and why.
type sharedChoice struct {
	Target  string
	weights map[string]placeWeight
	// entries is, per witness announced from one node, that node's place.
	entries map[int]string
	cells   []Cell
}

// Why says how the target was chosen, for the run files.
func (sc sharedChoice) Why() string {
	w := sc.weights[sc.Target]
	var b strings.Builder
	fmt.Fprintf(&b, "endpoints of %d witnesses run there", w.covers)
	if w.anchored > 0 {
		var at []string
		for _, i := range slices.Sorted(maps.Keys(sc.entries)) {
			if sc.entries[i] == sc.Target {
				at = append(at, sc.cells[i].Name())
			}
		}
		fmt.Fprintf(&b, "; it is where the traffic of %s enters (MetalLB L2 with Local announces their addresses from it)", strings.Join(at, ", "))
	}
	for _, i := range slices.Sorted(maps.Keys(sc.entries)) {
		if sc.entries[i] != sc.Target {
			fmt.Fprintf(&b, "; %s enters at %s, which this disruption does not take", sc.cells[i].Name(), sc.entries[i])
		}
	}
	served := map[string]int64{}
	for p, w := range sc.weights {
		served[p] = w.served
	}
	fmt.Fprintf(&b, "; answers so far: %d of %d (per place: %v)", w.served, sumCounts(served), served)
	return b.String()
}

// sharedTarget is where one disruption for every witness goes: the place
// (where(node): a node, or its pool; "" is no place) of most weight
// (placeWeight). A witness with no endpoint there is set aside with a
// NotMetError saying that missed(target) (the drain of a node, replacing a
// pool) does not meet it. Target is "" when no witness has an endpoint in
// any place.
func sharedTarget(ctx context.Context, ws *scenario.Witnesses, cells []Cell, where func(node string) string, kind string, missed func(target string) string) sharedChoice {
	holds, served := endpointNodes(ctx, ws, where)
	ch := sharedChoice{weights: map[string]placeWeight{}, entries: map[int]string{}, cells: cells}
	for _, h := range holds {
		for at := range h {
			if at != "" {
				w := ch.weights[at]
				w.covers++
				ch.weights[at] = w
			}
		}
	}
	for i, node := range announcers(ctx, ws, cells) {
		at := where(node)
		w, ok := ch.weights[at]
		if !ok || at == "" {
			continue
		}
		ch.entries[i] = at
		w.anchored++
		if documentsHazard(cells[i]) {
			w.hazards++
		}
		ch.weights[at] = w
	}
	for at, n := range served {
		if w, ok := ch.weights[at]; ok {
			w.served = n
			ch.weights[at] = w
		}
	}
	ch.Target = drainTarget(ch.weights)
	if ch.Target == "" {
		return ch
	}
	for i, h := range holds {
		if !h[ch.Target] {
			ws.Fail(i, &NotMetError{fmt.Sprintf("%s does not meet this witness: none of its endpoints runs there (%s %v); nothing was measured",
				missed(ch.Target), kind, slices.Sorted(maps.Keys(h)))})
		}
	}
	return ch
}
