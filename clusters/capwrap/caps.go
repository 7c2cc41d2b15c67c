package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// capNames maps Linux capability numbers to the names OCI specs use.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// capSet is a bitmask of capability numbers, as in /proc/PID/status.
type capSet uint64

// allowed reports whether the named capability may stay in a spec. Names this
// table does not know are kept: runc decides about them, and dropping
// something we do not understand would change behaviour silently.
func (s capSet) allowed(name string) bool {
	n := strings.ToUpper(name)
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	for i, c := range capNames {
		if c == n {
			return s&(1<<uint(i)) != 0
		}
	}
	return true
}

func parseCapBnd(status []byte) (capSet, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("parse CapBnd %q: %w", strings.TrimSpace(v), err)
			}
			return capSet(n), nil
		}
	}
	return 0, fmt.Errorf("no CapBnd line in status")
}

func ownBoundingSet() (capSet, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return parseCapBnd(b)
}

var capLists = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

// filterCaps edits an OCI process object (the "process" member of a
// config.json, or the whole --process file) in place and reports what it
// removed.
func filterCaps(process map[string]any, bound capSet) (removed []string) {
	caps, ok := process["capabilities"].(map[string]any)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	for _, list := range capLists {
		arr, ok := caps[list].([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(arr))
		for _, v := range arr {
			name, isStr := v.(string)
			if isStr && !bound.allowed(name) {
				if !seen[name] {
					seen[name] = true
					removed = append(removed, name)
				}
				continue
			}
			kept = append(kept, v)
		}
		caps[list] = kept
	}
	return removed
}

// filterDoc filters a JSON document: a full bundle config (isProcess false)
// or a bare process spec (isProcess true). It returns the new document, or
// nil when nothing had to change, so an untouched file is never rewritten.
func filterDoc(doc []byte, isProcess bool, bound capSet) ([]byte, error) {
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // keep uids, rlimits and the like exactly as written
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	process := root
	if !isProcess {
		p, ok := root["process"].(map[string]any)
		if !ok {
			return nil, nil
		}
		process = p
	}
	if removed := filterCaps(process, bound); len(removed) == 0 {
		return nil, nil
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return out, nil
}

func filterFile(path string, isProcess bool, bound capSet) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := filterDoc(doc, isProcess, bound)
	if err != nil || out == nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".capwrap")
	if err := os.WriteFile(tmp, out, st.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// invocation is what capwrap needs to know about a runc command line.
type invocation struct {
	Command string // create, run, exec, ... ("" when none)
	Bundle  string // --bundle/-b value, or "" (runc then uses the cwd)
	Process string // exec --process/-p value
}

// runc global flags that take a value; needed to find the subcommand.
var globalValueFlags = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

func parseArgs(args []string) invocation {
	var inv invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			inv.Command = a
			i++
			break
		}
		if globalValueFlags[a] {
			i++ // skip its value
		}
	}
	if inv.Command == "" {
		return inv
	}
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--bundle", "-bundle", "-b":
			if !hasVal && j+1 < len(rest) {
				j++
				val = rest[j]
			}
			inv.Bundle = val
		case "--process", "-process", "-p":
			if !hasVal && j+1 < len(rest) {
				j++
				val = rest[j]
			}
			inv.Process = val
		}
	}
	return inv
}

// specFile is the file holding the capabilities this invocation will apply,
// or "" when the command carries none.
func (inv invocation) specFile() string {
	switch inv.Command {
	case "create", "run":
		dir := inv.Bundle
		if dir == "" {
			dir = "."
		}
		return filepath.Join(dir, "config.json")
	case "exec":
		return inv.Process // exec without --process passes caps as flags; docker never does that
	}
	return ""
}

// registerRuntime adds runtimes[name] = {path} to a daemon.json and makes it
// the default runtime, keeping every other setting. It reports whether the
// file changed.
func registerRuntime(file, name, path string) (bool, error) {
	cfg := map[string]any{}
	if b, err := os.ReadFile(file); err == nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return false, fmt.Errorf("parse %s: %w (fix or move the file, then rerun)", file, err)
		}
	} else if err != nil && !os.IsNotExist(err) {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	runtimes, _ := cfg["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	cur, _ := runtimes[name].(map[string]any)
	if cur != nil && cur["path"] == path && cfg["default-runtime"] == name {
		return false, nil
	}
	runtimes[name] = map[string]any{"path": path}
	cfg["runtimes"] = runtimes
	cfg["default-runtime"] = name
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return false, err
	}
	if err := os.WriteFile(file, append(out, '\n'), 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", file, err)
	}
	return true, nil
}
