package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// WaitRollout waits until the Deployment's controller has seen its latest
// spec and every replica is updated and available (kubectl rollout status).
func (c *Client) WaitRollout(ctx context.Context, namespace, name string, timeout time.Duration) error {
	return poll(ctx, fmt.Sprintf("deployment %s/%s to finish its rollout", namespace, name), timeout, 500*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			d, err := c.cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return rolloutDone(d)
		})
}

func rolloutDone(d *appsv1.Deployment) (bool, string, error) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	state := fmt.Sprintf("generation %d observed %d, replicas %d updated %d ready %d available %d (want %d)",
		d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, want)
	for _, cond := range s.Conditions {
		if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "ProgressDeadlineExceeded" {
			return false, state, fmt.Errorf("deployment %s/%s exceeded its progress deadline: %s", d.Namespace, d.Name, cond.Message)
		}
	}
	done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
	return done, state, nil
}

// WaitDaemonSet waits until the DaemonSet's controller has seen its latest
// spec and an updated pod is ready on every node it is scheduled to.
func (c *Client) WaitDaemonSet(ctx context.Context, namespace, name string, timeout time.Duration) error {
	return poll(ctx, fmt.Sprintf("daemonset %s/%s ready on every node", namespace, name), timeout, time.Second,
		func(ctx context.Context) (bool, string, error) {
			d, err := c.cs.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return daemonSetDone(d)
		})
}

func daemonSetDone(d *appsv1.DaemonSet) (bool, string, error) {
	s := d.Status
	state := fmt.Sprintf("generation %d observed %d, %d scheduled, %d updated, %d ready",
		d.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady)
	done := s.ObservedGeneration >= d.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled >= s.DesiredNumberScheduled && s.NumberReady >= s.DesiredNumberScheduled
	return done, state, nil
}

// RolloutRestart restarts every pod of the Deployment the way `kubectl
// rollout restart` does (a template annotation), records rollout-start, and
// when wait > 0 waits for the rollout and records rollout-end.
func (c *Client) RolloutRestart(ctx context.Context, namespace, name string, wait time.Duration) error {
	return c.RestartWorkload(ctx, KindDeployment, namespace, name, wait)
}

// WaitLoadBalancer waits for the Service's load balancer address and returns
// it.
func (c *Client) WaitLoadBalancer(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
	var addr string
	err := poll(ctx, fmt.Sprintf("service %s/%s to get a load balancer address (is a LoadBalancer implementation running?)", namespace, name),
		timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
			s, err := c.cs.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			for _, ing := range s.Status.LoadBalancer.Ingress {
				if ing.IP != "" {
					addr = ing.IP
					return true, "", nil
				}
				if ing.Hostname != "" {
					addr = ing.Hostname
					return true, "", nil
				}
			}
			return false, "no ingress in status", nil
		})
	return addr, err
}

// Endpoint is one endpoint of a Service as its EndpointSlices say.
type Endpoint struct {
	Pod, Node, Address          string
	Ready, Serving, Terminating bool
}

