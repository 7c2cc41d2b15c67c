package cloudlb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// The cleanup finalizer, as the Kubernetes service controller manages it
// (k8s.io/cloud-provider controllers/service/controller.go,
// syncLoadBalancerIfNeeded): it is put on a Service before its LB is built,
// so the Service cannot disappear while the LB still forwards its address,
// and taken off once the LB is gone — when the Service is being deleted or
// no longer wants this LB (needsCleanup: type changed away from
// LoadBalancer). Here "no longer wants" also covers a Service the LB stopped
// owning, which with an immutable loadBalancerClass only a type change does.

// needsCleanup reports whether svc carries the finalizer but should have no
// LB of ours any more. The finalizer is the service controller's standard
// one, so on a Service that is not ours it is ours to remove only when this
// LB served it (it holds state for it, or the Service shows an address of
// this LB's range): another controller's finalizer is left alone.
func (c *Controller) needsCleanup(svc *corev1.Service) bool {
	if !servicehelper.HasLBFinalizer(svc) {
		return false
	}
	if c.owns(svc) {
		return svc.DeletionTimestamp != nil
	}
	_, served := c.svcs[svcKey(svc)]
	return served || c.wroteIngress(svc)
}

// patchFinalizer adds (add=true) or removes the cleanup finalizer with a
// strategic merge patch: finalizers merge as a set, so neither way can drop
// another controller's finalizer written meanwhile, and repeating it (the
// informer's copy may lag behind the patch) changes nothing.
func (c *Controller) patchFinalizer(ctx context.Context, svc *corev1.Service, add bool) error {
	var patch map[string]any
	if add {
		patch = map[string]any{"metadata": map[string]any{"finalizers": []string{servicehelper.LoadBalancerCleanupFinalizer}}}
	} else {
		patch = map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{servicehelper.LoadBalancerCleanupFinalizer}}}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil && !(apierrors.IsNotFound(err) && !add) {
		what := map[bool]string{true: "add", false: "remove"}[add]
		return fmt.Errorf("%s finalizer %s on service %s: %w", what, servicehelper.LoadBalancerCleanupFinalizer, svcKey(svc), err)
	}
	return nil
}

// cleanUp ends the LB's part in svc once the data plane no longer forwards
// its address: the ingress status and the finalizer go, as the service
// controller does (it clears the status of a Service being deleted too).
func (c *Controller) cleanUp(ctx context.Context, svc *corev1.Service) error {
	if c.wroteIngress(svc) {
		if err := c.patchLBStatus(ctx, svc, nil); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if err := c.patchFinalizer(ctx, svc, false); err != nil {
		return err
	}
	c.emit(zdv1.EventNote, "service/"+svcKey(svc), fmt.Sprintf("LB removed finalizer %s from service %s: its LB is gone", servicehelper.LoadBalancerCleanupFinalizer, svcKey(svc)),
		map[string]string{"service": svcKey(svc)})
	return nil
}

// wroteIngress reports whether svc shows an address of this LB's range: an
// address another LB wrote (MetalLB took the Service over) is not ours to
// clear.
func (c *Controller) wroteIngress(svc *corev1.Service) bool {
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil && c.pool.Contains(a) {
			return true
		}
	}
	return false
}
