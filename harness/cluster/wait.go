package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

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
