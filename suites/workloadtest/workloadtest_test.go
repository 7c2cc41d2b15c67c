package workloadtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/suites"
)

func TestPick(t *testing.T) {
	all := Scenarios()
	if len(all) == 0 {
		t.Fatal("no scenario a user's workload can meet")
	}
	for _, sc := range all {
		if !sc.Own {
			t.Errorf("%s is not one a user's workload meets", sc.Name)
		}
	}
	got, err := Pick("")
	if err != nil || len(got) != len(all) {
		t.Errorf("Pick(\"\") = %d scenarios, %v; want all %d", len(got), err, len(all))
	}
	got, err = Pick(" " + all[0].Name + " ")
	if err != nil || len(got) != 1 || got[0].Name != all[0].Name {
		t.Errorf("Pick(%q) = %v, %v", all[0].Name, got, err)
	}
	if _, err := Pick("no-such"); err == nil || !strings.Contains(err.Error(), all[0].Name) {
		t.Errorf("an unknown name: err = %v, want one naming the known", err)
	}
}

func TestLeaveOutAndBeforeAfter(t *testing.T) {
	scs := []suites.Scenario{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	keep, left := LeaveOut(scs, func(sc suites.Scenario) bool { return sc.Name == "b" }, "why")
	if len(keep) != 2 || keep[0].Name != "a" || keep[1].Name != "c" || len(left) != 1 || left[0] != (LeftOut{"b", "why"}) {
		t.Errorf("LeaveOut = %v, %v", keep, left)
	}
	models := []suites.Model{{Name: "metallb"}, {Name: "gke-l4"}}
	cell := func(n int64) zdv1.Scenario { return zdv1.Scenario{Results: zdv1.Results{Dropped: n}} }
	before := map[string]zdv1.Scenario{"a/metallb": cell(5), "a/gke-l4": cell(7), "c/gke-l4": cell(1)}
	after := map[string]zdv1.Scenario{"c/gke-l4": cell(0), "a/gke-l4": cell(0)}
	pairs := BeforeAfter(before, after, scs, models)
	if len(pairs) != 2 || pairs[0].Scenario != "a" || pairs[0].Model != "gke-l4" || pairs[0].Before.Results.Dropped != 7 ||
		pairs[1].Scenario != "c" || pairs[1].Before.Results.Dropped != 1 || pairs[1].After.Results.Dropped != 0 {
		t.Errorf("BeforeAfter = %+v", pairs)
	}
}

// overlapping is a Service behind gke-l4 whose Pods two budgets select
// (ZD021, no fix the doctor writes) and whose container has no readiness
// probe (ZD030, which it fixes).
const overlapping = `apiVersion: v1
kind: Service
metadata: {name: gw, namespace: web, annotations: {zerodrop.dev/lb-profile: gke-l4}}
spec: {type: LoadBalancer, selector: {app: gw}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gw, namespace: web}
spec:
  replicas: 2
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: gw}}
  template:
    metadata: {labels: {app: gw}}
    spec:
      containers:
      - {name: nginx, image: nginx:1.27, lifecycle: {preStop: {sleep: {seconds: 5}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: gw, namespace: web}
spec: {maxUnavailable: 1, unhealthyPodEvictionPolicy: AlwaysAllow, selector: {matchLabels: {app: gw}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: gw-2, namespace: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: gw}}}
`

// What the fixes leave predicting drops is listed once, on the models it
// holds on, only for the disruptions run, and the fixed file and each
// cell's expectation say why.
func TestUnfixedIn(t *testing.T) {
	ms, err := doctor.Read("in.yaml", strings.NewReader(overlapping))
	if err != nil {
		t.Fatal(err)
	}
	models := []suites.Model{{Name: "gke-l4"}, {Name: "gcp-nlb"}}
	fixed, applied := FixForEvery(ms, models, 0)
	if len(applied) == 0 {
		t.Fatal("no fix applied")
	}
	const svc = "service/web/gw"
	drains, err := Pick("drain-node")
	if err != nil {
		t.Fatal(err)
	}
	rollouts, err := Pick("rolling-update")
	if err != nil {
		t.Fatal(err)
	}
	un, err := UnfixedIn(fixed, svc, models, drains, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(un) != 1 || un[0].RuleID != "ZD021" || un[0].Object != "poddisruptionbudget/web/gw-2" ||
		strings.Join(un[0].Models, ",") != "gke-l4,gcp-nlb" || !strings.Contains(un[0].Reason, "overlapping PodDisruptionBudgets") {
		t.Fatalf("unfixed = %+v; want ZD021 on gw-2 on both models, once", un)
	}
	// A rollout does not evict: ZD021 predicts nothing there.
	if none, err := UnfixedIn(fixed, svc, models, rollouts, 0); err != nil || len(none) != 0 {
		t.Errorf("unfixed for a rollout = %+v, %v; want none", none, err)
	}
	preds := Predictions{"drain-node": {
		"gke-l4":  {Prediction: doctor.Prediction{Outcome: doctor.PredictDrops, Rules: []string{"ZD021"}}, Why: "ZD021 overlap"},
		"metallb": {Prediction: doctor.Prediction{Outcome: doctor.PredictDrops, Rules: []string{"ZD021"}}, Why: "ZD021 overlap"},
	}}
	noted := preds.WithUnfixed(un)
	if w := noted["drain-node"]["gke-l4"].Expectation().Why; !strings.Contains(w, "not fixed by the doctor: ZD021 poddisruptionbudget/web/gw-2: no automatic fix") {
		t.Errorf("gke-l4's expectation: %q", w)
	}
	if w := noted["drain-node"]["metallb"].Why; w != "ZD021 overlap" || preds["drain-node"]["gke-l4"].Why != "ZD021 overlap" {
		t.Errorf("a model it was not judged on, or the original, changed: %q, %q", w, preds["drain-node"]["gke-l4"].Why)
	}
	p := filepath.Join(t.TempDir(), "fixed.yaml")
	if err := WriteFixed(p, fixed, ms, applied, un); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# - not fixed: ZD021 poddisruptionbudget/web/gw-2 (gke-l4, gcp-nlb): no automatic fix") {
		t.Errorf("fixed file head:\n%s", b)
	}
}
