package render

import (
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Column is an environment of the readiness matrix.
type Column struct {
	Provider, Kubernetes, LB string
	// Gates are kube-proxy's feature gates where the run changed any
	// (RunMeta.KubeProxyFeatureGates).
	Gates string
}

// String is "kind · v1.34.2 · metallb", leaving out what is unknown; the
// provider "none" of a plain URL load reads "no cluster".
func (c Column) String() string {
	var parts []string
	provider := c.Provider
	if provider == "none" {
		provider = "no cluster"
	}
	gates := ""
	if c.Gates != "" {
		gates = "kube-proxy " + c.Gates
	}
	for _, p := range []string{provider, c.Kubernetes, gates, c.LB} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "unknown environment"
	}
	return strings.Join(parts, " · ")
}

// Row is a scenario case of the readiness matrix: scenario, policy, profile
// and the variants that distinguish cases (keep-alive off).
type Row struct {
	Scenario, Policy, Profile, Variant string
	// Role is the role of the case; "mixed" if runs disagree.
	Role zdv1.Role
	// Cells has one entry per column: the scenarios measured for this row
	// in that environment (usually one; several when runs repeat it).
	Cells [][]*Scenario
}

// Label is "rolling-update / Local / hardened".
func (r *Row) Label() string {
	parts := []string{r.Scenario}
	for _, p := range []string{r.Policy, r.Profile, r.Variant} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " / ")
}

// Matrix is the vendor-readiness view: every scenario case against every
// environment.
type Matrix struct {
	Columns []Column
	Rows    []*Row
}

// BuildMatrix merges the runs into one matrix. Rows come from the scenario
// labels the suites set (scenario, policy, profile, keepalive), falling back
// to the scenario name; columns from the run metadata (provider, Kubernetes
// version) and each scenario's own LB model (its "lb" label: one run of the
// matrix holds every model, and each must be a column of its own), else
// the run's LB implementation. Both keep the order they are first seen in,
// so the same inputs give the same table.
func BuildMatrix(runs []*Run) *Matrix {
	m := &Matrix{}
	colIndex := map[Column]int{}
	rowIndex := map[string]*Row{}
	column := func(col Column) int {
		ci, ok := colIndex[col]
		if !ok {
			ci = len(m.Columns)
			colIndex[col] = ci
			m.Columns = append(m.Columns, col)
			for _, r := range m.Rows {
				r.Cells = append(r.Cells, nil)
			}
		}
		return ci
	}
	for _, run := range runs {
		for _, sc := range run.Scenarios {
			col := run.Key()
			if lb := sc.Labels["lb"]; lb != "" {
				col.LB = lb
			}
			ci := column(col)
			row := rowFor(sc)
			key := row.Label()
			r, ok := rowIndex[key]
			if !ok {
				r = row
				r.Cells = make([][]*Scenario, len(m.Columns))
				rowIndex[key] = r
				m.Rows = append(m.Rows, r)
			} else if r.Role != sc.Role {
				r.Role = "mixed"
			}
			r.Cells[ci] = append(r.Cells[ci], sc)
		}
	}
	return m
}

func rowFor(sc *Scenario) *Row {
	l := sc.Labels
	r := &Row{Scenario: l["scenario"], Policy: l["policy"], Profile: l["profile"], Role: sc.Role}
	if r.Scenario == "" {
		// Not from the suites (zerodrop load): the name is all we have.
		return &Row{Scenario: sc.Name, Role: sc.Role}
	}
	if l["keepalive"] == "false" {
		r.Variant = "no keep-alive"
	}
	if p := zdv1.ProtocolName(l["protocol"]); p != zdv1.ProtocolHTTP1 {
		r.Variant = strings.TrimPrefix(r.Variant+", "+zdv1.ProtocolTitle(p), ", ")
	}
	if f := l["front"]; f != "" {
		// A real proxy as the Pods (fixtures.Front) is a row of its own.
		r.Variant = strings.TrimPrefix(r.Variant+", "+f+" as the Pods", ", ")
	}
	return r
}
