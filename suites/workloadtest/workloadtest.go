// Package workloadtest is `zerodrop test` as a library: a user's own
// workload, predicted by the doctor and then measured on a stand-in, cell
// by cell, with the same scenario bodies the suite runs for its bundled
// workload (docs/zerodrop-test.md). The CLI parses flags and prints; the
// choice of disruptions and LB models, the predictions, the doctor's
// fixes, the measurement with its re-runs of witnesses a shared disruption
// missed, and the before/after comparison live here, where the suites and
// other programs reach them too.
package workloadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/fixtures"
	"zerodrop.dev/zerodrop/harness/doctor"
	"zerodrop.dev/zerodrop/harness/incident"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/standin"
	"zerodrop.dev/zerodrop/suites"
)

// Predictions are the doctor's predictions by scenario, then LB model.
type Predictions map[string]map[string]Prediction

// Pair is one cell measured before and after the doctor's fixes.
type Pair struct {
	Scenario, Model string
	Before, After   zdv1.Scenario
}

// BeforeAfter pairs every cell measured after the fixes with its
// measurement before them, in the order of scs and models; measurements
// are keyed "scenario/model", as Measure returns them.
func BeforeAfter(before, after map[string]zdv1.Scenario, scs []suites.Scenario, models []suites.Model) []Pair {
	var out []Pair
	for _, sc := range scs {
		for _, m := range models {
			a, ok := after[sc.Name+"/"+m.Name]
			if !ok {
				continue
			}
			out = append(out, Pair{Scenario: sc.Name, Model: m.Name, Before: before[sc.Name+"/"+m.Name], After: a})
		}
	}
	return out
}

// LeftOut is a scenario left out, and why.
type LeftOut struct {
	Scenario string
	Why      string
}

// LeaveOut drops the scenarios out selects and says why of each.
func LeaveOut(scs []suites.Scenario, out func(suites.Scenario) bool, why string) (keep []suites.Scenario, left []LeftOut) {
	for _, sc := range scs {
		if out(sc) {
			left = append(left, LeftOut{Scenario: sc.Name, Why: why})
			continue
		}
		keep = append(keep, sc)
	}
	return keep, left
}

// Scenarios are the disruptions a user's workload can meet as written.
func Scenarios() []suites.Scenario {
	var out []suites.Scenario
	for _, sc := range suites.Scenarios() {
		if sc.Own {
			out = append(out, sc)
		}
	}
	return out
}

// Measure runs the scenarios' cells that pick selects on s, each expecting
// the doctor's prediction, and returns their results by "scenario/model".
func Measure(ctx context.Context, sess *suites.Session, scs []suites.Scenario, profile fixtures.Hardening, s *standin.StandIn,
	preds Predictions, pick func(suites.Scenario, suites.Model) bool, progress func(string)) map[string]zdv1.Scenario {
	out := map[string]zdv1.Scenario{}
	for _, sc := range scs {
		var models []suites.Model
		for _, m := range sess.Suite.Models {
			if pick(sc, m) {
				models = append(models, m)
			}
		}
		if len(models) == 0 {
			continue
		}
		cells := sc.OwnCells(models, profile, s, func(m suites.Model) *zdv1.Expectation { return preds[sc.Name][m.Name].Expectation() })
		progress(fmt.Sprintf("%s (%s): %d LB models", sc.Name, profile, len(cells)))
		// A shared node or pool disruption goes where most witnesses have
		// Pods; a witness whose Pods ran elsewhere (a single replica) was
		// not met, and runs again with the others not met, until each was
		// (a lone witness always is).
		record := func(cell suites.Cell, res scenario.Result) {
			r := suites.CellResult(sc, cell, res)
			out[sc.Name+"/"+cell.Model.Name] = r
			if err := sess.Collector.Add(r); err != nil {
				progress("report: " + err.Error())
			}
		}
		var prior []scenario.Result // the pending cells' results so far
		for pending := cells; len(pending) > 0; {
			var res []scenario.Result
			if prior == nil {
				res = sess.Suite.RunScenario(ctx, sc, pending)
			} else {
				// Measurements the load spoiled before stay listed.
				res = sess.Suite.RunScenarioAgain(ctx, sc, pending, prior)
			}
			var again []int
			for i, cell := range pending {
				var nm *suites.NotMetError
				if len(pending) > 1 && errors.As(res[i].Err, &nm) {
					again = append(again, i)
					continue
				}
				record(cell, res[i])
			}
			if len(again) == len(pending) {
				// None was met: repeating it cannot do better.
				for _, i := range again {
					record(pending[i], res[i])
				}
				break
			}
			var next []suites.Cell
			prior = nil
			for _, i := range again {
				progress(fmt.Sprintf("%s on %s: not met (its Pods ran elsewhere): again", sc.Name, pending[i].Model.Name))
				next = append(next, pending[i])
				prior = append(prior, res[i])
			}
			pending = next
		}
	}
	return out
}

