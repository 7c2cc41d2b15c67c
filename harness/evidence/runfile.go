package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/internal/atomicfile"
)

// SignatureFile is where the DSSE envelope of a run file is written:
// run.jsonl -> run.dsse.json.
func SignatureFile(runFile string) string {
	return strings.TrimSuffix(runFile, ".jsonl") + ".dsse.json"
}

// maxEnvelope bounds what Verify reads of an envelope: a signed statement
// is about 1 KiB.
const maxEnvelope = 1 << 20

// facts is what a run file says about itself, read whole.
type facts struct {
	header *zdv1.Header
	end    *zdv1.End
	stats  runfile.Stats
}

func readFacts(path string) (facts, error) {
	f, err := os.Open(path)
	if err != nil {
		return facts{}, fmt.Errorf("open run file: %w", err)
	}
	defer f.Close()
	return readFactsFrom(f, path)
}

func readFactsFrom(src io.Reader, name string) (facts, error) {
	var f facts
	stats, err := runfile.Read(src, name, func(rec runfile.Record) error {
		switch {
		case rec.Header != nil && f.header == nil:
			f.header = rec.Header
		case rec.End != nil:
			f.end = rec.End
		}
		return nil
	})
	if err != nil {
		return facts{}, err
	}
	f.stats = stats
	return f, nil
}

// Seal signs the closed run file at path: it writes SignatureFile(path),
// replacing a stale one. It makes Key a runfile.Sealer.
func (k *Key) Seal(path string) error {
	f, err := readFacts(path)
	if err != nil {
		return err
	}
	switch {
	case f.header == nil:
		return fmt.Errorf("%s has no meta line: nothing to vouch for", path)
	case f.end == nil:
		return fmt.Errorf("%s has no end line: a run file is signed once it is closed", path)
	case f.stats.Truncated || f.stats.Corrupt.Lines > 0:
		return fmt.Errorf("%s has unreadable lines: it is not signed as it is", path)
	case f.end.Chain != f.stats.Chain:
		return fmt.Errorf("%s changed while it was closed: its lines chain to %.12s…, its end line says %.12s…", path, f.stats.Chain, f.end.Chain)
	case f.header.SigningKey != k.id:
		// Verify holds the header to the key that signed: a file whose
		// header names no key, or another, would carry a signature no
		// reader accepts.
		return fmt.Errorf("%s names key %s in its header, this is %.12s… (runfile.WithSealer names it)", path, short(f.header.SigningKey), k.id)
	}
	st := zdv1.Statement{
		Type:          zdv1.StatementType,
		Subject:       []zdv1.Subject{{Name: filepath.Base(path), Digest: map[string]string{"sha256": f.stats.SHA256}}},
		PredicateType: zdv1.RunFilePredicateType,
		Predicate: zdv1.RunFilePredicate{
			RunID: f.header.RunID, Scenario: f.header.Scenario.Name, ToolVersion: f.header.ToolVersion,
			Created: f.header.Created, Ended: f.end.Time,
			Chain: f.end.Chain, Lines: f.stats.ChainLines, Results: f.end.Results, Events: f.end.Events,
			KeyID: k.id,
		},
	}
	body, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode the statement for %s: %w", path, err)
	}
	signer, err := dsse.NewEnvelopeSigner(dsseSigner{k})
	if err != nil {
		return fmt.Errorf("sign %s: %w", path, err)
	}
	env, err := signer.SignPayload(context.Background(), zdv1.InTotoPayloadType, body)
	if err != nil {
		return fmt.Errorf("sign %s: %w", path, err)
	}
	out, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the envelope for %s: %w", path, err)
	}
	// The run file was created anew (runfile.Create refuses to replace
	// one), so a signature already beside it is of a run file that is
	// gone: it is replaced, atomically, never appended to.
	if err := atomicfile.Write(SignatureFile(path), append(out, '\n')); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	return nil
}

// Verified is what Verify established.
type Verified struct {
	// KeyID is the trusted key whose signature holds.
	KeyID string
	// SHA256 is the run file's digest, Chain its lines' chain head.
	SHA256, Chain string
	// Envelope is the signature file read.
	Envelope string
}

// ErrUnsigned is returned (wrapped) by Verify when the run file has no
// signature file.
var ErrUnsigned = errors.New("no signature")

