package evidence_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"zerodrop.dev/zerodrop/harness/evidence"
)

// FuzzVerify feeds the verifier a mutated run file and a mutated envelope
// signed by a key it trusts. It must never panic, and it must accept only
// the run file that was signed: any other bytes verifying would be a
// forgery. In memory (what Verify does once it has read both files): a
// fuzzer that writes two files per input spends its time in the file
// system.
func FuzzVerify(f *testing.F) {
	k, err := evidence.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	path := signedRun(f, f.TempDir(), k)
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
	if _, err := evidence.VerifyBytes(context.Background(), bytes.NewReader(run), env, pub); err != nil {
		f.Fatalf("the genuine run file does not verify in memory: %v", err)
	}
	f.Fuzz(func(t *testing.T, runBytes, envBytes []byte) {
		_, err := evidence.VerifyBytes(context.Background(), bytes.NewReader(runBytes), envBytes, pub)
		if err == nil && !bytes.Equal(runBytes, run) {
			t.Fatalf("a run file that is not the signed one verified (%d bytes)", len(runBytes))
		}
	})
}
