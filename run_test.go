package zerodrop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRefusesBadInput(t *testing.T) {
	cases := []struct {
		name string
		opts func(dir string) RunOptions
		want string
	}{
		{"no OutDir", func(string) RunOptions { return RunOptions{Kubeconfig: "k"} }, "OutDir is required"},
		{"no kubeconfig", func(dir string) RunOptions { return RunOptions{OutDir: dir} }, "Kubeconfig is required"},
		{"unknown provider", func(dir string) RunOptions { return RunOptions{OutDir: dir, Kubeconfig: "k", Provider: "gke"} }, "gke"},
		{"unknown LB", func(dir string) RunOptions { return RunOptions{OutDir: dir, Kubeconfig: "k", LB: "f5"} }, "f5"},
		{"a filter that selects nothing", func(dir string) RunOptions {
			return RunOptions{OutDir: dir, Kubeconfig: "k", Filter: "scenario:no-such"}
		}, "selects no cell"},
		{"a filter that does not parse", func(dir string) RunOptions { return RunOptions{OutDir: dir, Kubeconfig: "k", Filter: "a &&"} }, "label filter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, err := Run(context.Background(), c.opts(dir))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			// Refused before any cluster step: nothing made, not even
			// the output directory.
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s exists after bad input", dir)
			}
		})
	}
}
