package evidence_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// signedRun writes a small clean run file signed with k and returns its
// path.
func signedRun(t testing.TB, dir string, k *evidence.Key) string {
	t.Helper()
	path := filepath.Join(dir, "run.jsonl")
	opts := []runfile.WriterOption{runfile.WithFlushInterval(0)}
	if k != nil {
		opts = append(opts, runfile.WithSealer(k))
	}
	w, err := runfile.Create(path, zdv1.Header{
		Scenario: zdv1.ScenarioSpec{Name: "signed", Role: zdv1.RoleAssertion, Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}},
		Load:     &zdv1.LoadSettings{Targets: []string{"http://127.0.0.1:1/"}, Rate: 10},
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	for i := range 20 {
		if err := w.Result(zdv1.Result{Seq: uint64(i), ID: "r" + string(rune('a'+i)), Time: t0.Add(time.Duration(i) * 100 * time.Millisecond),
			Latency: time.Millisecond, Status: 200, Pod: "echo-0"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Event(zdv1.Event{Source: zdv1.SourceHarness, Type: zdv1.EventAction, Message: "nothing disrupted"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustKey(t testing.TB) *evidence.Key {
	t.Helper()
	k, err := evidence.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSignAndVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k, other := mustKey(t), mustKey(t)
	path := signedRun(t, dir, k)

	v, err := evidence.Verify(ctx, path, k.Public())
	if err != nil {
		t.Fatalf("verify with the signing key: %v", err)
	}
	if v.KeyID != k.KeyID() || v.Envelope != filepath.Join(dir, "run.dsse.json") {
		t.Errorf("verified %+v, want key %s and run.dsse.json", v, k.KeyID())
	}
	if _, err := evidence.Verify(ctx, path, other.Public(), k.Public()); err != nil {
		t.Errorf("verify with the signing key among others: %v", err)
	}
	if _, err := evidence.Verify(ctx, path, other.Public()); err == nil || !strings.Contains(err.Error(), "no signature by a trusted key") {
		t.Errorf("verify with another key: %v, want refused", err)
	}
	meta, err := runfile.ReadMeta(path)
	if err != nil || meta.SigningKey != k.KeyID() {
		t.Errorf("header names key %q (%v), want %s", meta.SigningKey, err, k.KeyID())
	}
	// The verdict of a signed, untouched file is unaffected.
	sc, err := verdict.AnalyzeFile(ctx, path)
	if err != nil || sc.Verdict.Status != zdv1.Pass || sc.SigningKey != k.KeyID() {
		t.Errorf("analysis: %s, key %q, %v; want PASS naming the key", sc.Verdict.Status, sc.SigningKey, err)
	}
}

// TestForgeriesRefused edits a signed run file the ways a forger would and
// expects each refused, by the verdict's own chain check where it can see
// it and by the signature in every case.
func TestForgeriesRefused(t *testing.T) {
	ctx := context.Background()
	k := mustKey(t)
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, path string)
		// chainBroken: the verdict alone (no key) sees it.
		chainBroken bool
	}{
		{"a result line's status rewritten", func(t *testing.T, path string) {
			rewrite(t, path, func(b []byte) []byte { return bytes.Replace(b, []byte(`"status":200`), []byte(`"status":201`), 1) })
		}, true},
		{"a result line removed, end line's count lowered to match", func(t *testing.T, path string) {
			rewrite(t, path, func(b []byte) []byte {
				lines := bytes.Split(b, []byte("\n"))
				lines = append(lines[:3], lines[4:]...)
				out := bytes.Join(lines, []byte("\n"))
				return bytes.Replace(out, []byte(`"results":20`), []byte(`"results":19`), 1)
			})
		}, true},
		{"rewritten consistently: chain recomputed into the end line", func(t *testing.T, path string) {
			rewrite(t, path, func(b []byte) []byte {
				b = bytes.Replace(b, []byte(`"status":200`), []byte(`"status":201`), 1)
				return rechain(t, b)
			})
		}, false},
		{"the envelope's payload replaced", func(t *testing.T, path string) {
			envPath := evidence.SignatureFile(path)
			rewrite(t, envPath, func(b []byte) []byte {
				var env map[string]any
				if err := json.Unmarshal(b, &env); err != nil {
					t.Fatal(err)
				}
				body, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
				body = bytes.Replace(body, []byte(`"results":20`), []byte(`"results":21`), 1)
				env["payload"] = base64.StdEncoding.EncodeToString(body)
				out, _ := json.Marshal(env)
				return out
			})
		}, false},
		{"the signature removed", func(t *testing.T, path string) {
			if err := os.Remove(evidence.SignatureFile(path)); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := signedRun(t, t.TempDir(), k)
			tc.edit(t, path)
			if _, err := evidence.Verify(ctx, path, k.Public()); err == nil {
				t.Errorf("a forged run file verified")
			} else {
				t.Logf("refused: %v", err)
			}
			sc, err := verdict.AnalyzeFile(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Verdict.Status != zdv1.Pass; got != tc.chainBroken {
				t.Errorf("verdict without a key: %s, want broken=%v (%+v)", sc.Verdict.Status, tc.chainBroken, sc.Verdict.Reasons)
			}
		})
	}
	t.Run("sealing a file whose header names no key is refused", func(t *testing.T) {
		path := signedRun(t, t.TempDir(), nil)
		if err := k.Seal(path); err == nil || !strings.Contains(err.Error(), "in its header") {
			t.Errorf("Seal of a run file made without the sealer: %v, want refused (no reader would accept it)", err)
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		path := signedRun(t, t.TempDir(), nil)
		if _, err := evidence.Verify(ctx, path, k.Public()); !errors.Is(err, evidence.ErrUnsigned) {
			t.Errorf("verify an unsigned file: %v, want ErrUnsigned", err)
		}
	})
}

func rewrite(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rechain recomputes the end line's chain over the lines before it, as a
// forger who read this package would.
func rechain(t *testing.T, b []byte) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	c := zdv1.NewChain()
	for _, l := range lines[:len(lines)-1] {
		c.Add(l)
	}
	var end map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &end); err != nil {
		t.Fatal(err)
	}
	end["chain_sha256"] = c.Head()
	last, _ := json.Marshal(end)
	lines[len(lines)-1] = last
	return append(bytes.Join(lines, []byte("\n")), '\n')
}

// A run file made again where one was removed (a suite run into the same
// output directory) is signed anew: the stale signature is replaced.
func TestResignReplacesAStaleSignature(t *testing.T) {
	k := mustKey(t)
	dir := t.TempDir()
	path := signedRun(t, dir, k)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	signedRun(t, dir, k)
	if _, err := evidence.Verify(context.Background(), path, k.Public()); err != nil {
		t.Errorf("the second run file does not verify: %v", err)
	}
}

func TestKeysRoundTrip(t *testing.T) {
	dir := t.TempDir()
	k, created, err := evidence.MachineKey(dir)
	if err != nil || !created {
		t.Fatalf("first MachineKey: created=%v, %v", created, err)
	}
	again, created, err := evidence.MachineKey(dir)
	if err != nil || created || again.KeyID() != k.KeyID() {
		t.Fatalf("second MachineKey: created=%v, key %s vs %s, %v", created, again.KeyID(), k.KeyID(), err)
	}
	st, err := os.Stat(k.Path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	for _, p := range []string{evidence.PublicFileName(k.Path), k.Path} {
		pub, err := evidence.LoadPublicKey(p)
		if err != nil || pub.KeyID() != k.KeyID() {
			t.Errorf("LoadPublicKey(%s): %v, id %v", p, err, pub)
		}
	}
	if err := evidence.WriteKey(mustKey(t), k.Path); err == nil {
		t.Errorf("WriteKey replaced an existing key")
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.LoadKey(junk); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Errorf("LoadKey(junk) = %v, want a clear refusal", err)
	}
}
