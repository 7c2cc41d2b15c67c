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

	"zerodrop.dev/zerodrop/internal/waitfor"
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

// kubeProxyLabel selects kubeadm's kube-proxy Pods (its DaemonSet's
// k8s-app label, cmd/kubeadm/app/phases/addons/proxy/manifests.go).
const kubeProxyLabel = "k8s-app=kube-proxy"

// kubeProxySteady is how long a kube-proxy container must have run to
// count: one that exits as it starts runs for well under a second, and
// kubeadm's DaemonSet has no readiness probe to say so.
const kubeProxySteady = 3 * time.Second

// waitKubeProxy waits until kube-proxy has run steadily on every node. A
// kube-proxy that keeps exiting as it starts (a feature gate its release
// does not know, a configuration it refuses) ends the wait at once with
// the last lines of its log, instead of surfacing later as a CNI or a
// Service that cannot reach the API server's Service address. kube-proxy
// runs on nodes that are not Ready yet (host network, tolerates every
// taint), so this goes before the CNI, which needs its rules. hint is
// added to that error: what the user set that may be the cause. A
// container the kubelet cannot create for stuckFor (kubeProxyStuck; a node
// out of disk space) ends it too, with the kubelet's reason.
func waitKubeProxy(ctx context.Context, cs kubernetes.Interface, timeout, stuckFor time.Duration, hint string) error {
	// stuckSince is when each Pod was first seen unable to start its
	// container (stuck): one that stays so for stuckFor ends the wait.
	stuckSince := map[string]time.Time{}
	return waitfor.Until(ctx, "kube-proxy running on every node", timeout, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: kubeProxyLabel})
		if err != nil {
			return false, err.Error(), nil
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		steady := map[string]bool{}
		var problems []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if c := crashLooping(p); c != "" {
				return false, "", fmt.Errorf("kube-proxy %s on node %s keeps exiting as it starts: %s%s", p.Name, p.Spec.NodeName, lastLog(ctx, cs, p, c), hint)
			}
			if runningSince(p, time.Now().Add(-kubeProxySteady)) {
				steady[p.Spec.NodeName] = true
			}
			if why := stuck(p); why != "" {
				problems = append(problems, fmt.Sprintf("%s on %s: %s", p.Name, p.Spec.NodeName, why))
				if _, ok := stuckSince[p.Name]; !ok {
					stuckSince[p.Name] = time.Now()
				}
				if time.Since(stuckSince[p.Name]) >= stuckFor {
					return false, "", fmt.Errorf("kube-proxy %s on node %s cannot start its container (for %s): %s; `kubectl -n kube-system describe pod %s` shows the kubelet's events (a node out of disk space: free space where Docker keeps its data, `docker system df`)",
						p.Name, p.Spec.NodeName, stuckFor, why, p.Name)
				}
			} else {
				delete(stuckSince, p.Name)
			}
		}
		var missing []string
		for _, n := range nodes.Items {
			if !steady[n.Name] {
				missing = append(missing, n.Name)
			}
		}
		sort.Strings(missing)
		state := fmt.Sprintf("%d of %d nodes run kube-proxy", len(nodes.Items)-len(missing), len(nodes.Items))
		if len(missing) > 0 {
			state += " (not yet: " + strings.Join(missing, ", ") + ")"
		}
		if len(problems) > 0 {
			sort.Strings(problems)
			state += "; " + strings.Join(problems, "; ")
		}
		return len(nodes.Items) > 0 && len(missing) == 0, state, nil
	})
}

// kubeProxyStuck is how long a kube-proxy container may fail to be
// created before the wait ends: the kubelet retries, and a transient
// failure clears in a retry or two (about 10 s apart).
const kubeProxyStuck = 30 * time.Second

// stuck says why a container of p cannot start ("CreateContainerError:
// ... no space left on device"), or "": the kubelet's waiting reasons that
// do not clear by waiting (its images are preloaded; nothing is pulled).
func stuck(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		w := c.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "CreateContainerError", "CreateContainerConfigError", "ErrImageNeverPull", "ErrImagePull",
			"ImagePullBackOff", "InvalidImageName", "ImageInspectError", "RunContainerError":
			if w.Message == "" {
				return w.Reason
			}
			return w.Reason + ": " + w.Message
		}
	}
	return ""
}

// crashLooping names a container of p that is not running now because it
// exited with an error, again (the kubelet backs off between restarts), or
// "". A container that failed once and runs now (after a Docker restart of
// a reused cluster) is not one.
func crashLooping(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.RestartCount < 1 || c.State.Running != nil {
			continue
		}
		if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			return c.Name
		}
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			return c.Name
		}
	}
	return ""
}

// runningSince reports whether every container of p runs and has since
// before t.
func runningSince(p *corev1.Pod, t time.Time) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil || c.State.Running.StartedAt.Time.After(t) {
			return false
		}
	}
	return true
}

// lastLog is the last lines of container's previous run, or why they
// cannot be read, and where to read more.
func lastLog(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, container string) string {
	lines := int64(3)
	more := fmt.Sprintf("kubectl -n %s logs --previous %s", p.Namespace, p.Name)
	b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Previous: true, TailLines: &lines}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("its log cannot be read here (%v); %s shows it", err, more)
	}
	if log := strings.TrimSpace(string(b)); log != "" {
		return fmt.Sprintf("%q (%s shows more)", log, more)
	}
	return fmt.Sprintf("its last run logged nothing; %s", more)
}