// FixForEvery is the doctor's fix of ms for every column's LB in turn,
// the longest lag first: a fix only adds or lengthens (a preStop is never
// shortened), so what one column needs stays for the next, and a column
// whose LB wants a change of its own (gclb's BackendConfig, which points
// its check at kube-proxy) gets it besides the longest preStop.
func FixForEvery(ms *doctor.Manifests, models []suites.Model, kubeMinor int) (*doctor.Manifests, []doctor.Applied) {
	var ps []doctor.LBProfile
	for _, m := range models {
		if p, ok := doctor.LookupProfile(m.Name); ok {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].RemovalLag() > ps[j].RemovalLag() })
	fixed, all := ms, []doctor.Applied(nil)
	for _, p := range ps {
		var applied []doctor.Applied
		fixed, applied = doctor.Fix(fixed, doctor.WithLBProfile(p), doctor.WithKubernetesMinor(kubeMinor))
		all = append(all, applied...)
	}
	return fixed, all
}

// Unfixed is a finding that still predicts drops in the fixed manifests,
// on the LB models named, with why the doctor could not write its fix.
type Unfixed struct {
	doctor.Unfixed
	Models []string
}

func (u Unfixed) String() string {
	return fmt.Sprintf("%s %s (%s): %s", u.RuleID, u.Object, strings.Join(u.Models, ", "), u.Reason)
}

// UnfixedIn lists what still predicts drops for service in the fixed
// manifests, judged as the predictions are (the Service named for each
// model in turn, the disruptions of scs), and why the doctor could not fix
// it; the same finding on several models is listed once, naming them.
func UnfixedIn(fixed *doctor.Manifests, service string, models []suites.Model, scs []suites.Scenario, kubeMinor int) ([]Unfixed, error) {
	met := func(id string) bool {
		rule, ok := doctor.RuleByID(id)
		return ok && slices.ContainsFunc(scs, func(sc suites.Scenario) bool {
			return slices.ContainsFunc(rule.Triggers, func(t incident.Trigger) bool { return slices.Contains(sc.OwnTriggerSet(), t) })
		})
	}
	objs := typedObjects(fixed)
	var out []Unfixed
	at := map[string]int{}
	for _, m := range models {
		if _, ok := doctor.LookupProfile(m.Name); !ok {
			continue
		}
		ms, err := onModel(objs, service, m.Name)
		if err != nil {
			return nil, err
		}
		for _, u := range doctor.Unfixable(ms, doctor.WithKubernetesMinor(kubeMinor)) {
			if u.Service != service || !met(u.RuleID) {
				continue
			}
			if i, ok := at[u.String()]; ok {
				out[i].Models = append(out[i].Models, m.Name)
				continue
			}
			at[u.String()] = len(out)
			out = append(out, Unfixed{Unfixed: u, Models: []string{m.Name}})
		}
	}
	return out, nil
}

// WithUnfixed is p with why the doctor could not fix each rule of a cell
// that still predicts drops added to that cell's Why, so the expectation
// each measured cell carries into report.json says it.
func (p Predictions) WithUnfixed(unfixed []Unfixed) Predictions {
	out := Predictions{}
	for sc, byModel := range p {
		out[sc] = map[string]Prediction{}
		for model, pr := range byModel {
			for _, u := range unfixed {
				if pr.Outcome == doctor.PredictDrops && slices.Contains(pr.Rules, u.RuleID) && slices.Contains(u.Models, model) {
					pr.Why += "; not fixed by the doctor: " + u.Unfixed.String()
				}
			}
			out[sc][model] = pr
		}
	}
	return out
}

// WriteFixed writes the objects Fix changed, whole, with the changes as a
// comment on top, and what it could not fix with why: the user applies
// them or diffs them against their own.
func WriteFixed(path string, fixed, orig *doctor.Manifests, applied []doctor.Applied, unfixed []Unfixed) error {
	var objs []runtime.Object
	for i, o := range fixed.Objects {
		ro, ok := o.Obj.(runtime.Object)
		// Objects past the original's are new (a budget the fix adds).
		if !ok || (i < len(orig.Objects) && equality.Semantic.DeepEqual(o.Obj, orig.Objects[i].Obj)) {
			continue
		}
		objs = append(objs, ro)
	}
	b, err := fixtures.RenderYAML(objs...)
	if err != nil {
		return err
	}
	var head strings.Builder
	head.WriteString("# zerodrop test --prove-fix: the objects the doctor changed or added, whole.\n")
	for _, a := range applied {
		head.WriteString("# - " + a.String() + "\n")
	}
	if len(unfixed) > 0 {
		head.WriteString("# Not fixed: these still predict drops, and the doctor cannot write their fix.\n")
		for _, u := range unfixed {
			head.WriteString("# - not fixed: " + u.String() + "\n")
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(head.String()), b...), 0o644)
}

