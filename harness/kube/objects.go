package kube

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Interface is the clientset the steps use.
type Interface = kubernetes.Interface

// Create creates each object in order. Kinds other than Namespace,
// Deployment, StatefulSet, Service, PodDisruptionBudget and what a Pod
// names (ConfigMap, Secret, ServiceAccount) are refused, since a silently
// skipped object would make a scenario test something else than it says.
func (c *Client) Create(ctx context.Context, objs ...runtime.Object) error {
	return c.create(ctx, false, objs)
}

// CreateShared creates each object in order as Create does, except that
// one that already exists counts as created: objects several witnesses
// share (a namespace, the Deployment and PodDisruptionBudget of their
// Pods), which whichever witness comes first creates. The caller makes
// sure the objects are the same (fixtures.SamePods).
func (c *Client) CreateShared(ctx context.Context, objs ...runtime.Object) error {
	return c.create(ctx, true, objs)
}

func (c *Client) create(ctx context.Context, shared bool, objs []runtime.Object) error {
	for _, obj := range objs {
		var err error
		var what string
		switch o := obj.(type) {
		case *corev1.Namespace:
			what = "namespace/" + o.Name
			_, err = c.cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			what = "deployment/" + o.Namespace + "/" + o.Name
			_, err = c.cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.StatefulSet:
			what = "statefulset/" + o.Namespace + "/" + o.Name
			_, err = c.cs.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			what = "service/" + o.Namespace + "/" + o.Name
			_, err = c.cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			what = "configmap/" + o.Namespace + "/" + o.Name
			_, err = c.cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			what = "secret/" + o.Namespace + "/" + o.Name
			_, err = c.cs.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			what = "serviceaccount/" + o.Namespace + "/" + o.Name
			_, err = c.cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *policyv1.PodDisruptionBudget:
			what = "pdb/" + o.Namespace + "/" + o.Name
			_, err = c.cs.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			return fmt.Errorf("create: unsupported object type %T (supported: Namespace, Deployment, StatefulSet, Service, PodDisruptionBudget, ConfigMap, Secret, ServiceAccount)", obj)
		}
		switch {
		case shared && apierrors.IsAlreadyExists(err):
			c.emit(zdv1.EventNote, what, "already created by another witness that shares it", nil)
		case err != nil:
			return fmt.Errorf("create %s: %w", what, err)
		default:
			c.emit(zdv1.EventAction, what, "created", nil)
		}
	}
	return nil
}

// CreateCustom creates obj, a namespaced object of a custom resource
// (resource is its plural name, as in the API path: "backendconfigs"),
// through the clientset's own connection, so a caller needs no second
// client for the one object of a CRD a workload carries (a GKE
// BackendConfig).
func (c *Client) CreateCustom(ctx context.Context, resource string, obj *unstructured.Unstructured) error {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	what := strings.ToLower(obj.GetKind()) + "/" + obj.GetNamespace() + "/" + obj.GetName()
	switch {
	case err != nil:
		return fmt.Errorf("create %s: apiVersion %q: %w", what, obj.GetAPIVersion(), err)
	case gv.Group == "" || obj.GetNamespace() == "" || resource == "":
		return fmt.Errorf("create %s: want a namespaced object of a custom resource (group %q, resource %q)", what, gv.Group, resource)
	}
	rc := c.cs.Discovery().RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		return fmt.Errorf("create %s: this client has no REST connection for custom resources", what)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	path := "/apis/" + gv.Group + "/" + gv.Version + "/namespaces/" + obj.GetNamespace() + "/" + resource
	if err := rc.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error(); err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	c.emit(zdv1.EventAction, what, "created", nil)
	return nil
}

// DeleteService deletes one Service (its LB address goes with it) without
// waiting; a Service already gone is not an error.
func (c *Client) DeleteService(ctx context.Context, namespace, name string) error {
	err := c.cs.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete service %s/%s: %w", namespace, name, err)
	}
	return nil
}

// DeleteNamespace deletes a namespace and waits until it is gone, so that
// the next scenario starts from a cluster without this one's pods. Its
// Pods go at once (grace period 0): the run is over, and a hardened Pod's
// graceful shutdown lasts as long as its LB profile makes it (gclb: 10
// health checks of 60 s), during which a node drain of the next scenario
// would wait for it and time out. A terminating namespace takes no new
// Pods (the NamespaceLifecycle admission plugin), so none come back.
func (c *Client) DeleteNamespace(ctx context.Context, name string, timeout time.Duration) error {
	err := c.cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	now := int64(0)
	if err := c.cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the pods of namespace %s at once: %w", name, err)
	}
	return poll(ctx, "namespace "+name+" to be deleted", timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		ns, err := c.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		return false, "phase " + string(ns.Status.Phase), nil
	})
}

// UpdateDeployment applies mutate to the live Deployment, retrying on
// conflicts with the controllers that also write it.
func (c *Client) UpdateDeployment(ctx context.Context, namespace, name, why string, mutate func(*appsv1.Deployment)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(d)
		_, err = c.cs.AppsV1().Deployments(namespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update deployment %s/%s (%s): %w", namespace, name, why, err)
	}
	c.emit(zdv1.EventAction, "deployment/"+namespace+"/"+name, why, nil)
	return nil
}

// SetDeletionCost sets a Pod's controller.kubernetes.io/pod-deletion-cost
// annotation (why says what for): among a ReplicaSet's running, ready
// Pods, the one of lower cost is deleted first when it scales in
// (Kubernetes v1.37.2 pkg/controller/controller_utils.go,
// ActivePodsWithRanks.Less, step 4, ahead of the node-spreading rank;
// feature gate PodDeletionCost, beta and on by default since v1.22).
func (c *Client) SetDeletionCost(ctx context.Context, namespace, pod string, cost int32, why string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[corev1.PodDeletionCost] = fmt.Sprint(cost)
		_, err = c.cs.CoreV1().Pods(namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s=%d on pod %s/%s (%s): %w", corev1.PodDeletionCost, cost, namespace, pod, why, err)
	}
	c.emit(zdv1.EventAction, "pod/"+namespace+"/"+pod, fmt.Sprintf("%s=%d: %s", corev1.PodDeletionCost, cost, why), nil)
	return nil
}

// Note records a free-form event (what the scenario is about to do, or saw).
func (c *Client) Note(object, msg string) { c.emit(zdv1.EventNote, object, msg, nil) }

// Action records a scenario step that is not one of the client's own.
func (c *Client) Action(object, msg string) { c.emit(zdv1.EventAction, object, msg, nil) }
