// Package evidence signs run files and verifies them, so a report attached
// to a submission or a change review can be checked against the machine
// that measured it.
//
// A run file is chained as it is written: each line extends a SHA-256 hash
// chain (zdv1.Chain) whose head the end line records. When the writer
// closes it, a Key signs an in-toto Statement v1 (github.com/in-toto/
// attestation, spec/v1/statement.md) whose subject is the run file and its
// SHA-256 and whose predicate (zdv1.RunFilePredicate) repeats the chain's
// head and the end line's counts; the statement travels in a DSSE envelope
// (github.com/secure-systems-lab/dsse, envelope.md and protocol.md: the
// signature is over the pre-authentication encoding of the payload type
// and payload), written next to the run file (SignatureFile). Keys are
// Ed25519 (RFC 8032), PEM-encoded: PKCS #8 for the private key, PKIX for
// the public one, as `openssl genpkey -algorithm ed25519` writes them.
//
// Verify trusts only the public keys it is given: the envelope's key ID
// chooses among them, never adds one.
package evidence

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Key is a private signing key.
type Key struct {
	priv ed25519.PrivateKey
	id   string
	// Path is the file it was read from or written to ("" for a key made in
	// memory).
	Path string
}

// PublicKey is a key a reader trusts to have signed run files.
type PublicKey struct {
	pub ed25519.PublicKey
	id  string
}

// KeyIDOf is a public key's ID: the hex SHA-256 of its PKIX (DER) form, as
// `openssl pkey -pubin -outform der | sha256sum` computes it.
func KeyIDOf(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		// An ed25519.PublicKey of the right length always marshals.
		panic(fmt.Sprintf("evidence: marshal an Ed25519 public key: %v", err))
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// GenerateKey makes a new key in memory.
func GenerateKey() (*Key, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate an Ed25519 key: %w", err)
	}
	return &Key{priv: priv, id: KeyIDOf(pub)}, nil
}

// KeyID is the key's ID (KeyIDOf its public half).
func (k *Key) KeyID() string { return k.id }

// Public is the key's public half.
func (k *Key) Public() *PublicKey {
	pub, _ := k.priv.Public().(ed25519.PublicKey)
	return &PublicKey{pub: pub, id: k.id}
}

// KeyID is the key's ID.
func (p *PublicKey) KeyID() string { return p.id }

// PublicFileName is where WriteKey puts the public half of a key written to
// path.
func PublicFileName(path string) string { return path + ".pub" }

// WriteKey writes k to path (PKCS #8 PEM, mode 0600) and its public half to
// PublicFileName(path) (PKIX PEM, 0644). It refuses to overwrite either: a
// key that signed evidence must not be lost to a typo.
func WriteKey(k *Key, path string) error {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return fmt.Errorf("encode the private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		return fmt.Errorf("encode the public key: %w", err)
	}
	pubPath := PublicFileName(path)
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	if err := writeNew(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		_ = os.Remove(path)
		return err
	}
	k.Path = path
	return nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write key %s: %w", path, err)
	}
	return nil
}

// maxKeyFile bounds what a key file may hold: a PEM key is a few hundred
// bytes.
const maxKeyFile = 64 << 10

func readPEM(path string) (*pem.Block, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxKeyFile {
		return nil, fmt.Errorf("read key %s: not a key file (want a PEM file under %d KiB)", path, maxKeyFile>>10)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("read key %s: no PEM block (want an Ed25519 key, e.g. from `openssl genpkey -algorithm ed25519`)", path)
	}
	return block, nil
}

// LoadKey reads a private key (PKCS #8 PEM, Ed25519).
func LoadKey(path string) (*Key, error) {
	block, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("read key %s: a %q PEM block, want PRIVATE KEY (PKCS #8, Ed25519)", path, block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("read key %s: a %T, want an Ed25519 key", path, k)
	}
	pub, _ := priv.Public().(ed25519.PublicKey)
	return &Key{priv: priv, id: KeyIDOf(pub), Path: path}, nil
}

