package v1

import "time"

// A signed run file is an in-toto attestation (Statement v1,
// github.com/in-toto/attestation spec/v1/statement.md) in a DSSE envelope
// (github.com/secure-systems-lab/dsse envelope.md), written next to the run
// file (harness/evidence SignatureFile). The statement's subject is the run file and
// its SHA-256; the predicate is RunFilePredicate.
const (
	// StatementType is in-toto's Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// RunFilePredicateType names the predicate below.
	RunFilePredicateType = "https://zerodrop.dev/attestation/run-file/v1"
)

// Statement is an in-toto Statement v1 with a RunFilePredicate.
type Statement struct {
	Type          string           `json:"_type"`
	Subject       []Subject        `json:"subject"`
	PredicateType string           `json:"predicateType"`
	Predicate     RunFilePredicate `json:"predicate"`
}

// Subject is an in-toto ResourceDescriptor with a name and digests.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// RunFilePredicate says what the signer vouches for: this run of this
// scenario, its lines' hash chain, and what the end line counts.
type RunFilePredicate struct {
	RunID       string    `json:"runId"`
	Scenario    string    `json:"scenario"`
	ToolVersion string    `json:"toolVersion,omitempty"`
	Created     time.Time `json:"created"`
	Ended       time.Time `json:"ended"`
	// Chain is the end line's chain head (End.Chain); Lines the lines it
	// covers.
	Chain   string `json:"chainSha256"`
	Lines   int64  `json:"lines"`
	Results int64  `json:"results"`
	Events  int64  `json:"events"`
	// KeyID is the signing key's ID (the signature names it too).
	KeyID string `json:"keyId"`
}
