package kube

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatefulSetDone(t *testing.T) {
	three, one := int32(3), int32(1)
	mk := func(gen, observed int64, ready, updated int32, cur, upd string, partition *int32) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.StatefulSetSpec{Replicas: &three}}
		if partition != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: observed, Replicas: 3, ReadyReplicas: ready, UpdatedReplicas: updated, CurrentRevision: cur, UpdateRevision: upd}
		return s
	}
	for _, tc := range []struct {
		name string
		s    *appsv1.StatefulSet
		want bool
	}{
		{"settled", mk(2, 2, 3, 3, "b", "b", nil), true},
		{"spec not seen", mk(3, 2, 3, 3, "b", "b", nil), false},
		{"rolling", mk(2, 2, 3, 1, "a", "b", nil), false},
		{"one unready", mk(2, 2, 2, 3, "b", "b", nil), false},
		{"partition 1: two updated is all", mk(2, 2, 3, 2, "a", "b", &one), true},
	} {
		if got, _, _ := statefulSetDone(tc.s); got != tc.want {
			t.Errorf("%s: done = %v, want %v", tc.name, got, tc.want)
		}
	}
}
