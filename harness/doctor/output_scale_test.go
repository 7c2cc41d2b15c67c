package doctor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// writeTextScanning is WriteText as it was before it grouped the findings
// by Service: every finding scanned for every Service. It stays here as
// the reference the grouped writer must match byte for byte, and as the
// other side of BenchmarkWriteText.
func writeTextScanning(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	if len(r.Services) == 0 {
		ew.printf("no Service of type LoadBalancer (or behind an Ingress or a Gateway API route) in the input; nothing to check\n")
	}
	for _, s := range r.Services {
		ew.printf("%s  %s  externalTrafficPolicy=%s  lb=%s (%s; %s)", s.Service, s.Type, s.Policy, s.Profile, s.LBLag, s.LBChoice)
		if s.L7 != "" {
			ew.printf("  l7=%s", s.L7)
		}
		if s.L4 != "" {
			ew.printf("  l4=%s", s.L4)
		}
		ew.printf("\n")
		for _, g := range s.Gateways {
			ew.printf("  parent %s\n", g)
		}
		if len(s.Workloads) > 0 {
			ew.printf("  workloads: %s\n", strings.Join(s.Workloads, ", "))
		}
		n := 0
		for _, f := range r.Findings {
			if f.Service != s.Service {
				continue
			}
			n++
			ew.printf("  %-7s %s %s  %s  [incident %s]\n", strings.ToUpper(f.Severity.String()), f.RuleID, f.Rule, f.Location(), strings.Join(f.Seeds, ", "))
			if f.Object != f.Service && !strings.HasPrefix(f.Object, "service/") {
				ew.printf("          %s: %s\n", f.Object, f.Message)
			} else {
				ew.printf("          %s\n", f.Message)
			}
			ew.printf("          fix: %s\n", f.Fix)
		}
		if n == 0 {
			ew.printf("  no findings\n")
		}
		ew.printf("\n")
	}
	for i, n := range r.NotJudged {
		if i == maxNotJudged {
			ew.printf("not judged: %d more (-o json lists every one)\n", len(r.NotJudged)-i)
			break
		}
		ew.printf("not judged %s (%s): %s\n", n.Service, n.Source, n.Reason)
	}
	for _, s := range r.Warnings {
		ew.printf("warning %s: %s\n", s.Source, s.Reason)
	}
	for _, s := range r.Skipped {
		ew.printf("skipped %s: %s\n", s.Source, s.Reason)
	}
	ew.printf("summary: %d error(s), %d warning(s), %d info over %d Service(s); default LB profile %s; Kubernetes %s\n",
		r.Count(Error), r.Count(Warning), r.Count(Info), len(r.Services), r.Profile, r.Kubernetes)
	return ew.err
}

// scaleManifests is n Services of type LoadBalancer, each with a
// Deployment and a PDB, varied so the report holds several rules per
// Service, Services without findings and Services judged on several LBs.
func scaleManifests(n int) []byte {
	var b strings.Builder
	for i := range n {
		policy := []string{"Local", "Cluster"}[i%2]
		ann := ""
		switch i % 4 {
		case 0:
			ann = "  annotations: {zerodrop.dev/lb-profile: aws-nlb}\n"
		case 1:
			ann = "  annotations: {service.beta.kubernetes.io/alibaba-cloud-loadbalancer-unhealthy-threshold: \"4\"}\n"
		}
		probe := "        readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 2}\n"
		if i%5 == 0 {
			probe = ""
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: s%[1]d
  namespace: ns%[2]d
%[3]sspec: {type: LoadBalancer, externalTrafficPolicy: %[4]s, selector: {app: s%[1]d}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: s%[1]d, namespace: ns%[2]d}
spec:
  replicas: %[5]d
  selector: {matchLabels: {app: s%[1]d}}
  template:
    metadata: {labels: {app: s%[1]d}}
    spec:
      terminationGracePeriodSeconds: %[6]d
      containers:
      - name: app
        image: example/s%[1]d:1
        ports: [{containerPort: 8080}]
%[7]s        lifecycle: {preStop: {sleep: {seconds: %[8]d}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: s%[1]d, namespace: ns%[2]d}
spec: {maxUnavailable: %[9]d, selector: {matchLabels: {app: s%[1]d}}}
`, i, i%7, ann, policy, 1+i%4, 30+i%60, probe, 5+i%40, i%2)
	}
	// A route to a Service the input lacks, and a ConfigMap: the report's
	// other lists.
	for i := range 25 {
		fmt.Fprintf(&b, "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i%d, namespace: x}\n"+
			"spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ghost%d, port: {number: 80}}}}]}}]}\n", i, i)
	}
	b.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n")
	return []byte(b.String())
}

func scaleReport(t testing.TB, n int) *Report {
	t.Helper()
	ms, err := Read("scale.yaml", bytes.NewReader(scaleManifests(n)))
	if err != nil {
		t.Fatal(err)
	}
	return Check(ms)
}

// TestWriteTextAsBefore: grouping the findings by Service changes nothing
// of the text, on a generated report of many Services and rules, on one
// whose findings name Services it does not list and twice-listed Services,
// and on an empty one.
func TestWriteTextAsBefore(t *testing.T) {
	r := scaleReport(t, 300)
	if len(r.Findings) < 300 || len(r.NotJudged) <= maxNotJudged || len(r.Skipped) == 0 {
		t.Fatalf("generated report too plain: %d findings, %d not judged, %d skipped", len(r.Findings), len(r.NotJudged), len(r.Skipped))
	}
	odd := *r
	odd.Services = append(append([]ServiceSummary(nil), r.Services[:3]...), r.Services[1])
	odd.Findings = append(append([]Finding(nil), r.Findings...), Finding{RuleID: "ZD090", Service: "service/nowhere/x", Object: "service/nowhere/x"})
	for name, rep := range map[string]*Report{"generated": r, "odd": &odd, "empty": Check(&Manifests{})} {
		var got, want bytes.Buffer
		if err := WriteText(&got, rep); err != nil {
			t.Fatal(err)
		}
		if err := writeTextScanning(&want, rep); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: the grouped writer's text differs from the scanning one's (%d and %d bytes)", name, got.Len(), want.Len())
		}
	}
}

// BenchmarkWriteText puts the scanning writer and the grouped one side by
// side as the report grows: the scanning one's time per Service grows with
// the report, the grouped one's does not (compare the ratios across sizes;
// nothing here asserts a time).
func BenchmarkWriteText(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		r := scaleReport(b, n)
		for _, w := range []struct {
			name  string
			write func(io.Writer, *Report) error
		}{{"scanning", writeTextScanning}, {"grouped", WriteText}} {
			b.Run(fmt.Sprintf("%s/services=%d", w.name, n), func(b *testing.B) {
				for b.Loop() {
					if err := w.write(io.Discard, r); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/service")
			})
		}
	}
}
