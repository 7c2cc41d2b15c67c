package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignedEvidence follows a signed run from load to report: verified
// with the machine key, refused with another key, refused once a line of
// the run file is rewritten (report.json rebuilt from it, as a forger
// would), and unsigned with --sign-key none.
func TestSignedEvidence(t *testing.T) {
	target := startEcho(t)
	dir, code, so, se := measuredLoad(t, filepath.Join(t.TempDir(), "run"), "--target", target, "--rate", "50", "--duration", "1s")
	if code != exitOK {
		t.Fatalf("load: exit %d\n%s%s", code, so, se)
	} else if !strings.Contains(se, "signing run files with this machine's key") {
		t.Errorf("load does not say which key signs: %s", se)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.dsse.json")); err != nil {
		t.Fatalf("no signature next to the run file: %v", err)
	}
	machinePub := filepath.Join(testKeyDir, "signing-key.pem.pub")
	other := filepath.Join(t.TempDir(), "other.pem")
	if code, so, se := runCLI(t, "keygen", "--out", other); code != exitOK || !strings.Contains(so, "--verify-key "+other+".pub") {
		t.Fatalf("keygen: exit %d\n%s%s", code, so, se)
	}
	if code, _, se := runCLI(t, "keygen", "--out", other); code != exitBroken || !strings.Contains(se, "exists") {
		t.Errorf("keygen over an existing key: exit %d, %s", code, se)
	}

	out := t.TempDir()
	code, so, se = runCLI(t, "report", "--out", out, "--verify-key", machinePub, dir)
	if code != exitOK || !strings.Contains(so, "1 run file(s) signed by a trusted key") {
		t.Fatalf("report with the signing key: exit %d\n%s%s", code, so, se)
	}
	if md, _ := os.ReadFile(filepath.Join(out, "summary.md")); !bytes.Contains(md, []byte("1 run file(s) carry a signature verified with a trusted key")) {
		t.Errorf("summary.md does not say the signature was verified")
	}
	code, so, se = runCLI(t, "report", "--out", t.TempDir(), "--verify-key", other+".pub", dir)
	if code != exitBroken || !strings.Contains(se, "no signature by a trusted key holds") {
		t.Errorf("report with another key: exit %d, want %d\n%s%s", code, exitBroken, so, se)
	}

	// A forger rewrites a result and rebuilds report.json from the run file.
	run := filepath.Join(dir, "run.jsonl")
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, bytes.Replace(b, []byte(`"latency_ns":`), []byte(`"latency_ns":1`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	if code, so, se := runCLI(t, "analyze", dir); code == exitOK {
		t.Errorf("analyze passed a run file whose lines no longer chain to its end line\n%s%s", so, se)
	}
	code, so, se = runCLI(t, "report", "--out", t.TempDir(), "--verify-key", machinePub, dir)
	if code != exitBroken || !strings.Contains(se, "does not match its signature") {
		t.Errorf("report of a rewritten run file: exit %d, want %d\n%s%s", code, exitBroken, so, se)
	}

	unsigned, code, so, se := measuredLoad(t, filepath.Join(t.TempDir(), "unsigned"), "--target", target, "--rate", "50", "--duration", "1s", "--sign-key", "none")
	if code != exitOK {
		t.Fatalf("load --sign-key none: exit %d\n%s%s", code, so, se)
	}
	if _, err := os.Stat(filepath.Join(unsigned, "run.dsse.json")); !os.IsNotExist(err) {
		t.Errorf("--sign-key none wrote a signature (%v)", err)
	}
	if code, _, se := runCLI(t, "report", "--out", t.TempDir(), "--verify-key", machinePub, unsigned); code != exitBroken || !strings.Contains(se, "no signature") {
		t.Errorf("report --verify-key of an unsigned run: exit %d\n%s", code, se)
	}
	if code, _, se := runCLI(t, "load", "--target", target, "--rate", "50", "--duration", "1s", "--out", t.TempDir()+"/x", "--sign-key", "/nonexistent.pem"); code != exitBroken || !strings.Contains(se, "--sign-key") {
		t.Errorf("load with a missing key: exit %d, %s", code, se)
	}
}
