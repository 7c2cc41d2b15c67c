package render

import (
	"slices"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// The load's table says how the requests travelled where the run file
// records it, and says nothing where it does not (HTTP/1.1 run files from
// before the field).
func TestLoadTableNamesTheProtocol(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		want     bool
	}{{zdv1.ProtocolH2C, true}, {zdv1.ProtocolHTTP1, true}, {"", false}} {
		sc := &Scenario{Scenario: zdv1.Scenario{Load: zdv1.LoadSettings{Targets: []string{"http://192.0.2.1/"}, Rate: 50, Protocol: tc.protocol}}}
		v := scenarioViewOf(sc)
		got := slices.Contains(v.Load, kv{"protocol", tc.protocol})
		if got != tc.want {
			t.Errorf("protocol %q: load table %v, want the protocol row %t", tc.protocol, v.Load, tc.want)
		}
	}
}
