package render

import (
	"regexp"
	"testing"
)

// A name a target or a cluster chose stays text in summary.md: no link, no
// image, no HTML, no broken table.
func TestMarkdownCellsAreText(t *testing.T) {
	live := regexp.MustCompile(`(^|[^\\])!?\[[^\]]*[^\\]\]\(|<[a-z]`)
	pipe := regexp.MustCompile(`(^|[^\\])\|`) // breaks a table row, not a <summary>
	// The check itself can fail: the raw payloads are live.
	if !live.MatchString("[x](javascript:alert(1))") || !live.MatchString("<img src=x>") || !pipe.MatchString("a|b") {
		t.Fatal("the liveness check misses raw Markdown")
	}
	for _, in := range []string{
		"[x](javascript:alert(1))",
		"![img](http://127.0.0.1/x.png)",
		"pod|with|pipes",
		"<img src=x onerror=alert(1)>",
		"a\\](javascript:x)",
		"`code` *bold* _em_",
	} {
		got := mdCell(in)
		if live.MatchString(got) || pipe.MatchString(got) {
			t.Errorf("mdCell(%q) = %q: still live Markdown", in, got)
		}
		if h := htmlText(in); live.MatchString(h) {
			t.Errorf("htmlText(%q) = %q: still live", in, h)
		}
	}
}
