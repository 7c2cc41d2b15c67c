package incident

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The identifiers and the document's headings are one list: an incident the
// code cites has an account, and every account is citable.
func TestEveryIncidentIsTold(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", Doc))
	if err != nil {
		t.Fatalf("read %s: %v", Doc, err)
	}
	var headings []string
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)\s*$`).FindAllStringSubmatch(string(b), -1) {
		headings = append(headings, m[1])
	}
	if !slices.Equal(headings, All()) {
		t.Errorf("%s tells %v; the code cites %v (same order)", Doc, headings, All())
	}
	for _, section := range regexp.MustCompile(`(?m)^## `).Split(string(b), -1)[1:] {
		if !regexp.MustCompile(`\*\*Sources?\.\*\*`).MatchString(section) || !regexp.MustCompile(`\*\*Reproduced by\*\*`).MatchString(section) {
			t.Errorf("section %.40q lacks a **Source(s).** or a **Reproduced by** paragraph", section)
		}
	}
}

func TestKnown(t *testing.T) {
	for _, id := range All() {
		if !Known(id) {
			t.Errorf("Known(%q) = false", id)
		}
	}
	for _, id := range []string{"", "000", "000_45582324abe9cf8f.txt", "drain"} {
		if Known(id) {
			t.Errorf("Known(%q) = true", id)
		}
	}
}
