package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// CreateCustom posts the object to its resource's path through the
// clientset's own connection, and refuses what it cannot place.
func TestCreateCustom(t *testing.T) {
	var gotPath, gotType string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotType = r.Method+" "+r.URL.Path, r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &gotBody)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"healthCheck": map[string]any{"port": int64(31000)}}}}
	obj.SetAPIVersion("cloud.google.com/v1")
	obj.SetKind("BackendConfig")
	obj.SetNamespace("ns")
	obj.SetName("web")
	if err := New(cs).CreateCustom(context.Background(), "backendconfigs", obj); err != nil {
		t.Fatal(err)
	}
	if want := "POST /apis/cloud.google.com/v1/namespaces/ns/backendconfigs"; gotPath != want || gotType != "application/json" {
		t.Errorf("request %q (%s), want %q (application/json)", gotPath, gotType, want)
	}
	if gotBody["kind"] != "BackendConfig" || gotBody["metadata"].(map[string]any)["name"] != "web" {
		t.Errorf("body %v", gotBody)
	}

	core := obj.DeepCopy()
	core.SetAPIVersion("v1")
	noNS := obj.DeepCopy()
	noNS.SetNamespace("")
	for name, tc := range map[string]struct {
		cs  Interface
		obj *unstructured.Unstructured
	}{
		"a core kind":      {cs, core},
		"no namespace":     {cs, noNS},
		"a fake clientset": {fake.NewClientset(), obj},
	} {
		if err := New(tc.cs).CreateCustom(context.Background(), "backendconfigs", tc.obj); err == nil || !strings.Contains(err.Error(), "backendconfig/") {
			t.Errorf("%s: err %v, want a refusal naming the object", name, err)
		}
	}
}
