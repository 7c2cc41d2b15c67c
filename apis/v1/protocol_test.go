package v1

import "testing"

func TestProtocolName(t *testing.T) {
	for in, want := range map[string]string{"": ProtocolHTTP1, ProtocolHTTP1: ProtocolHTTP1, ProtocolH2C: ProtocolH2C} {
		if got := ProtocolName(in); got != want {
			t.Errorf("ProtocolName(%q) = %q, want %q", in, got, want)
		}
	}
}
