package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/recipe"
)

// ShutdownGrace is the kubelet's graceful node shutdown (recipe.ShutdownGrace).
type ShutdownGrace = recipe.ShutdownGrace

// kubeletConfig is where kubeadm writes the kubelet's configuration on a node.
const kubeletConfig = "/var/lib/kubelet/config.yaml"

// SetShutdownGrace implements Provider: the two fields of the node's kubelet
// configuration are rewritten and the kubelet restarted (its running Pods
// are not touched), then this waits until the kubelet holds the systemd
// inhibitor lock that delays a shutdown (none when g is off). That lock is
// how the kubelet learns of a shutdown: it takes a "delay" lock from
// systemd-logind over D-Bus, raises logind's InhibitDelayMaxSec to the
// period with a drop-in, and acts on logind's PrepareForShutdown signal
// (kubernetes pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go).
// kind's node containers run systemd, D-Bus and logind, so a shutdown there
// reaches the kubelet as on a machine.
func (k *Kind) SetShutdownGrace(ctx context.Context, node string, g ShutdownGrace) error {
	if err := g.Validate(); err != nil {
		return err
	}
	set := fmt.Sprintf(`set -e
f=%s
for kv in "shutdownGracePeriod: %s" "shutdownGracePeriodCriticalPods: %s"; do
  key="${kv%%%%:*}"
  if grep -q "^$key:" "$f"; then sed -i "s/^$key:.*/$kv/" "$f"; else echo "$kv" >>"$f"; fi
done
systemctl restart kubelet`, kubeletConfig, g.Period, g.CriticalPods)
	if _, err := nodeExec(ctx, node, nil, "sh", "-c", set); err != nil {
		return fmt.Errorf("node %s: set the kubelet's shutdown grace to %s: %w", node, g, err)
	}
	want := g.Period > 0
	if err := retry(ctx, fmt.Sprintf("node %s: the kubelet restarted with shutdown grace %s (inhibitor lock held: %t)", node, g, want),
		time.Minute, 500*time.Millisecond, func(ctx context.Context) error {
			held, err := kubeletInhibits(ctx, node)
			if err != nil {
				return err
			}
			if held != want {
				return fmt.Errorf("kubelet inhibitor lock held: %t", held)
			}
			return nil
		}); err != nil {
		return err
	}
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, k.o.readyTimeout, node); err != nil {
		return err
	}
	k.o.emit(zdv1.EventAction, "node/"+node, "kubelet graceful node shutdown set to "+g.String(),
		map[string]string{"shutdownGracePeriod": g.Period.String(), "shutdownGracePeriodCriticalPods": g.CriticalPods.String()})
	return nil
}

// kubeletInhibits reports whether the node's kubelet holds a systemd
// inhibitor lock on shutdown.
func kubeletInhibits(ctx context.Context, node string) (bool, error) {
	out, err := nodeExec(ctx, node, nil, "systemd-inhibit", "--list", "--no-legend", "--no-pager")
	if err != nil {
		return false, fmt.Errorf("node %s: list systemd inhibitor locks: %w", node, err)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "kubelet" && strings.Contains(l, "shutdown") {
			return true, nil
		}
	}
	return false, nil
}

// PowerOff implements Provider: the node's machine shuts down as on a press of
// its power button or a cloud's ACPI shutdown: `systemctl poweroff` asks
// systemd-logind, which announces PrepareForShutdown to the kubelet and
// holds the shutdown while the kubelet's delay lock lasts (at most its
// shutdown grace period), then systemd stops every service and the
// container exits. The container is kept from restarting, so the machine
// stays off. Returns once it is off; a machine still running after timeout
// is killed and that is an error.
func (k *Kind) PowerOff(ctx context.Context, node string, timeout time.Duration) error {
	if _, err := docker(ctx, nil, "update", "--restart=no", node); err != nil {
		return fmt.Errorf("node %s: keep the machine from restarting: %w", node, err)
	}
	held, err := kubeletInhibits(ctx, node)
	if err != nil {
		return err
	}
	grace := "off: the kubelet holds no inhibitor lock"
	if held {
		grace = "on: the kubelet holds its delay lock"
	}
	start := time.Now()
	k.o.emit(zdv1.EventNodeShutdown, "node/"+node, "machine shutting down (systemctl poweroff through systemd-logind); kubelet graceful node shutdown "+grace,
		map[string]string{"graceful": fmt.Sprint(held)})
	if _, err := nodeExec(ctx, node, nil, "systemctl", "poweroff"); err != nil {
		return fmt.Errorf("node %s: systemctl poweroff: %w", node, err)
	}
	werr := retry(ctx, fmt.Sprintf("node %s: the machine off after poweroff", node), timeout, 200*time.Millisecond, func(ctx context.Context) error {
		out, err := docker(ctx, nil, "inspect", "-f", "{{.State.Running}}", node)
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "false" {
			return fmt.Errorf("still running")
		}
		return nil
	})
	if werr != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = docker(cctx, nil, "kill", node)
		return fmt.Errorf("%w; the machine was killed instead", werr)
	}
	k.o.emit(zdv1.EventNodeOff, "node/"+node, fmt.Sprintf("machine off %s after its shutdown began", time.Since(start).Round(time.Millisecond)), nil)
	return nil
}

// RemoveNode implements Provider: the Node object is deleted and the
// machine destroyed at once, without a drain, as a cloud's node lifecycle
// controller deletes the Node of an instance that no longer exists.
func (k *Kind) RemoveNode(ctx context.Context, node string) error {
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", node, err)
	}
	if _, ierr := docker(ctx, nil, "inspect", "-f", "{{.Id}}", node); ierr == nil {
		if _, err := docker(ctx, nil, "rm", "-f", "-v", node); err != nil {
			return fmt.Errorf("node %s: remove its container: %w", node, err)
		}
	}
	k.o.emit(zdv1.EventNodeRemoved, "node/"+node, "node deleted and its machine destroyed", nil)
	return nil
}

// AddNode implements Provider: one new machine named name joins pool with
// labels and taints, as a managed instance group recreates an instance it
// lost under the same name.
func (k *Kind) AddNode(ctx context.Context, pool, name string, labels map[string]string, taints []corev1.Taint) error {
	if err := validatePool(pool, 1); err != nil {
		return err
	}
	cs, err := k.clientset()
	if err != nil {
		return err
	}
	k.o.progress(fmt.Sprintf("adding node %s to nodepool %s", name, pool))
	if err := k.joinNew(ctx, cs, pool, []string{name}, labels, taints); err != nil {
		return fmt.Errorf("add node %s to nodepool %s: %w", name, pool, err)
	}
	return nil
}
