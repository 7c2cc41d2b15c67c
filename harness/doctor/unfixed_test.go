package doctor

import (
	"strings"
	"testing"
)

// TestUnfixable: after Fix, every finding that still predicts drops is
// listed with why the doctor could not write its fix; a finding Fix
// cleared is not.
func TestUnfixable(t *testing.T) {
	overlap := pdb("  maxUnavailable: 1\n  unhealthyPodEvictionPolicy: AlwaysAllow\n") + "\n---\n" +
		strings.Replace(pdb("  minAvailable: 1\n"), "name: web\n", "name: web-2\n", 1)
	cases := []struct {
		name string
		in   m
		opts []Option
		edit [2]string         // old, new: a change to the manifest m writes
		want map[string]string // rule -> substring of its reason; empty: none left
	}{
		{name: "a sleep the fix lengthens", in: m{Lifecycle: "lifecycle:\n  preStop:\n    sleep:\n      seconds: 5"}, want: map[string]string{}},
		{name: "overlapping budgets need a person", in: m{PDB: overlap},
			want: map[string]string{"ZD021": "which of the overlapping PodDisruptionBudgets to keep"}},
		{name: "pools need a person", in: m{SvcAnnotations: "zerodrop.dev/lb-pool: pool-1"},
			want: map[string]string{"ZD011": "which node pool the Pods run in"}},
		{name: "a hook that does more than wait", in: m{Lifecycle: "lifecycle:\n  preStop:\n    exec:\n      command: [/bin/sh, -c, kong quit]"},
			want: map[string]string{"ZD002": "does more than wait, and the doctor lengthens only a sleep"}},
		{name: "no sleep action to write before 1.30", in: m{Lifecycle: "-"}, opts: []Option{WithKubernetesMinor(29)},
			want: map[string]string{"ZD002": "Kubernetes 1.29 has no kubelet sleep action"}},
		{name: "no port to probe", in: m{Readiness: "-"}, edit: [2]string{"targetPort: http", "targetPort: metrics"},
			want: map[string]string{"ZD030": "no port to probe"}},
		{name: "a StatefulSet cannot surge", in: m{Kind: "StatefulSet", Strategy: "updateStrategy:\n  type: RollingUpdate\n  rollingUpdate:\n    maxUnavailable: 3"},
			want: map[string]string{"ZD032": "a StatefulSet cannot surge"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _ := LookupProfile(DefaultProfile)
			opts := append([]Option{WithLBProfile(g)}, c.opts...)
			doc := c.in.yaml(t)
			if c.edit[0] != "" {
				doc = []byte(strings.Replace(string(doc), c.edit[0], c.edit[1], 1))
			}
			ms := mustRead(t, doc)
			fixed, applied := Fix(ms, opts...)
			got := map[string]string{}
			for _, u := range Unfixable(fixed, opts...) {
				if u.Service != "service/shop/web" || u.Object == "" {
					t.Errorf("unfixed %+v: want it on service/shop/web with its object", u)
				}
				got[u.RuleID] = u.Reason
			}
			for id, want := range c.want {
				if !strings.Contains(got[id], want) {
					t.Errorf("%s: reason %q, want %q (applied %v)", id, got[id], want, applied)
				}
			}
			for id, why := range got {
				if _, ok := c.want[id]; !ok {
					t.Errorf("%s listed unexpectedly: %s (applied %v)", id, why, applied)
				}
			}
			// Every error left in the fixed manifests is listed.
			for _, f := range Check(fixed, opts...).Findings {
				if f.Severity >= Error && got[f.RuleID] == "" {
					t.Errorf("%s predicts drops after the fix and is not listed", f.RuleID)
				}
			}
		})
	}
}

func mustRead(t *testing.T, doc []byte) *Manifests {
	t.Helper()
	ms, err := Read("test.yaml", strings.NewReader(string(doc)))
	if err != nil {
		t.Fatalf("Read: %v\n%s", err, doc)
	}
	return ms
}
