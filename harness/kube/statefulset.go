package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Workload kinds the harness acts on.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// WaitWorkload is WaitRollout for a Deployment and WaitStatefulSet for a
// StatefulSet.
func (c *Client) WaitWorkload(ctx context.Context, kind, namespace, name string, timeout time.Duration) error {
	switch kind {
	case KindDeployment, "":
		return c.WaitRollout(ctx, namespace, name, timeout)
	case KindStatefulSet:
		return c.WaitStatefulSet(ctx, namespace, name, timeout)
	}
	return fmt.Errorf("wait for %s %s/%s: the harness acts on Deployments and StatefulSets", kind, namespace, name)
}

// RestartWorkload is `kubectl rollout restart` of a Deployment or a
// StatefulSet: a template annotation, then rollout-start recorded, and when
// wait > 0 the rollout waited for and rollout-end recorded.
func (c *Client) RestartWorkload(ctx context.Context, kind, namespace, name string, wait time.Duration) error {
	at := c.now().UTC().Format(time.RFC3339Nano)
	stamp := func(t *corev1.PodTemplateSpec) {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations["kubectl.kubernetes.io/restartedAt"] = at
	}
	var err error
	switch kind {
	case KindDeployment, "":
		kind = KindDeployment
		err = c.UpdateDeployment(ctx, namespace, name, "rollout restart", func(d *appsv1.Deployment) { stamp(&d.Spec.Template) })
	case KindStatefulSet:
		err = c.updateStatefulSet(ctx, namespace, name, "rollout restart", func(s *appsv1.StatefulSet) { stamp(&s.Spec.Template) })
	default:
		return fmt.Errorf("restart %s %s/%s: the harness acts on Deployments and StatefulSets", kind, namespace, name)
	}
	if err != nil {
		return err
	}
	obj := strings.ToLower(kind) + "/" + namespace + "/" + name
	c.emit(zdv1.EventRolloutStart, obj, "rollout restart", nil)
	if wait <= 0 {
		return nil
	}
	if err := c.WaitWorkload(ctx, kind, namespace, name, wait); err != nil {
		return err
	}
	c.emit(zdv1.EventRolloutEnd, obj, "rollout complete", nil)
	return nil
}

// updateStatefulSet is UpdateDeployment for a StatefulSet.
func (c *Client) updateStatefulSet(ctx context.Context, namespace, name, why string, mutate func(*appsv1.StatefulSet)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := c.cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(s)
		_, err = c.cs.AppsV1().StatefulSets(namespace).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update statefulset %s/%s (%s): %w", namespace, name, why, err)
	}
	c.emit(zdv1.EventAction, "statefulset/"+namespace+"/"+name, why, nil)
	return nil
}

// WaitStatefulSet waits until the StatefulSet's controller has seen its
// latest spec, every replica is ready and the Pods it updates (all of them,
// or those at or above a rolling update's partition) run the update
// revision (kubectl rollout status).
func (c *Client) WaitStatefulSet(ctx context.Context, namespace, name string, timeout time.Duration) error {
	return poll(ctx, fmt.Sprintf("statefulset %s/%s to finish its rollout", namespace, name), timeout, 500*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			s, err := c.cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return statefulSetDone(s)
		})
}

func statefulSetDone(s *appsv1.StatefulSet) (bool, string, error) {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	partition := int32(0)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	st := s.Status
	state := fmt.Sprintf("generation %d observed %d, replicas %d ready %d updated %d (want %d, partition %d), revision %s -> %s",
		s.Generation, st.ObservedGeneration, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, want, partition, st.CurrentRevision, st.UpdateRevision)
	updated := st.UpdateRevision == st.CurrentRevision || st.UpdatedReplicas >= want-partition
	done := st.ObservedGeneration >= s.Generation && st.Replicas == want && st.ReadyReplicas == want && updated
	return done, state, nil
}
