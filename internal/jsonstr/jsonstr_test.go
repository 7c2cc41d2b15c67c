package jsonstr

import (
	"encoding/json"
	"testing"
)

func marshal(s string) string {
	b, _ := json.Marshal(s)
	// encoding/json escapes <, > and & for HTML; Append does not.
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+5 < len(b) && string(b[i:i+4]) == `\u00` {
			switch string(b[i+4 : i+6]) {
			case "3c":
				out = append(out, '<')
				i += 5
				continue
			case "3e":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnl\ncr\r", "\b\f\x00\x1f", "ünïcødé ✓", "bad \xff utf8", "line\u2028sep\u2029", "<a&b>"} {
		if got, want := string(Append(nil, s)), marshal(s); got != want {
			t.Errorf("Append(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("hello")
	f.Add("\xff\u2028\"\\\n")
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Append(%q) = %s is not JSON: %v", s, got, err)
		}
		if string(got) != marshal(s) {
			t.Fatalf("Append(%q) = %s, encoding/json says %s", s, got, marshal(s))
		}
	})
}
