package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// attemptPrefix names the sub-directories earlier measurements of a
// scenario are kept in (attempt-1, attempt-2, ...). Being one level below
// the scenario's own directory keeps `zerodrop analyze DIR`, which reads
// DIR/*/run.jsonl, from taking an earlier measurement for a scenario.
const attemptPrefix = "attempt-"

// SetAside moves the evidence of a finished run of sc (every file of its
// directory under outDir) into that directory's next attempt-N, so that
// the scenario can run again in its own place, and returns sc as that
// earlier measurement: its RunFile names the moved run file, which its
// scenario.json then says too. The run file moves unchanged, so its
// SHA-256 still identifies it, and last: whatever fails, the returned
// scenario's RunFile names where the run file is.
func SetAside(outDir string, sc zdv1.Scenario) (zdv1.Scenario, error) {
	if sc.RunFile == "" || filepath.IsAbs(sc.RunFile) {
		return sc, fmt.Errorf("scenario %s: set aside: no run file under the output directory (%q)", sc.Name, sc.RunFile)
	}
	rel := filepath.Dir(sc.RunFile)
	if rel == "." || strings.HasPrefix(rel, "..") {
		return sc, fmt.Errorf("scenario %s: set aside: run file %s is not in a scenario directory", sc.Name, sc.RunFile)
	}
	dir := filepath.Join(outDir, rel)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return sc, fmt.Errorf("scenario %s: set aside: %w", sc.Name, err)
	}
	var sub string
	for n := 1; ; n++ {
		if n > maxAttempts {
			return sc, fmt.Errorf("scenario %s: set aside: %s already holds %d earlier measurements", sc.Name, dir, maxAttempts)
		}
		sub = fmt.Sprintf("%s%d", attemptPrefix, n)
		err := os.Mkdir(filepath.Join(dir, sub), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return sc, fmt.Errorf("scenario %s: set aside: %w", sc.Name, err)
		}
	}
	runFile := filepath.Base(sc.RunFile)
	move := func(name string) error {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, sub, name)); err != nil {
			return fmt.Errorf("scenario %s: set aside: %w", sc.Name, err)
		}
		return nil
	}
	for _, e := range entries {
		if e.Name() == runFile || (e.IsDir() && strings.HasPrefix(e.Name(), attemptPrefix)) {
			continue
		}
		if err := move(e.Name()); err != nil {
			return sc, err
		}
	}
	if err := move(runFile); err != nil {
		return sc, err
	}
	sc.RunFile = filepath.Join(rel, sub, runFile)
	if _, err := os.Stat(filepath.Join(dir, sub, "scenario.json")); err == nil {
		if err := writeJSON(filepath.Join(dir, sub, "scenario.json"), sc); err != nil {
			return sc, fmt.Errorf("scenario %s: set aside: %w", sc.Name, err)
		}
	}
	return sc, nil
}

// maxAttempts bounds the attempt-N directories of one scenario: far above
// any ZERODROP_REMEASURE, so reaching it means something else is wrong.
const maxAttempts = 100

// ClearEarlier removes the attempt-N directories of the scenario named
// name under outDir: the earlier measurements of a run before this one,
// which must not pass for this run's (the run file itself is replaced by
// Begin).
func ClearEarlier(outDir, name string) error {
	dir := filepath.Join(outDir, DirName(name))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scenario %s: clear earlier measurements: %w", name, err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), attemptPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("scenario %s: clear earlier measurements: %w", name, err)
			}
		}
	}
	return nil
}

// EarlierRunFiles are the run files SetAside kept in a scenario's directory,
// oldest first (attempt-1, attempt-2, ..., by number).
func EarlierRunFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		n    int
		path string
	}
	var found []numbered
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), attemptPrefix)
		n, err := strconv.Atoi(rest)
		if !ok || !e.IsDir() || err != nil || n < 1 {
			continue
		}
		path := filepath.Join(dir, e.Name(), "run.jsonl")
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			found = append(found, numbered{n, path})
		}
	}
	slices.SortFunc(found, func(a, b numbered) int { return a.n - b.n })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.path
	}
	return out, nil
}