// Endpoints lists a Service's endpoints from its EndpointSlices.
func (c *Client) Endpoints(ctx context.Context, namespace, service string) ([]Endpoint, error) {
	l, err := c.cs.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service,
	})
	if err != nil {
		return nil, fmt.Errorf("list EndpointSlices of %s/%s: %w", namespace, service, err)
	}
	var out []Endpoint
	for i := range l.Items {
		out = append(out, SliceEndpoints(&l.Items[i])...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out, nil
}

// SliceEndpoints reads one EndpointSlice. Conditions left unset mean
// ready and serving, as the API documents; terminating only when set.
func SliceEndpoints(s *discoveryv1.EndpointSlice) []Endpoint {
	out := make([]Endpoint, 0, len(s.Endpoints))
	for _, ep := range s.Endpoints {
		e := Endpoint{
			Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
			Serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
			Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
		}
		if ep.TargetRef != nil {
			e.Pod = ep.TargetRef.Name
		}
		if ep.NodeName != nil {
			e.Node = *ep.NodeName
		}
		if len(ep.Addresses) > 0 {
			e.Address = ep.Addresses[0]
		}
		out = append(out, e)
	}
	return out
}

// WaitReadyEndpoints waits until the Service has exactly want ready
// endpoints.
func (c *Client) WaitReadyEndpoints(ctx context.Context, namespace, service string, want int, timeout time.Duration) ([]Endpoint, error) {
	return c.waitEndpoints(ctx, namespace, service, fmt.Sprintf("%d ready endpoints", want), timeout,
		func(ready, all int) bool { return ready == want })
}

// WaitEndpointsSettled waits until the Service has at least one endpoint
// and every endpoint it has is ready: a workload someone else deployed,
// whose replica count the caller does not know, has finished starting
// (and any Pod of an earlier rollout has finished terminating).
func (c *Client) WaitEndpointsSettled(ctx context.Context, namespace, service string, timeout time.Duration) ([]Endpoint, error) {
	return c.waitEndpoints(ctx, namespace, service, "ready endpoints and no other", timeout,
		func(ready, all int) bool { return all > 0 && ready == all })
}

// waitEndpoints polls the Service's endpoints until done holds for the
// number of ready ones and of all, and returns the ready ones; a timeout
// names every endpoint last seen and whether it was ready.
func (c *Client) waitEndpoints(ctx context.Context, namespace, service, what string, timeout time.Duration, done func(ready, all int) bool) ([]Endpoint, error) {
	var ready []Endpoint
	err := poll(ctx, fmt.Sprintf("service %s/%s to have %s", namespace, service, what), timeout, 500*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			eps, err := c.Endpoints(ctx, namespace, service)
			if err != nil {
				return false, err.Error(), nil
			}
			ready = ready[:0]
			var desc []string
			for _, e := range eps {
				if e.Ready {
					ready = append(ready, e)
				}
				desc = append(desc, fmt.Sprintf("%s@%s ready=%t", e.Pod, e.Node, e.Ready))
			}
			if len(eps) == 0 {
				desc = append(desc, "no endpoint")
			}
			return done(len(ready), len(eps)), strings.Join(desc, ", "), nil
		})
	return ready, err
}

// Pods lists the pods matching selector, sorted by name.
func (c *Client) Pods(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("pod selector %q: %w", selector, err)
	}
	l, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods %q in %s: %w", selector, namespace, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// LastWarning is the newest Warning event the cluster recorded for a Pod
// ("Unhealthy: Readiness probe failed: HTTP probe failed with statuscode:
// 412 (37 times)"), "" when there is none: what a Pod that never turns
// ready says about why.
func (c *Client) LastWarning(ctx context.Context, namespace, pod string) (string, error) {
	last, err := c.lastEvent(ctx, namespace, "involvedObject.kind=Pod,involvedObject.name="+pod+",type="+corev1.EventTypeWarning,
		func(e *corev1.Event) bool { return e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == pod })
	if err != nil || last == nil {
		return "", err
	}
	s := last.Reason + ": " + strings.TrimSpace(last.Message)
	if last.Count > 1 {
		s += fmt.Sprintf(" (%d times)", last.Count)
	}
	return s, nil
}

// LastEvent is the latest event with reason about the object of kind and
// name in namespace (a controller's own account of what it did to it, such
// as MetalLB's speaker announcing a Service), nil when there is none.
func (c *Client) LastEvent(ctx context.Context, namespace, kind, name, reason string) (*corev1.Event, error) {
	return c.lastEvent(ctx, namespace, "involvedObject.kind="+kind+",involvedObject.name="+name+",reason="+reason,
		func(e *corev1.Event) bool {
			return e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason
		})
}

// lastEvent lists the events of namespace the field selector picks and
// keeps the latest that match also accepts (a client that ignores field
// selectors, such as the fake, returns them all).
func (c *Client) lastEvent(ctx context.Context, namespace, fields string, match func(*corev1.Event) bool) (*corev1.Event, error) {
	l, err := c.cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields})
	if err != nil {
		return nil, fmt.Errorf("list events in %s (%s): %w", namespace, fields, err)
	}
	var last *corev1.Event
	for i := range l.Items {
		e := &l.Items[i]
		if !match(e) {
			continue
		}
		if last == nil || eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	return last, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