// Triggers selects the scenarios whose disruption does t to a user's
// workload.
func Triggers(t incident.Trigger) func(suites.Scenario) bool {
	return func(sc suites.Scenario) bool { return slices.Contains(sc.OwnTriggerSet(), t) }
}

// Pick is the disruptions named in only (comma-separated), or all of
// Scenarios when it is empty; an unknown name is an error naming the known.
func Pick(only string) ([]suites.Scenario, error) {
	all := Scenarios()
	if only == "" {
		return all, nil
	}
	var out []suites.Scenario
	var names []string
	for _, sc := range all {
		names = append(names, sc.Name)
	}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, sc := range all {
			if sc.Name == n {
				out, found = append(out, sc), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is not a disruption a workload of yours can meet here (%s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Settings are the suite's settings for a user's workload: the
// environment's, with the flags on top and the columns chosen.
func Settings(getenv func(string) string, provider, clusterName, kubeconfig, outDir, lbs string, ms *doctor.Manifests, own *standin.StandIn) (suites.Settings, error) {
	env := map[string]string{"PROVIDER": provider, "CLUSTER_NAME": clusterName, "ZERODROP_KUBECONFIG": kubeconfig, "ZERODROP_OUT": outDir}
	names := suites.ModelList(lbs)
	if len(names) == 0 {
		names = impliedLB(ms, own)
	}
	cloud := []string{}
	metallb := len(names) == 0
	for _, n := range names {
		if n == "metallb" {
			metallb = true
		} else {
			cloud = append(cloud, n)
		}
	}
	switch {
	case provider == "existing":
		env["LB_PROFILE"] = strings.Join(names, ",")
	case metallb && len(cloud) == 0 && len(names) > 0:
		env["LB"] = "metallb"
	case !metallb:
		env["LB"], env["LB_PROFILE"] = "cloud", strings.Join(cloud, ",")
	default:
		env["LB"], env["LB_PROFILE"] = "all", strings.Join(cloud, ",")
	}
	get := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}
	abs, err := filepath.Abs(".")
	if err != nil {
		return suites.Settings{}, err
	}
	return suites.SettingsFromEnv(get, abs)
}

// impliedLB is the one LB model the input implies: the Pod-targeted LB of
// the Ingress in front of a Service that is not a LoadBalancer itself, or
// the one the Service's annotations name, if they name exactly one the
// cloud LB runs (the doctor's reading); none means every model.
func impliedLB(ms *doctor.Manifests, own *standin.StandIn) []string {
	if own.Profile != "" {
		return []string{own.Profile} // the LB the Ingress in front implies
	}
	rep := doctor.Check(ms)
	for _, s := range rep.Services {
		if s.Service == own.Service && !strings.Contains(s.Profile, ",") && s.Profile != "" {
			if _, ok := doctor.LookupProfile(s.Profile); ok {
				return []string{s.Profile}
			}
		}
	}
	return nil
}

// Prediction is the doctor's answer for one cell.
type Prediction struct {
	doctor.Prediction
	// Unknown: the doctor has no profile for the model.
	Unknown bool
	Why     string
}

func (p Prediction) String() string {
	switch {
	case p.Unknown:
		return "?"
	case len(p.Rules) > 0:
		return string(p.Outcome) + " (" + strings.Join(p.Rules, ",") + ")"
	}
	return string(p.Outcome)
}

// Expectation is the prediction as a documentation cell's expected
// outcome: a measurement that differs is flagged UNEXPECTED in the report.
func (p Prediction) Expectation() *zdv1.Expectation {
	switch {
	case p.Unknown:
		return &zdv1.Expectation{Why: "the doctor has no profile for this LB model"}
	case p.Outcome == doctor.PredictDrops:
		return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardReproduced, Why: "the doctor predicts drops: " + p.Why}
	case p.Outcome == doctor.PredictClean:
		return &zdv1.Expectation{Outcome: zdv1.OutcomeHazardNotReproduced, Why: "the doctor finds nothing this disruption meets"}
	}
	return &zdv1.Expectation{Why: "the doctor warns (" + p.Why + ") but cannot tell: either outcome"}
}

// predict runs the doctor once per LB model on objs with the Service
// (service, "service/ns/name") named for that model, as the suite deploys
// it (the zerodrop.dev/lb-profile annotation), and reads its prediction for
// every scenario: [scenario][model]. On the user's manifests this is what
// the doctor says of them on each LB; on the stand-in as deployed it is
// what the measurement is compared with (the stand-in's changes included).
func predict(objsOn func(suites.Model) []runtime.Object, service string, models []suites.Model, scs []suites.Scenario, kubeMinor int) (Predictions, error) {
	out := map[string]map[string]Prediction{}
	for _, sc := range scs {
		out[sc.Name] = map[string]Prediction{}
	}
	for _, m := range models {
		if _, ok := doctor.LookupProfile(m.Name); !ok {
			for _, sc := range scs {
				out[sc.Name][m.Name] = Prediction{Unknown: true}
			}
			continue
		}
		ms, err := onModel(objsOn(m), service, m.Name)
		if err != nil {
			return nil, err
		}
		// A scenario that shuts nodes down is judged for the kubelet
		// setting it gives them (ZD025); one report per setting.
		reports := map[string]*doctor.Report{}
		for _, sc := range scs {
			key, opts := "", []doctor.Option{doctor.WithKubernetesMinor(kubeMinor)}
			if g := sc.NodeShutdown; g != nil {
				key, opts = g.String(), append(opts, doctor.WithNodeShutdown(*g))
			}
			rep, ok := reports[key]
			if !ok {
				rep = doctor.Check(ms, opts...)
				reports[key] = rep
			}
			p := Prediction{Prediction: rep.Predict(service, sc.OwnTriggerSet())}
			var why []string
			for _, f := range rep.Findings {
				for _, id := range p.Rules {
					if f.RuleID == id && f.Service == service {
						why = append(why, id+" "+f.Message)
					}
				}
			}
			p.Why = strings.Join(why, "; ")
			out[sc.Name][m.Name] = p
		}
	}
	return out, nil
}

// onModel is objs with the Service named service annotated for LB model
// name, read back as the doctor reads manifests.
func onModel(objs []runtime.Object, service, model string) (*doctor.Manifests, error) {
	var cp []runtime.Object
	for _, o := range objs {
		o = o.DeepCopyObject()
		if svc, ok := o.(*corev1.Service); ok {
			ns := svc.Namespace
			if ns == "" {
				ns = "default"
			}
			if "service/"+ns+"/"+svc.Name == service {
				if svc.Annotations == nil {
					svc.Annotations = map[string]string{}
				}
				svc.Annotations[contract.LBProfileAnnotation] = model
			}
		}
		cp = append(cp, o)
	}
	b, err := fixtures.RenderYAML(cp...)
	if err != nil {
		return nil, err
	}
	return doctor.Read(service+" on "+model, bytes.NewReader(b))
}

// typedObjects are the objects the doctor decoded (the kinds it analyses).
func typedObjects(ms *doctor.Manifests) []runtime.Object {
	var out []runtime.Object
	for _, o := range ms.Objects {
		if ro, ok := o.Obj.(runtime.Object); ok {
			ro = ro.DeepCopyObject()
			if mo, ok := ro.(metav1.Object); ok && mo.GetNamespace() == "" {
				mo.SetNamespace(o.Namespace)
			}
			out = append(out, ro)
		}
	}
	return out
}

// Predict gives the doctor's predictions for the user's manifests and
// for the stand-in as deployed.
func Predict(ms *doctor.Manifests, own *standin.StandIn, models []suites.Model, scs []suites.Scenario, kubeMinor int) (user, deployed Predictions, err error) {
	objs := typedObjects(ms)
	if user, err = predict(func(suites.Model) []runtime.Object { return objs }, own.Service, models, scs, kubeMinor); err != nil {
		return nil, nil, fmt.Errorf("predict for the manifests: %w", err)
	}
	// As each cell deploys it: with the model's readiness gate where the
	// user's Pods would carry that vendor's (suites' cell spec, GateFor).
	onCell := func(m suites.Model) []runtime.Object {
		cell := own.In(own.Namespace)
		if m.Cloud {
			cell.GateFor(m.Profile)
		}
		return cell.Objects()
	}
	if deployed, err = predict(onCell, "service/"+own.Namespace+"/"+own.ServiceName, models, scs, kubeMinor); err != nil {
		return nil, nil, fmt.Errorf("predict for the stand-in: %w", err)
	}
	return user, deployed, nil
}

// ServingReadiness is the readiness probe of s's serving container.
func ServingReadiness(s *standin.StandIn) *corev1.Probe {
	tpl, _, _ := s.Spec()
	for _, c := range tpl.Spec.Containers {
		if c.Name == s.Serving.Name {
			return c.ReadinessProbe
		}
	}
	return nil
}

// HasSleepAction reports whether a container of s's Pods has a kubelet
// sleep action as a hook.
func HasSleepAction(s *standin.StandIn) bool {
	tpl, _, _ := s.Spec()
	for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
		if l := c.Lifecycle; l != nil && ((l.PreStop != nil && l.PreStop.Sleep != nil) || (l.PostStart != nil && l.PostStart.Sleep != nil)) {
			return true
		}
	}
	return false
}
