package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func nodeRole(n *corev1.Node) string {
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
		return "control-plane"
	}
	return "worker"
}

// waitNodesReady waits until every named node exists and is Ready; with no
// names, until at least one node exists and all are Ready.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, names ...string) error {
	what := "all nodes Ready"
	if len(names) > 0 {
		what = "nodes " + strings.Join(names, ", ") + " Ready"
	}
	return retry(ctx, what, timeout, 2*time.Second, func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for i := range list.Items {
			ready[list.Items[i].Name] = nodeReady(&list.Items[i])
		}
		check := names
		if len(check) == 0 {
			if len(ready) == 0 {
				return fmt.Errorf("no nodes registered yet")
			}
			for n := range ready {
				check = append(check, n)
			}
		}
		var notReady []string
		for _, n := range check {
			if r, ok := ready[n]; !ok {
				notReady = append(notReady, n+" (not registered)")
			} else if !r {
				notReady = append(notReady, n)
			}
		}
		if len(notReady) > 0 {
			sort.Strings(notReady)
			return fmt.Errorf("not Ready: %s", strings.Join(notReady, ", "))
		}
		return nil
	})
}

func waitDeployment(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, ns, name string) error {
	return retry(ctx, "deployment "+ns+"/"+name+" available", timeout, 2*time.Second, func(ctx context.Context) error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return deploymentDone(d)
	})
}

func deploymentDone(d *appsv1.Deployment) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation {
		return fmt.Errorf("generation %d not yet observed", d.Generation)
	}
	if d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want {
		return fmt.Errorf("%d/%d updated, %d/%d available", d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas, want)
	}
	return nil
}

func waitDaemonSet(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, ns, name string) error {
	return retry(ctx, "daemonset "+ns+"/"+name+" ready on every node", timeout, 2*time.Second, func(ctx context.Context) error {
		d, err := cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return daemonSetDone(d)
	})
}

func daemonSetDone(d *appsv1.DaemonSet) error {
	s := d.Status
	if s.ObservedGeneration < d.Generation {
		return fmt.Errorf("generation %d not yet observed", d.Generation)
	}
	if s.DesiredNumberScheduled == 0 {
		return fmt.Errorf("no pods scheduled yet")
	}
	if s.UpdatedNumberScheduled < s.DesiredNumberScheduled || s.NumberReady < s.DesiredNumberScheduled {
		return fmt.Errorf("%d/%d updated, %d/%d ready", s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberReady, s.DesiredNumberScheduled)
	}
	return nil
}
