package render

import (
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// The source-IP summary says what each address criterion found: kept,
// hidden, or carried in X-Forwarded-For behind a proxy.
func TestClientIPCheck(t *testing.T) {
	const client = "172.19.0.1"
	seen := []zdv1.Count{{Name: client, Count: 9}}
	proxy := []zdv1.Count{{Name: "172.19.0.6", Count: 9}}
	tests := []struct {
		name string
		crit zdv1.Criteria
		res  zdv1.Results
		want string
	}{
		{"nothing checked", zdv1.Criteria{}, zdv1.Results{ClientIPs: seen}, ""},
		{"Local keeps the address", zdv1.Criteria{ExpectedClientIP: client}, zdv1.Results{ExpectedClientIP: client, ClientIPs: seen}, "preserved (172.19.0.1)"},
		{"Cluster hides it", zdv1.Criteria{ForbiddenClientIP: client}, zdv1.Results{ClientIPs: proxy}, "forbidden 172.19.0.1 hidden"},
		{"a proxy forwards it", zdv1.Criteria{ForwardedClientIP: client, ForbiddenClientIP: client},
			zdv1.Results{ClientIPs: proxy, ForwardedClientIP: client, ForwardedFor: seen}, "in X-Forwarded-For (172.19.0.1); forbidden 172.19.0.1 hidden"},
		{"a proxy that drops it", zdv1.Criteria{ForwardedClientIP: client},
			zdv1.Results{ClientIPs: proxy, ForwardedClientIP: client, ForwardedMismatches: 9}, "9 without 172.19.0.1 in X-Forwarded-For"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := &Scenario{Scenario: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Criteria: tc.crit}, Results: tc.res}}
			if got := sc.clientIPCheck(); got != tc.want {
				t.Errorf("clientIPCheck() = %q, want %q", got, tc.want)
			}
		})
	}
}
