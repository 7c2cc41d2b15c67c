package doctor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LoadCluster reads the objects the rules need from a live cluster:
// Services, Deployments, StatefulSets, DaemonSets, PodDisruptionBudgets,
// HorizontalPodAutoscalers, Ingresses and Namespaces in namespace ("" for all namespaces). Findings from a cluster
// have no file or line; they name the object.
func LoadCluster(ctx context.Context, cs kubernetes.Interface, namespace string) (*Manifests, error) {
	m := &Manifests{}
	where := "namespace " + namespace
	if namespace == "" {
		where = "all namespaces"
	}
	fail := func(what string, err error) error {
		hint := "check KUBECONFIG, the context and that the cluster is reachable"
		if apierrors.IsForbidden(err) {
			hint = "your credentials may not list " + what + "; try --namespace with a namespace you can read"
		}
		return fmt.Errorf("doctor: list %s in %s: %w (%s)", what, where, err, hint)
	}
	add := func(apiVersion, kind string, meta metav1.Object, obj any) {
		m.Objects = append(m.Objects, &Object{
			APIVersion: apiVersion, Kind: kind, Namespace: meta.GetNamespace(), Name: meta.GetName(), Obj: obj,
		})
	}
	opts := metav1.ListOptions{}

	svcs, err := cs.CoreV1().Services(namespace).List(ctx, opts)
	if err != nil {
		return nil, fail("services", err)
	}
	for i := range svcs.Items {
		add("v1", "Service", &svcs.Items[i], &svcs.Items[i])
	}
	deps, err := cs.AppsV1().Deployments(namespace).List(ctx, opts)
	if err != nil {
		return nil, fail("deployments", err)
	}
	for i := range deps.Items {
		add("apps/v1", "Deployment", &deps.Items[i], &deps.Items[i])
	}
	sts, err := cs.AppsV1().StatefulSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fail("statefulsets", err)
	}
	for i := range sts.Items {
		add("apps/v1", "StatefulSet", &sts.Items[i], &sts.Items[i])
	}
	dss, err := cs.AppsV1().DaemonSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fail("daemonsets", err)
	}
	for i := range dss.Items {
		add("apps/v1", "DaemonSet", &dss.Items[i], &dss.Items[i])
	}
	pdbs, err := cs.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fail("poddisruptionbudgets", err)
	}
	for i := range pdbs.Items {
		add("policy/v1", "PodDisruptionBudget", &pdbs.Items[i], &pdbs.Items[i])
	}
	hpas, err := cs.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(ctx, opts)
	switch {
	case err == nil:
		for i := range hpas.Items {
			add("autoscaling/v2", "HorizontalPodAutoscaler", &hpas.Items[i], &hpas.Items[i])
		}
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		// HPAs only lower the replica count the PDB and replica rules see.
		m.Skipped = append(m.Skipped, Skip{Reason: fmt.Sprintf("horizontalpodautoscalers in %s not readable (%v): replica counts are the workloads' own", where, err)})
	default:
		return nil, fail("horizontalpodautoscalers", err)
	}
	ings, err := cs.NetworkingV1().Ingresses(namespace).List(ctx, opts)
	switch {
	case err == nil:
		for i := range ings.Items {
			ing := &ings.Items[i]
			m.Objects = append(m.Objects, &Object{
				APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name,
				Obj: ing, routes: ingressServices(ing),
			})
		}
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		// Ingresses only feed the keep-alive rule (ZD040); say it was not
		// checked rather than fail the whole run.
		m.Skipped = append(m.Skipped, Skip{Reason: fmt.Sprintf("ingresses in %s not readable (%v): ZD040 only sees L7 LB profiles", where, err)})
	default:
		return nil, fail("ingresses", err)
	}
	// Namespaces: their labels may ask a vendor to inject its readiness
	// gate (profiles.ReadinessGate.NamespaceLabel). Namespace-scoped
	// credentials may read their own only, or none.
	var nss []corev1.Namespace
	if namespace != "" {
		var ns *corev1.Namespace
		if ns, err = cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err == nil {
			nss = []corev1.Namespace{*ns}
		}
	} else {
		var list *corev1.NamespaceList
		if list, err = cs.CoreV1().Namespaces().List(ctx, opts); err == nil {
			nss = list.Items
		}
	}
	switch {
	case err == nil:
		for i := range nss {
			add("v1", "Namespace", &nss[i], &nss[i])
		}
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		m.Skipped = append(m.Skipped, Skip{Reason: fmt.Sprintf("namespaces not readable (%v): a readiness gate injected by a namespace label is not seen", err)})
	default:
		return nil, fail("namespaces", err)
	}
	return m, nil
}