// LoadPublicKey reads a public key (PKIX PEM, Ed25519). A private key file
// is accepted too, for its public half.
func LoadPublicKey(path string) (*PublicKey, error) {
	block, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	switch block.Type {
	case "PUBLIC KEY":
	case "PRIVATE KEY":
		k, err := LoadKey(path)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	default:
		return nil, fmt.Errorf("read key %s: a %q PEM block, want PUBLIC KEY (PKIX, Ed25519)", path, block.Type)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("read key %s: a %T, want an Ed25519 key", path, k)
	}
	return &PublicKey{pub: pub, id: KeyIDOf(pub)}, nil
}

// MachineKeyName is the machine key's file in its directory.
const MachineKeyName = "signing-key.pem"

// MachineKey returns the key zerodrop signs with on this machine when none
// is given: dir/signing-key.pem, made on first use (created reports that).
// Its public half is PublicFileName of it.
func MachineKey(dir string) (k *Key, created bool, err error) {
	path := filepath.Join(dir, MachineKeyName)
	k, err = LoadKey(path)
	if err == nil {
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("machine signing key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("machine signing key: %w", err)
	}
	if k, err = GenerateKey(); err != nil {
		return nil, false, err
	}
	if err := WriteKey(k, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Another process made it first: use that one.
			k, err = LoadKey(path)
			return k, false, err
		}
		return nil, false, fmt.Errorf("machine signing key: %w", err)
	}
	return k, true, nil
}

// dsseSigner and dsseVerifier adapt the keys to DSSE.
type dsseSigner struct{ k *Key }

func (s dsseSigner) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(s.k.priv, data), nil
}
func (s dsseSigner) KeyID() (string, error) { return s.k.id, nil }

type dsseVerifier struct{ p *PublicKey }

func (v dsseVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.p.pub, data, sig) {
		return errors.New("the signature does not match")
	}
	return nil
}
func (v dsseVerifier) KeyID() (string, error)   { return v.p.id, nil }
func (v dsseVerifier) Public() crypto.PublicKey { return v.p.pub }

var (
	_ dsse.Signer   = dsseSigner{}
	_ dsse.Verifier = dsseVerifier{}
)

// DefaultKeyDir is where the machine key lives: $XDG_CONFIG_HOME/zerodrop,
// else $HOME/.config/zerodrop (as os.UserConfigDir on Linux); "" when
// neither is set. getenv is os.Getenv outside tests.
func DefaultKeyDir(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "zerodrop")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "zerodrop")
	}
	return ""
}

// NoKey is the --sign-key value that leaves run files unsigned.
const NoKey = "none"

// Resolve turns a --sign-key value into the key to sign with: NoKey is
// none (nil, no error), "" the machine key in machineDir (made on first
// use), anything else the path of a private key. Note says which key, for
// the user: its ID and the public key to verify with.
func Resolve(value, machineDir string) (k *Key, note string, err error) {
	switch value {
	case NoKey:
		return nil, "run files are not signed (--sign-key none)", nil
	case "":
		if machineDir == "" {
			return nil, "", errors.New("no place for this machine's signing key: neither XDG_CONFIG_HOME nor HOME is set; give --sign-key PATH or --sign-key none")
		}
		var created bool
		if k, created, err = MachineKey(machineDir); err != nil {
			return nil, "", err
		}
		made := ""
		if created {
			made = ", made now"
		}
		return k, fmt.Sprintf("signing run files with this machine's key %.12s… (%s%s); verify with: zerodrop report --verify-key %s",
			k.id, k.Path, made, PublicFileName(k.Path)), nil
	default:
		if k, err = LoadKey(value); err != nil {
			return nil, "", fmt.Errorf("--sign-key: %w", err)
		}
		return k, fmt.Sprintf("signing run files with key %.12s… (%s)", k.id, k.Path), nil
	}
}
