//go:build e2e

package cluster

// The real-cluster test: needs Docker, the node image (make node-image) and
// the echo server image (make image). Run with
//
//	go test -tags e2e -run TestKindE2E -v -timeout 30m ./harness/cluster/
//
// ZERODROP_E2E_KEEP=1 leaves the cluster running afterwards;
// ZERODROP_E2E_CLUSTER names the cluster (default zde2e; an existing cluster
// of that name, e.g. "zerodrop" from make cluster, is reused).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
)

const echoImage = "zerodrop/echo-server:dev"

func TestKindE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	image := os.Getenv("KIND_NODE_IMAGE")
	if image == "" {
		image = DefaultNodeImage
	}
	var events []zdv1.Event
	sink := zdv1.EventFunc(func(e zdv1.Event) error { events = append(events, e); return nil })
	cacheDir := os.Getenv("ZERODROP_CACHE")
	if cacheDir == "" {
		cacheDir = "/var/cache/zerodrop"
	}
	name := os.Getenv("ZERODROP_E2E_CLUSTER")
	if name == "" {
		name = "zde2e"
	}
	p := NewKind(WithName(name), WithNodeImage(image), WithStateDir(filepath.Join(cacheDir, "state")),
		WithKubeconfig(filepath.Join(t.TempDir(), "kubeconfig")), WithEventSink(sink),
		WithProgress(func(m string) { t.Log(m) }))
	start := time.Now()
	if err := p.Create(ctx); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Logf("cluster up in %s", time.Since(start).Round(time.Second))
	if os.Getenv("ZERODROP_E2E_KEEP") == "" {
		t.Cleanup(func() {
			dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer dcancel()
			if err := p.Delete(dctx); err != nil {
				t.Errorf("delete: %v", err)
			}
		})
	}
	cs, err := p.clientset()
	if err != nil {
		t.Fatal(err)
	}

	nodes, err := p.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]int{}
	for _, n := range nodes {
		if !n.Ready {
			t.Errorf("node %s not Ready", n.Name)
		}
		pools[n.Pool]++
	}
	if len(nodes) != 4 || pools["pool-a"] != 2 || pools["pool-b"] != 1 {
		t.Fatalf("nodes %+v, want 1 control plane + pool-a:2 + pool-b:1", nodes)
	}
	for _, sel := range []struct{ ns, label string }{{"kube-system", "k8s-app=kube-dns"}, {"metallb-system", "app=metallb"}} {
		pods, err := cs.CoreV1().Pods(sel.ns).List(ctx, metav1.ListOptions{LabelSelector: sel.label})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("pods %s in %s: %v (%d)", sel.label, sel.ns, err, len(pods.Items))
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s/%s is %s", pod.Namespace, pod.Name, pod.Status.Phase)
			}
		}
	}

	if _, err := docker(ctx, nil, "image", "inspect", "-f", "{{.Id}}", echoImage); err != nil {
		t.Fatalf("echo server image missing (make image): %v", err)
	}
	if err := p.LoadImages(ctx, echoImage); err != nil {
		t.Fatal(err)
	}
	nw, err := inspectNetwork(ctx, kindNetwork)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := networkGateway(ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("LoadBalancer with externalTrafficPolicy Local", func(t *testing.T) {
		ip, hcnp, podNode := deployEcho(ctx, t, cs)
		if !nw.IPv4.Contains(netip.MustParseAddr(ip)) {
			t.Fatalf("external IP %s is outside the kind network %s", ip, nw.IPv4)
		}
		var resp map[string]any
		if err := retry(ctx, "echo server at "+ip, 2*time.Minute, time.Second, func(ctx context.Context) error {
			var err error
			resp, err = getJSON(ctx, "http://"+ip+"/")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("echo answered from %s: %v", ip, resp)
		if resp["client_ip"] != gw {
			t.Errorf("client_ip = %v, want the host's address on the kind network %s", resp["client_ip"], gw)
		}
		if resp["node"] != podNode {
			t.Errorf("node = %v, want %s", resp["node"], podNode)
		}
		nodes, _ := p.Nodes(ctx)
		for _, n := range nodes {
			want := http.StatusServiceUnavailable
			if n.Name == podNode {
				want = http.StatusOK
			}
			url := fmt.Sprintf("http://%s:%d/healthz", n.InternalIP, hcnp)
			if err := retry(ctx, url+" to answer "+fmt.Sprint(want), time.Minute, time.Second, func(ctx context.Context) error {
				code, err := getStatus(ctx, url)
				if err != nil {
					return err
				}
				if code != want {
					return fmt.Errorf("status %d", code)
				}
				return nil
			}); err != nil {
				t.Errorf("node %s: %v", n.Name, err)
			} else {
				t.Logf("healthCheckNodePort on %s (%s): %d", n.Name, n.InternalIP, want)
			}
		}
	})

	t.Run("AddNodePool then RemoveNodePool", func(t *testing.T) {
		if err := p.AddNodePool(ctx, "pool-c", 1, map[string]string{"zerodrop.dev/test": "yes"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.AddNodePool(ctx, "pool-c", 1, nil, nil); err == nil {
			t.Error("adding an existing pool again succeeded")
		}
		// The side-loaded echo image must be on the new node too.
		imgs, err := nodeExec(ctx, name+"-pool-c-1", nil, "ctr", "--namespace=k8s.io", "images", "list", "-q")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(imgs, echoImage) {
			t.Errorf("%s missing on the new pool-c node: %s", echoImage, imgs)
		}
		if err := p.RemoveNodePool(ctx, "pool-a"); err != nil {
			t.Fatal(err)
		}
		nodes, err := p.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pools := map[string]int{}
		for _, n := range nodes {
			if !n.Ready {
				t.Errorf("node %s not Ready", n.Name)
			}
			pools[n.Pool]++
		}
		if pools["pool-a"] != 0 || pools["pool-b"] != 1 || pools["pool-c"] != 1 {
			t.Fatalf("pools after re-pooling = %v", pools)
		}
		out, err := docker(ctx, nil, "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+name, "--format", "{{.Names}}")
		if err != nil {
			t.Fatal(err)
		}
		if got := len(strings.Fields(out)); got != 3 {
			t.Errorf("%d node containers after re-pooling, want 3: %s", got, out)
		}
		want := map[string]bool{zdv1.EventPoolAdded: false, zdv1.EventCordon: false, zdv1.EventDrainStart: false, zdv1.EventDrainEnd: false, zdv1.EventNodeRemoved: false, zdv1.EventPoolRemoved: false}
		for _, e := range events {
			if _, ok := want[e.Type]; ok {
				want[e.Type] = true
			}
		}
		for typ, seen := range want {
			if !seen {
				t.Errorf("no %s event", typ)
			}
		}
		// The echo Deployment must serve again from the pools that remain.
		svc, err := cs.CoreV1().Services("zerodrop-e2e").Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := svc.Status.LoadBalancer.Ingress[0].IP
		if err := retry(ctx, "echo server after re-pooling", 3*time.Minute, time.Second, func(ctx context.Context) error {
			resp, err := getJSON(ctx, "http://"+ip+"/")
			if err != nil {
				return err
			}
			if n, _ := resp["node"].(string); nodePool(nodes, n) == "" || nodePool(nodes, n) == "pool-a" {
				return fmt.Errorf("answered from node %q, not one of the remaining pools' nodes", n)
			}
			t.Logf("echo answers after re-pooling from node %v", resp["node"])
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func networkGateway(ctx context.Context) (string, error) {
	out, err := docker(ctx, nil, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", kindNetwork)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(out) {
		if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
			return f, nil
		}
	}
	return "", fmt.Errorf("kind network has no IPv4 gateway: %q", out)
}

// deployEcho runs one echo server pod and a LoadBalancer Service with
// externalTrafficPolicy Local; it returns the external IP, the
// healthCheckNodePort and the pod's node.
func deployEcho(ctx context.Context, t *testing.T, cs kubernetes.Interface) (string, int32, string) {
	t.Helper()
	ns := "zerodrop-e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "echo"}
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Prefer pool-a so that removing pool-a later moves the pod.
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
						Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: contract.PoolLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"pool-a"}}}},
					}}}},
					Containers: []corev1.Container{{
						Name: "echo", Image: echoImage, ImagePullPolicy: corev1.PullNever,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
						Env: []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("POD_NAMESPACE", "metadata.namespace"),
							env("NODE_NAME", "spec.nodeName"), env("POD_IP", "status.podIP")},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
					}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.New(cs).WaitRollout(ctx, ns, "echo", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	var ip string
	var hcnp int32
	if err := retry(ctx, "LoadBalancer IP for "+ns+"/echo", 2*time.Minute, time.Second, func(ctx context.Context) error {
		s, err := cs.CoreV1().Services(ns).Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no ingress IP yet")
		}
		ip, hcnp = s.Status.LoadBalancer.Ingress[0].IP, s.Spec.HealthCheckNodePort
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("echo pods: %v (%d)", err, len(pods.Items))
	}
	t.Logf("echo: external IP %s, healthCheckNodePort %d, pod on %s", ip, hcnp, pods.Items[0].Spec.NodeName)
	return ip, hcnp, pods.Items[0].Spec.NodeName
}

var httpClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext, DisableKeepAlives: true}}

func getStatus(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func getJSON(ctx context.Context, url string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w", url, err)
	}
	return m, nil
}

func nodePool(nodes []Node, name string) string {
	for _, n := range nodes {
		if n.Name == name {
			return n.Pool
		}
	}
	return ""
}