// Verify checks the run file at path against its signature file with the
// trusted keys: the envelope's signature must be one of theirs, over an
// in-toto statement whose subject is this file with its SHA-256, whose
// chain head and line count are the ones its lines give, and which the end
// line and header agree with. Any difference is an error saying which.
func Verify(ctx context.Context, path string, keys ...*PublicKey) (Verified, error) {
	if len(keys) == 0 {
		return Verified{}, errors.New("no trusted key to verify with")
	}
	envPath := SignatureFile(path)
	envData, err := readEnvelope(envPath)
	if err != nil {
		return Verified{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Verified{}, fmt.Errorf("open run file: %w", err)
	}
	defer f.Close()
	v, err := verify(ctx, path, f, envPath, envData, keys)
	if err != nil {
		return Verified{}, err
	}
	v.Envelope = envPath
	return v, nil
}

// verify is Verify on a run file's bytes (from run, named path) and its
// envelope's (envData, named envPath).
func verify(ctx context.Context, path string, run io.Reader, envPath string, envData []byte, keys []*PublicKey) (Verified, error) {
	var env dsse.Envelope
	dec := json.NewDecoder(bytes.NewReader(envData))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return Verified{}, fmt.Errorf("read signature %s: not a DSSE envelope: %w", envPath, err)
	}
	seen := map[string]bool{}
	var vs []dsse.Verifier
	for _, k := range keys {
		if !seen[k.id] {
			seen[k.id] = true
			vs = append(vs, dsseVerifier{k})
		}
	}
	ev, err := dsse.NewEnvelopeVerifier(vs...)
	if err != nil {
		return Verified{}, fmt.Errorf("verify %s: %w", envPath, err)
	}
	if env.PayloadType != zdv1.InTotoPayloadType {
		return Verified{}, fmt.Errorf("%s: payload type %q, want %q", envPath, env.PayloadType, zdv1.InTotoPayloadType)
	}
	accepted, err := ev.Verify(ctx, &env)
	if err != nil || len(accepted) == 0 {
		return Verified{}, fmt.Errorf("%s: no signature by a trusted key holds (signed by %s; trusted: %s)", envPath, signers(&env), trusted(keys))
	}
	body, err := env.DecodeB64Payload()
	if err != nil {
		return Verified{}, fmt.Errorf("%s: %w", envPath, err)
	}
	var st zdv1.Statement
	sdec := json.NewDecoder(bytes.NewReader(body))
	sdec.DisallowUnknownFields()
	if err := sdec.Decode(&st); err != nil {
		return Verified{}, fmt.Errorf("%s: the signed statement does not decode: %w", envPath, err)
	}
	f, err := readFactsFrom(run, path)
	if err != nil {
		return Verified{}, err
	}
	keyID := accepted[0].KeyID
	p := st.Predicate
	var diffs []string
	if st.Type != zdv1.StatementType || st.PredicateType != zdv1.RunFilePredicateType {
		diffs = append(diffs, fmt.Sprintf("statement type %q with predicate %q, want %q with %q", st.Type, st.PredicateType, zdv1.StatementType, zdv1.RunFilePredicateType))
	}
	if len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != f.stats.SHA256 {
		diffs = append(diffs, fmt.Sprintf("the run file's SHA-256 is %.12s…, the signed statement names %s", f.stats.SHA256, subjects(st.Subject)))
	}
	if p.Chain != f.stats.Chain || p.Lines != f.stats.ChainLines {
		diffs = append(diffs, fmt.Sprintf("the run file's %d lines chain to %.12s…, the signed statement says %d lines to %.12s…",
			f.stats.ChainLines, f.stats.Chain, p.Lines, p.Chain))
	}
	switch {
	case f.end == nil:
		diffs = append(diffs, "the run file has no end line")
	case f.end.Chain != p.Chain || f.end.Results != p.Results || f.end.Events != p.Events:
		diffs = append(diffs, "the end line's chain or counts differ from the signed statement's")
	}
	if f.header == nil || f.header.RunID != p.RunID || f.header.SigningKey != keyID || p.KeyID != keyID {
		diffs = append(diffs, "the header's run ID or signing key differs from the signed statement's")
	}
	if len(diffs) > 0 {
		return Verified{}, fmt.Errorf("%s does not match its signature %s: %s", path, envPath, strings.Join(diffs, "; "))
	}
	return Verified{KeyID: keyID, SHA256: f.stats.SHA256, Chain: f.stats.Chain}, nil
}

func readEnvelope(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s not found", ErrUnsigned, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read signature: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEnvelope+1))
	if err != nil {
		return nil, fmt.Errorf("read signature %s: %w", path, err)
	}
	if len(data) > maxEnvelope {
		return nil, fmt.Errorf("read signature %s: larger than %d KiB, not an envelope this tool writes", path, maxEnvelope>>10)
	}
	return data, nil
}

func signers(env *dsse.Envelope) string {
	var ids []string
	for _, s := range env.Signatures {
		ids = append(ids, short(s.KeyID))
	}
	if len(ids) == 0 {
		return "nobody"
	}
	return strings.Join(ids, ", ")
}

func trusted(keys []*PublicKey) string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, short(k.id))
	}
	return strings.Join(ids, ", ")
}

func subjects(s []zdv1.Subject) string {
	if len(s) != 1 {
		return fmt.Sprintf("%d subjects", len(s))
	}
	return short(s[0].Digest["sha256"])
}

func short(id string) string {
	id = zdv1.SafeText(id)
	if len(id) > 12 {
		return id[:12] + "…"
	}
	if id == "" {
		return "(no key ID)"
	}
	return id
}
