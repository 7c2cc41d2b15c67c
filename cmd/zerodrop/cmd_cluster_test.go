package main

import (
	"strings"
	"testing"
)

func TestClusterBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"cluster"}, "missing subcommand"},
		{"unknown subcommand", []string{"cluster", "sideways"}, "unknown subcommand"},
		{"unknown provider", []string{"cluster", "up", "--provider", "gke", "--state-dir", dir}, `unknown cluster provider "gke"`},
		{"add-pool arity", []string{"cluster", "add-pool", "pool-c"}, "takes 2 argument"},
		{"existing without kubeconfig", []string{"cluster", "add-pool", "pool-c", "1", "--provider", "existing", "--kubeconfig", "/nonexistent"}, "kubeconfig"},
		{"bad flag", []string{"cluster", "up", "--bogus"}, "bogus"},
		{"missing MetalLB manifest", []string{"cluster", "up", "--state-dir", dir, "--metallb-manifest", dir + "/nope.yaml"}, "--metallb-manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			if code != exitBroken {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitBroken, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr %q lacks %q", errOut, tt.want)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	m, err := parseLabels("a=b,c=")
	if err != nil || m["a"] != "b" || m["c"] != "" || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := parseLabels("novalue"); err == nil {
		t.Fatal("accepted")
	}
}
