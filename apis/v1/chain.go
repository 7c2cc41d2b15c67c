package v1

import (
	"crypto/sha256"
	"encoding/hex"
)

// chainSeed names the chain's algorithm, so a head from another scheme
// never matches by accident.
const chainSeed = "zerodrop run-file chain v1"

// Chain is the hash chain over a run file's lines: each link is
// SHA-256(previous link || line), the line without its newline, starting
// from SHA-256 of chainSeed. The writer extends it line by line as it
// writes, and records the head in the end line; a reader recomputes it.
// The zero value is not a chain: start from NewChain.
type Chain struct{ head [sha256.Size]byte }

// NewChain returns a chain with no lines.
func NewChain() Chain { return Chain{head: sha256.Sum256([]byte(chainSeed))} }

// Add links one line (without its trailing newline).
func (c *Chain) Add(line []byte) {
	h := sha256.New()
	h.Write(c.head[:])
	h.Write(line)
	h.Sum(c.head[:0])
}

// Head is the current link, hex.
func (c Chain) Head() string { return hex.EncodeToString(c.head[:]) }
