package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestSetAside(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "rolling-update-metallb")
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "rolling-update/metallb"}, RunFile: "rolling-update-metallb/run.jsonl"}
	for attempt, run := range []string{"first\n", "second\n"} {
		write("run.jsonl", run)
		write("scenario.json", "{}")
		got, err := SetAside(out, sc)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join("rolling-update-metallb", []string{"attempt-1", "attempt-2"}[attempt], "run.jsonl")
		if got.RunFile != want {
			t.Fatalf("attempt %d: RunFile = %s, want %s", attempt+1, got.RunFile, want)
		}
		if b, err := os.ReadFile(filepath.Join(out, want)); err != nil || string(b) != run {
			t.Fatalf("attempt %d: moved run file = %q, %v; want %q", attempt+1, b, err, run)
		}
		var onDisk zdv1.Scenario
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Join(out, want)), "scenario.json"))
		if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.RunFile != want {
			t.Fatalf("attempt %d: scenario.json names %q (%v), want %s", attempt+1, onDisk.RunFile, err, want)
		}
		// The scenario's own place is free for the next measurement, and
		// `zerodrop analyze` (DIR/*/run.jsonl) finds no earlier one.
		if _, err := os.Stat(filepath.Join(dir, "run.jsonl")); !os.IsNotExist(err) {
			t.Fatalf("attempt %d: run.jsonl still in place (%v)", attempt+1, err)
		}
		if m, _ := filepath.Glob(filepath.Join(out, "*", "*.jsonl")); len(m) != 0 {
			t.Fatalf("attempt %d: DIR/*/*.jsonl finds %v", attempt+1, m)
		}
	}
	// Oldest first, by number: attempt-10 after attempt-2.
	for _, n := range []string{"attempt-10", "attempt-x", "attempt-3"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "run.jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := EarlierRunFiles(dir)
	var rel []string
	for _, p := range got {
		r, _ := filepath.Rel(dir, p)
		rel = append(rel, r)
	}
	if want := []string{"attempt-1/run.jsonl", "attempt-2/run.jsonl", "attempt-3/run.jsonl", "attempt-10/run.jsonl"}; err != nil || !slices.Equal(rel, want) {
		t.Errorf("EarlierRunFiles = %q, %v; want %q", rel, err, want)
	}
	for _, bad := range []string{"", "run.jsonl", "/abs/run.jsonl", "../x/run.jsonl", "missing/run.jsonl"} {
		if _, err := SetAside(out, zdv1.Scenario{RunFile: bad}); err == nil {
			t.Errorf("SetAside(RunFile %q) = nil error", bad)
		}
	}
}

func TestClearEarlier(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, DirName("drain-node/metallb"))
	for _, p := range []string{"attempt-1/run.jsonl", "attempt-7/run.jsonl", "run.jsonl", "notes/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ClearEarlier(out, "drain-node/metallb"); err != nil {
		t.Fatal(err)
	}
	if got, err := EarlierRunFiles(dir); err != nil || len(got) != 0 {
		t.Errorf("after ClearEarlier: %v, %v", got, err)
	}
	// The scenario's own files stay (Begin replaces its run file).
	for _, p := range []string{"run.jsonl", "notes/x"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := ClearEarlier(out, "never-ran"); err != nil {
		t.Errorf("a scenario without a directory: %v", err)
	}
}
