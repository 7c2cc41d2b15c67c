package doctor

import (
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// index finds the objects that relate to each other without comparing every
// pair: a manifest set with thousands of Services and workloads in one
// namespace would otherwise cost services x workloads selector matches (and
// workloads x PDBs).
type index struct {
	// workloads by namespace, then by one "key=value" of their Pod labels.
	workloads map[string]map[string][]*Object
	// pdbs by namespace, then by one "key=value" of their matchLabels; those
	// selecting by expressions only are under "".
	pdbs map[string]map[string][]*Object
	// hpas by namespace/kind/name of their scale target.
	hpas map[string]*Object
	// routes by namespace/service name.
	routes map[string]*Object
	// bcs are GKE BackendConfigs by namespace/name.
	bcs map[string]*Object
	// order is each workload's and PDB's position in the input.
	order map[*Object]int
	// namespaces are the input's Namespaces, by name.
	namespaces map[string]*Object
	// gateways are the input's Gateway API Gateways by namespace/name,
	// classes its GatewayClasses (cluster-scoped) by name.
	gateways, classes map[string]*Object
}

func newIndex(workloads, pdbs, hpas, routes, bcs []*Object) *index {
	ix := &index{workloads: map[string]map[string][]*Object{}, pdbs: map[string]map[string][]*Object{},
		hpas: map[string]*Object{}, routes: map[string]*Object{}, bcs: map[string]*Object{}, order: map[*Object]int{},
		namespaces: map[string]*Object{}, gateways: map[string]*Object{}, classes: map[string]*Object{}}
	for _, o := range bcs {
		ix.bcs[o.Namespace+"/"+o.Name] = o
	}
	for i, o := range workloads {
		ix.order[o] = i
		wl, _ := asWorkload(o)
		byLabel := ix.workloads[o.Namespace]
		if byLabel == nil {
			byLabel = map[string][]*Object{}
			ix.workloads[o.Namespace] = byLabel
		}
		for k, v := range wl.podLabels() {
			byLabel[k+"="+v] = append(byLabel[k+"="+v], o)
		}
	}
	for i, o := range pdbs {
		ix.order[o] = i
		byLabel := ix.pdbs[o.Namespace]
		if byLabel == nil {
			byLabel = map[string][]*Object{}
			ix.pdbs[o.Namespace] = byLabel
		}
		key := ""
		if sel := pdbOf(o).Spec.Selector; sel != nil && len(sel.MatchLabels) > 0 {
			key = firstPair(sel.MatchLabels)
		}
		byLabel[key] = append(byLabel[key], o)
	}
	for _, o := range hpas {
		ref := o.Obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec.ScaleTargetRef
		k := o.Namespace + "/" + ref.Kind + "/" + ref.Name
		if _, dup := ix.hpas[k]; !dup {
			ix.hpas[k] = o
		}
	}
	for _, r := range routes {
		for _, s := range r.routes {
			if key := routeKey(r, s); ix.routes[key] == nil {
				ix.routes[key] = r
			}
		}
	}
	return ix
}

// routeKey is "namespace/name" of a Service route r sends to (one of
// r.routes: a bare name is in r's own namespace, known once the input's
// default is applied).
func routeKey(r *Object, svc string) string {
	if strings.Contains(svc, "/") {
		return svc
	}
	return r.Namespace + "/" + svc
}

// firstPair is "key=value" of the smallest key of a selector's matchLabels:
// every Pod the selector matches carries it.
func firstPair(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0] + "=" + m[keys[0]]
}

// selected returns the workloads of svc's namespace its selector picks, in
// input order.
func (ix *index) selected(svc *corev1.Service, ns string) []*Object {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	var out []*Object
	for _, o := range ix.workloads[ns][firstPair(svc.Spec.Selector)] {
		if wl, _ := asWorkload(o); serviceSelects(svc, wl) {
			out = append(out, o)
		}
	}
	return ix.inOrder(out)
}

// pdbsOf returns the PDBs that select wl's Pods, in input order.
func (ix *index) pdbsOf(wl *workload) []*Object {
	byLabel := ix.pdbs[wl.obj.Namespace]
	var out []*Object
	for _, key := range candidateKeys(wl) {
		for _, o := range byLabel[key] {
			if pdbSelects(pdbOf(o), wl) {
				out = append(out, o)
			}
		}
	}
	return ix.inOrder(out)
}

func candidateKeys(wl *workload) []string {
	keys := []string{""}
	for k, v := range wl.podLabels() {
		keys = append(keys, k+"="+v)
	}
	return keys
}

// hpaOf returns the HPA that scales wl, or nil.
func (ix *index) hpaOf(wl *workload) *Object {
	return ix.hpas[wl.obj.Namespace+"/"+wl.kind+"/"+wl.obj.Name]
}

// routeTo returns an Ingress or route that sends to Service ns/name, or nil.
func (ix *index) routeTo(ns, name string) *Object { return ix.routes[ns+"/"+name] }

// nsLabels are the labels of Namespace ns when the input holds it (nil
// otherwise).
func (ix *index) nsLabels(ns string) map[string]string { return namespaceLabels(ix.namespaces[ns]) }

// backendConfig is BackendConfig ns/name of the input, nil when absent.
func (ix *index) backendConfig(ns, name string) *Object { return ix.bcs[ns+"/"+name] }

// inOrder restores the input's order, which map lookups lose, so findings
// come out the same on every run.
func (ix *index) inOrder(objs []*Object) []*Object {
	sort.Slice(objs, func(i, j int) bool { return ix.order[objs[i]] < ix.order[objs[j]] })
	return objs
}
