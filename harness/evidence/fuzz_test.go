package evidence_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"zerodrop/harness/evidence"
)

// FuzzVerify feeds Verify a mutated run file and a mutated envelope signed
// by a key it trusts. It must never panic, and it must accept only the run
// file that was signed: any other bytes verifying would be a forgery.
func FuzzVerify(f *testing.F) {
	k, err := evidence.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	path := signedRun(f, dir, k)
	run, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	env, err := os.ReadFile(evidence.SignatureFile(path))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(run, env)
	f.Add(run[:len(run)/2], env)
	f.Add(run, env[:len(env)/2])
	f.Add([]byte{}, []byte("{}"))
	pub := k.Public()
	f.Fuzz(func(t *testing.T, runBytes, envBytes []byte) {
		d := t.TempDir()
		p := filepath.Join(d, "run.jsonl")
		if err := os.WriteFile(p, runBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(evidence.SignatureFile(p), envBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := evidence.Verify(context.Background(), p, pub); err == nil && !bytes.Equal(runBytes, run) {
			t.Fatalf("a run file that is not the signed one verified (%d bytes)", len(runBytes))
		}
	})
}
