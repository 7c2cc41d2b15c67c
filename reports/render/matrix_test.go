package render

import (
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// One run of the matrix holds every LB model: each model is a column of its
// own, and a case is one row across them; a second run (another
// Kubernetes version) adds its own columns.
func TestBuildMatrixOneColumnPerLBModel(t *testing.T) {
	sc := func(name, lb string, role zdv1.Role) *Scenario {
		return &Scenario{Scenario: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: name, Role: role,
			Labels: map[string]string{"scenario": "drain-node", "policy": "Local", "profile": "hardened", "keepalive": "true", "lb": lb}}}}
	}
	run := func(k8s string, scs ...*Scenario) *Run {
		return &Run{Report: &zdv1.Report{Run: zdv1.RunMeta{Provider: "kind", KubernetesVersion: k8s, LBImplementation: "metallb,gke-legacy"}}, Scenarios: scs}
	}
	// The same release with a kube-proxy gate changed is a column of its own.
	gateOff := run("v1.27.4", sc("drain-node/metallb/local/hardened", "metallb", zdv1.RoleDocumentation))
	gateOff.Report.Run.KubeProxyFeatureGates = "ProxyTerminatingEndpoints=false"
	m := BuildMatrix([]*Run{
		run("v1.37.2", sc("drain-node/metallb/local/hardened", "metallb", zdv1.RoleDocumentation),
			sc("drain-node/gke-legacy/local/hardened", "gke-legacy", zdv1.RoleAssertion)),
		run("v1.35.8", sc("drain-node/metallb/local/hardened", "metallb", zdv1.RoleDocumentation)),
		run("v1.27.4", sc("drain-node/metallb/local/hardened", "metallb", zdv1.RoleDocumentation)),
		gateOff,
	})
	want := []string{"kind · v1.37.2 · metallb", "kind · v1.37.2 · gke-legacy", "kind · v1.35.8 · metallb",
		"kind · v1.27.4 · metallb", "kind · v1.27.4 · kube-proxy ProxyTerminatingEndpoints=false · metallb"}
	if len(m.Columns) != len(want) {
		t.Fatalf("columns %v, want %q", m.Columns, want)
	}
	for i, c := range m.Columns {
		if c.String() != want[i] {
			t.Errorf("column %d = %q, want %q", i, c, want[i])
		}
	}
	if len(m.Rows) != 1 {
		t.Fatalf("%d rows, want the one case", len(m.Rows))
	}
	r := m.Rows[0]
	if r.Label() != "drain-node / Local / hardened" || r.Role != "mixed" {
		t.Errorf("row %q role %q, want the case, mixed (documentation on metallb, assertion on gke-legacy)", r.Label(), r.Role)
	}
	for i, cell := range r.Cells {
		if len(cell) != 1 {
			t.Errorf("column %s holds %d scenarios, want 1", m.Columns[i], len(cell))
		}
	}
	if r.Cells[1][0].Name != "drain-node/gke-legacy/local/hardened" {
		t.Errorf("gke-legacy column holds %s", r.Cells[1][0].Name)
	}
}

// Each protocol's cells are a row of their own, named by the protocol;
// HTTP/1.1's (or a report from before the label) are the case's own row.
func TestRowForNamesTheProtocol(t *testing.T) {
	for proto, want := range map[string]string{
		"": "", zdv1.ProtocolHTTP1: "", zdv1.ProtocolH2C: "HTTP/2 (h2c)", zdv1.ProtocolGRPC: "gRPC",
		zdv1.ProtocolGRPCStream: "gRPC streams", zdv1.ProtocolWebSocket: "WebSocket",
	} {
		sc := &Scenario{Scenario: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "rolling-update/metallb/cluster/hardened",
			Labels: map[string]string{"scenario": "rolling-update", "policy": "Cluster", "profile": "hardened", "keepalive": "true", "protocol": proto}}}}
		if got := rowFor(sc).Variant; got != want {
			t.Errorf("protocol %q: row variant %q, want %q", proto, got, want)
		}
	}
}

// A front's cells (a real proxy as the Pods) are a row of their own.
func TestRowForNamesTheFront(t *testing.T) {
	for _, tc := range []struct{ front, protocol, want string }{
		{"traefik", "", "traefik as the Pods"},
		{"haproxy", zdv1.ProtocolWebSocket, "WebSocket, haproxy as the Pods"},
		{"", "", ""},
	} {
		sc := &Scenario{Scenario: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "rolling-update/metallb/cluster/hardened/x",
			Labels: map[string]string{"scenario": "rolling-update", "policy": "Cluster", "profile": "hardened", "keepalive": "true",
				"protocol": tc.protocol, "front": tc.front}}}}
		if got := rowFor(sc).Variant; got != tc.want {
			t.Errorf("front %q: row variant %q, want %q", tc.front, got, tc.want)
		}
	}
}
