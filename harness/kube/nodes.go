package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Cordon marks a node unschedulable (what `kubectl cordon` and the first
// step of a drain do, and what the drain-local-pdb incident's service controller reacted to).
func (c *Client) Cordon(ctx context.Context, node string) error {
	return c.setUnschedulable(ctx, node, true)
}

// Uncordon marks a node schedulable again.
func (c *Client) Uncordon(ctx context.Context, node string) error {
	return c.setUnschedulable(ctx, node, false)
}

func (c *Client) setUnschedulable(ctx context.Context, node string, on bool) error {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", node, err)
	}
	h := &drain.Helper{Ctx: ctx, Client: c.cs}
	if err := drain.RunCordonOrUncordon(h, n, on); err != nil {
		return fmt.Errorf("set node %s unschedulable=%t: %w", node, on, err)
	}
	if on {
		c.emit(zdv1.EventCordon, "node/"+node, "cordoned by the harness", nil)
	} else {
		c.emit(zdv1.EventUncordon, "node/"+node, "uncordoned by the harness", nil)
	}
	return nil
}

// DrainResult says how a drain ended.
type DrainResult struct {
	Node string
	// Completed is true when every evictable pod left the node.
	Completed bool
	// Remaining lists the pods still on the node when the drain gave up
	// (typically held by a PodDisruptionBudget).
	Remaining []string
	// Err is why the drain did not complete.
	Err error
	// Took is the drain's wall time.
	Took time.Duration
}

// Drain cordons the node and evicts its pods the way `kubectl drain
// --ignore-daemonsets --delete-emptydir-data` does, honouring
// PodDisruptionBudgets, for at most timeout. A drain that a budget blocks is
// not an error of the harness: it comes back as a result with Completed
// false and the pods left behind, since incident drain-local-pdb is exactly that.
func (c *Client) Drain(ctx context.Context, node string, timeout time.Duration, opts ...DrainOption) DrainResult {
	var o drainOptions
	for _, opt := range opts {
		opt(&o)
	}
	start := c.now()
	res := DrainResult{Node: node}
	var errOut strings.Builder
	h := &drain.Helper{
		Ctx:                 ctx,
		Client:              c.cs,
		Force:               o.force,
		GracePeriodSeconds:  -1,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		Timeout:             timeout,
		Out:                 &strings.Builder{},
		ErrOut:              &errOut,
		OnPodDeletionOrEvictionStarted: func(pod *corev1.Pod, usingEviction bool) {
			how := "delete"
			if usingEviction {
				how = "evict"
			}
			c.emit(zdv1.EventAction, "pod/"+pod.Namespace+"/"+pod.Name, how+" for drain of "+node, map[string]string{"node": node})
		},
	}
	if err := c.Cordon(ctx, node); err != nil {
		res.Err = err
		return res
	}
	c.emit(zdv1.EventDrainStart, "node/"+node, fmt.Sprintf("drain started (timeout %s)", timeout), nil)
	err := drain.RunNodeDrain(h, node)
	res.Took = c.now().Sub(start)
	if err == nil {
		res.Completed = true
		c.emit(zdv1.EventDrainEnd, "node/"+node, fmt.Sprintf("drained in %s", res.Took.Round(time.Millisecond)), nil)
		return res
	}
	res.Err = fmt.Errorf("drain %s: %w (%s)", node, err, strings.TrimSpace(errOut.String()))
	if pods, lerr := c.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}); lerr == nil {
		for _, p := range pods.Items {
			if isDaemonSetPod(&p) || p.DeletionTimestamp != nil {
				continue
			}
			res.Remaining = append(res.Remaining, p.Namespace+"/"+p.Name)
		}
	}
	c.emit(zdv1.EventDrainEnd, "node/"+node, fmt.Sprintf("drain gave up after %s: %d pods remain (%s)",
		res.Took.Round(time.Millisecond), len(res.Remaining), strings.Join(res.Remaining, ", ")),
		map[string]string{"completed": "false"})
	return res
}

// DrainOption adjusts a drain.
type DrainOption func(*drainOptions)

type drainOptions struct{ force bool }

// Force also deletes pods no controller manages (kubectl drain --force):
// right when the machine is destroyed next, since such pods die with it.
func Force() DrainOption { return func(o *drainOptions) { o.force = true } }

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// DrainAll drains the nodes concurrently ("the old pool drained at once",
// incident drain-local-pdb) and returns one result per node, in the order given.
func (c *Client) DrainAll(ctx context.Context, nodes []string, timeout time.Duration) []DrainResult {
	out := make([]DrainResult, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = c.Drain(ctx, n, timeout)
		}()
	}
	wg.Wait()
	return out
}

// NodesInPool lists the names of the nodes labelled with the pool.
func (c *Client) NodesInPool(ctx context.Context, pool string) ([]string, error) {
	l, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: contract.PoolLabel + "=" + pool})
	if err != nil {
		return nil, fmt.Errorf("list nodes of pool %s: %w", pool, err)
	}
	names := make([]string, 0, len(l.Items))
	for _, n := range l.Items {
		names = append(names, n.Name)
	}
	return names, nil
}

// Taint puts t on the node (replacing a taint of the same key and effect),
// as a node's lifecycle tool does before it drains the node (the cluster
// autoscaler's ToBeDeletedByClusterAutoscaler, Karpenter's
// karpenter.sh/disrupted).
func (c *Client) Taint(ctx context.Context, node string, t corev1.Taint, why string) error {
	if err := c.updateNode(ctx, node, func(n *corev1.Node) {
		keep := n.Spec.Taints[:0]
		for _, o := range n.Spec.Taints {
			if o.Key != t.Key || o.Effect != t.Effect {
				keep = append(keep, o)
			}
		}
		n.Spec.Taints = append(keep, t)
	}); err != nil {
		return fmt.Errorf("taint node %s with %s:%s: %w", node, t.Key, t.Effect, err)
	}
	c.emit(zdv1.EventNodeTainted, "node/"+node, fmt.Sprintf("tainted %s=%s:%s (%s)", t.Key, t.Value, t.Effect, why),
		map[string]string{"key": t.Key, "value": t.Value, "effect": string(t.Effect)})
	return nil
}

// Label sets a label on the node (Karpenter's and the node termination
// handler's node.kubernetes.io/exclude-from-external-load-balancers).
func (c *Client) Label(ctx context.Context, node, key, value, why string) error {
	if err := c.updateNode(ctx, node, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	}); err != nil {
		return fmt.Errorf("label node %s with %s=%s: %w", node, key, value, err)
	}
	c.emit(zdv1.EventNodeLabelled, "node/"+node, fmt.Sprintf("labelled %s=%s (%s)", key, value, why),
		map[string]string{"key": key, "value": value})
	return nil
}

// updateNode applies mutate to the node and writes it, again on a conflict.
func (c *Client) updateNode(ctx context.Context, node string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		_, err = c.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
