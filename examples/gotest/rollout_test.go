//go:build e2e

// Package gotest is zerodrop from plain `go test`: deploy a workload, roll
// it under load, and fail the test if one request was dropped. Copy it into
// your module, put your own manifests in web.yaml's place, and run
//
//	ZERODROP_KUBECONFIG=out/kubeconfig go test -tags e2e ./examples/gotest/
//
// against a cluster whose Services of type LoadBalancer get an address
// this machine reaches (`make cluster` makes one with MetalLB on kind).
package gotest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"zerodrop.dev/zerodrop"
)

func TestRolloutDropsNothing(t *testing.T) {
	kubeconfig := os.Getenv("ZERODROP_KUBECONFIG")
	if kubeconfig == "" {
		t.Fatal("ZERODROP_KUBECONFIG names no kubeconfig: this example measures a real cluster (make cluster writes out/kubeconfig)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	const ns = "zd-example-gotest"
	deploy(ctx, t, client, ns, "../web.yaml")

	out := os.Getenv("ZERODROP_EXAMPLES_OUT")
	if out == "" {
		out = t.TempDir()
	}
	res, err := zerodrop.UnderLoad(ctx, client,
		zerodrop.Service{Namespace: ns, Name: "web"},
		zerodrop.RolloutRestart(client, ns, "web", 3*time.Minute),
		zerodrop.Options{Name: "gotest-rollout", OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.Passed() {
		t.Errorf("the rollout dropped requests:\n%s", res)
	}
}

// deploy creates namespace ns with the objects of the YAML file at path in
// it, and removes the namespace when the test ends.
func deploy(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, path string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNamespace(t, client, ns) })
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			_, err = client.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = client.CoreV1().Services(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("a %T: this example creates Deployments and Services", obj)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// removeNamespace deletes ns and waits (at most two minutes) until it is
// gone, so the next run can make it again.
func removeNamespace(t *testing.T, client kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Errorf("remove namespace %s: %v", ns, err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s still there after two minutes: %v", ns, err)
	}
}
