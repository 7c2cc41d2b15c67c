package v1

import "testing"

func TestSafeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"echo-7b5fcf844-wh4cf", "echo-7b5fcf844-wh4cf"},
		{"kind-worker2 · pool-a ✓", "kind-worker2 · pool-a ✓"},
		{"pod\x1b[32m PASS\x1b[0m", `pod\u001b[32m PASS\u001b[0m`},
		{"a\nPASS: forged line\r", `a\nPASS: forged line\r`},
		{"tab\there", `tab\there`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"nul\x00 del\x7f c1\u0085", `nul\u0000 del\u007f c1\u0085`},
		{"bad utf-8 \xff", "bad utf-8 \xff"},
	}
	for _, tt := range tests {
		if got := SafeText(tt.in); got != tt.want {
			t.Errorf("SafeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
