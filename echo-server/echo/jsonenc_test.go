package echo

import (
	"bytes"
	"encoding/json"
	"testing"

	"zerodrop.dev/zerodrop/internal/jsonstr"
)

// stdJSONString is encoding/json's rendering of s without HTML escaping,
// the reference appendJSONString must match byte for byte.
func stdJSONString(t testing.TB, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatalf("encoding/json on %q: %v", s, err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{
		"", "plain", "pod-7f9c", `quote " and backslash \`, "tab\tnl\ncr\r", "\b\f\x00\x01\x1f\x7f",
		"<html>&amp;", "héllo wörld ✓ 🚀", "bad \xff utf8 \xc3", "\xe2\x80\xa8 line sep \u2029 para sep",
		"10.0.0.1, 192.0.2.9", "\xed\xa0\x80 surrogate",
	} {
		got := string(jsonstr.Append(nil, s))
		if want := stdJSONString(t, s); got != want {
			t.Errorf("jsonstr.Append(%q)\n got %s\nwant %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\xff", "\u2028", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsonstr.Append([]byte("x"), s)
		if want := "x" + stdJSONString(t, s); string(got) != want {
			t.Fatalf("jsonstr.Append(%q)\n got %s\nwant %s", s, got, want)
		}
	})
}

func TestAppendJSONBool(t *testing.T) {
	if got := string(appendJSONBool(appendJSONBool(nil, true), false)); got != "truefalse" {
		t.Fatalf("got %q", got)
	}
}
