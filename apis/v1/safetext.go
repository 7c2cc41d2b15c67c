package v1

import (
	"fmt"
	"strings"
	"unicode"
)

// SafeText is s with every character that could act on a terminal or
// reorder text shown as its escape: control characters (an ANSI escape
// can paint a line green, a newline can forge one), and the Unicode
// marks that reverse or isolate text. What a target or a cluster sends
// (pod and node names, error texts, event messages) passes through it
// before a report or a terminal shows it; printable text is unchanged.
func SafeText(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == unicode.ReplacementChar:
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		// Bidirectional embeddings, overrides, isolates and marks.
		return true
	}
	return false
}
