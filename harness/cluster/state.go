package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hostSysctls are host-wide settings kubelet changes (they are not
// namespaced, so a node container's kubelet writes the host's): recorded
// before the first node starts, restored when the cluster is deleted.
var hostSysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops"}

// hostState is what a kind cluster changed on the host, kept in a file so a
// later process (make cluster-down) can undo it.
type hostState struct {
	Cluster        string            `json:"cluster"`
	Network        string            `json:"network"`
	NetworkCreated bool              `json:"network_created"`
	Sysctls        map[string]string `json:"sysctls"`
	Kubeconfig     string            `json:"kubeconfig,omitempty"`
	// Images side-loaded with LoadImages, loaded into nodes added later.
	Images []string `json:"images,omitempty"`
}

func statePath(dir, cluster string) string { return filepath.Join(dir, "kind-"+cluster+".json") }

func loadState(dir, cluster string) (*hostState, error) {
	b, err := os.ReadFile(statePath(dir, cluster))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read host state: %w", err)
	}
	var s hostState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse host state %s: %w (remove it if the cluster is gone)", statePath(dir, cluster), err)
	}
	return &s, nil
}

func saveState(dir string, s *hostState) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	p := statePath(dir, s.Cluster)
	if err := os.WriteFile(p+".tmp", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write host state: %w", err)
	}
	return os.Rename(p+".tmp", p)
}

func removeState(dir, cluster string) error {
	err := os.Remove(statePath(dir, cluster))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// sysctlFS reads and writes sysctls under a /proc/sys root (a temp dir in
// tests).
type sysctlFS struct{ root string }

func (s sysctlFS) path(name string) string {
	return filepath.Join(s.root, strings.ReplaceAll(name, ".", "/"))
}

func (s sysctlFS) read(names []string) (map[string]string, error) {
	m := make(map[string]string, len(names))
	for _, n := range names {
		b, err := os.ReadFile(s.path(n))
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", n, err)
		}
		m[n] = strings.TrimSpace(string(b))
	}
	return m, nil
}

// restore writes back every recorded value that differs from the current
// one and reports what it changed.
func (s sysctlFS) restore(want map[string]string) (changed []string, err error) {
	var errs []error
	for _, n := range hostSysctls {
		v, ok := want[n]
		if !ok {
			continue
		}
		cur, rerr := os.ReadFile(s.path(n))
		if rerr == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if werr := os.WriteFile(s.path(n), []byte(v+"\n"), 0o644); werr != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", n, v, werr))
			continue
		}
		changed = append(changed, fmt.Sprintf("%s=%s (was %s)", n, v, strings.TrimSpace(string(cur))))
	}
	return changed, errors.Join(errs...)
}

// otherStates lists the recorded host states of other clusters in dir.
func otherStates(dir, cluster string) ([]*hostState, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "kind-*.json"))
	if err != nil {
		return nil, err
	}
	var out []*hostState
	for _, m := range matches {
		if m == statePath(dir, cluster) {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "kind-"), ".json")
		s, err := loadState(dir, name)
		if err != nil {
			return nil, err
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// handOverNetwork makes the first other recorded cluster on network the one
// that removes it when it goes, and returns its name ("" when no other
// recorded cluster uses that network).
func handOverNetwork(dir string, others []*hostState, network string) (string, error) {
	for _, o := range others {
		if o.Network != network {
			continue
		}
		if !o.NetworkCreated {
			o.NetworkCreated = true
			if err := saveState(dir, o); err != nil {
				return "", fmt.Errorf("hand docker network %s over to cluster %s: %w", network, o.Cluster, err)
			}
		}
		return o.Cluster, nil
	}
	return "", nil
}
