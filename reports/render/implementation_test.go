package render

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/reports/render/rendertest"
)

func TestVendorBlock(t *testing.T) {
	tests := []struct {
		name     string
		impl     *zdv1.Implementation
		set      *zdv1.ScenarioSet
		tamper   bool
		wantHTML []string
		wantMD   []string
		notHTML  []string
	}{
		{
			name: "filled in",
			impl: &zdv1.Implementation{Organization: "Example Inc.", Project: "example-lb", URL: "https://example.com/lb", Version: "v2.1.0",
				Contact: []string{"@example/lb"}, LoadBalancerVersion: "v0.14.9"},
			set: &zdv1.ScenarioSet{Name: zdv1.ScenarioSetE2E, Version: "v0.3.0"},
			wantHTML: []string{`<h3>Implementation under test</h3>`, `Example Inc.`, `<a href="https://example.com/lb">`,
				`metallb v0.14.9`, `kind, Kubernetes v1.34.2`, `zerodrop-e2e v0.3.0`,
				`zerodrop FAIL: example-lb v2.1.0 (Example Inc.), load balancer metallb v0.14.9, on kind, Kubernetes v1.34.2. Scenario set zerodrop-e2e v0.3.0: 2 of 3 assertion scenario(s) passed, 1 failed`},
			wantMD:  []string{"> **Submission summary:** zerodrop FAIL: example-lb v2.1.0 (Example Inc.)"},
			notHTML: []string{"not given", "differs from what its scenarios give"},
		},
		{
			name:     "nothing given says so",
			wantHTML: []string{`<span class="missing">not given</span>`, `not given: organization, project, version, contact, scenario set`},
			wantMD:   []string{"_Not given: organization, project, version, contact, scenario set"},
		},
		{
			// report.json's own text claims PASS; the page shows what the
			// checked scenarios give and says the text differs.
			name:     "an edited submission text is not shown",
			impl:     &zdv1.Implementation{Project: "p"},
			tamper:   true,
			wantHTML: []string{`zerodrop FAIL: p`, `differs from what its scenarios give`},
			notHTML:  []string{`zerodrop PASS: p, all good`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, rendertest.Standard())
			rep.Implementation, rep.ScenarioSet = tc.impl, tc.set
			rep.Summarize()
			if tc.tamper {
				rep.Summary.Submission = "zerodrop PASS: p, all good"
			}
			if err := rep.WriteFile(filepath.Join(dir, ReportFileName)); err != nil {
				t.Fatal(err)
			}
			runs, err := Load(context.Background(), []string{dir}, WithoutTimelines())
			if err != nil {
				t.Fatal(err)
			}
			md, html, _ := renderAll(t, runs, dir)
			for _, w := range tc.wantHTML {
				if !strings.Contains(html, w) {
					t.Errorf("HTML lacks %q", w)
				}
			}
			for _, w := range tc.notHTML {
				if strings.Contains(html, w) {
					t.Errorf("HTML has %q", w)
				}
			}
			for _, w := range tc.wantMD {
				if !strings.Contains(md, w) {
					t.Errorf("Markdown lacks %q:\n%s", w, md)
				}
			}
		})
	}
}
