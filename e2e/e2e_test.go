package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"zerodrop.dev/zerodrop"
)

// kubeconfigTo writes a kubeconfig whose cluster is at server.
func kubeconfigTo(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUseCluster(t *testing.T) {
	cases := []struct {
		name, kubeconfig, want string
	}{
		{"no path", "", "needs the path of a kubeconfig"},
		{"no file", filepath.Join(t.TempDir(), "missing"), "make cluster writes one"},
		// Port 1 on loopback: nothing listens there, so the connection
		// is refused at once.
		{"a cluster that does not answer", kubeconfigTo(t, "http://127.0.0.1:1"), "does not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := UseCluster(c.kubeconfig)(context.Background(), envconf.New())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestResultFrom(t *testing.T) {
	web := zerodrop.Service{Namespace: "shop", Name: "web"}
	ctx := context.WithValue(context.Background(), resultKey{"shop", "web"}, zerodrop.Result{RunFile: "run.jsonl"})
	if res, ok := ResultFrom(ctx, web); !ok || res.RunFile != "run.jsonl" {
		t.Errorf("ResultFrom = %+v, %v", res, ok)
	}
	if _, ok := ResultFrom(ctx, zerodrop.Service{Namespace: "shop", Name: "api"}); ok {
		t.Error("a result for a Service no step measured")
	}
}

// A cluster this environment did not make is never removed: without the
// mark KindCluster leaves when it creates one, DeleteKindCluster does
// nothing (and touches no Docker).
func TestDeleteKindClusterLeavesOthers(t *testing.T) {
	k := Kind{Name: "someone-elses", Kubeconfig: "/nonexistent"}
	if _, err := DeleteKindCluster(k)(context.Background(), envconf.New()); err != nil {
		t.Fatalf("err = %v", err)
	}
	if _, err := KindCluster(Kind{})(context.Background(), envconf.New()); err == nil || !strings.Contains(err.Error(), "needs the path") {
		t.Fatalf("no kubeconfig: err = %v", err)
	}
}
