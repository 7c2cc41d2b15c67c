package doctor

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// What Fix changes makes the findings it fixed go away, and only those
// the doctor can fix itself remain or go; the input is untouched.
func TestFixClearsWhatItFixes(t *testing.T) {
	const in = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: x
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
`
	m, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := LookupProfile("gcp-nlb")
	before := Check(m, WithLBProfile(prof))
	fixed, applied := Fix(m, WithLBProfile(prof))
	after := Check(fixed, WithLBProfile(prof))
	ids := func(r *Report) []string {
		var out []string
		for _, f := range r.Findings {
			if f.Severity >= Warning {
				out = append(out, f.RuleID)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, id := range ids(before) {
		if Fixable(id) && slices.Contains(ids(after), id) {
			t.Errorf("%s is fixable but still found after Fix (applied: %v)", id, applied)
		}
	}
	for _, id := range ids(after) {
		if Fixable(id) {
			t.Errorf("Fix left fixable finding %s", id)
		}
	}
	for _, want := range []string{"ZD002", "ZD012", "ZD020", "ZD032"} {
		if !slices.Contains(ids(before), want) {
			t.Errorf("the test input should show %s; it shows %v", want, ids(before))
		}
	}
	var d *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range fixed.Objects {
		switch x := o.Obj.(type) {
		case *appsv1.Deployment:
			d = x
		case *policyv1.PodDisruptionBudget:
			pdb = x
		}
	}
	c := d.Spec.Template.Spec.Containers[0]
	// gcp-nlb removes a node after 8 s x 3 = 24 s: a 29 s sleep, grace 44 s.
	if c.Lifecycle == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 29 ||
		*d.Spec.Template.Spec.TerminationGracePeriodSeconds != 44 || *d.Spec.Replicas != 2 ||
		d.Spec.Strategy.RollingUpdate == nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MinAvailable != nil {
		t.Errorf("fixed workload: lifecycle %+v grace %v replicas %v strategy %+v pdb %+v", c.Lifecycle,
			d.Spec.Template.Spec.TerminationGracePeriodSeconds, d.Spec.Replicas, d.Spec.Strategy, pdb.Spec)
	}
	// The input is untouched.
	if orig := m.Objects[0].Obj.(*appsv1.Deployment); orig.Spec.Template.Spec.Containers[0].Lifecycle != nil || *orig.Spec.Replicas != 1 {
		t.Error("Fix changed its input")
	}
	var lines []string
	for _, a := range applied {
		lines = append(lines, a.String())
	}
	if os.Getenv("V") != "" {
		t.Log(strings.Join(lines, "\n"))
	}
}

func TestFixPreStopKeepsWhatTheHookDoes(t *testing.T) {
	mk := func(hook string) *Manifests {
		y := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: x
        ports: [{containerPort: 80}]
        lifecycle: {preStop: ` + hook + `}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer, externalTrafficPolicy: Local, selector: {app: web}, ports: [{port: 80}]}
`
		m, err := Read("in.yaml", strings.NewReader(y))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	prof, _ := LookupProfile("gcp-nlb")
	hookOf := func(m *Manifests) string {
		for _, o := range m.Objects {
			if d, ok := o.Obj.(*appsv1.Deployment); ok {
				return show(d.Spec.Template.Spec.Containers[0].Lifecycle.PreStop)
			}
		}
		return ""
	}
	for _, tc := range []struct{ hook, want string }{
		{`{exec: {command: [/bin/sh, -c, "sleep 5 && nginx -s quit"]}}`, `{"exec":{"command":["/bin/sh","-c","sleep 29 \u0026\u0026 nginx -s quit"]}}`},
		{`{exec: {command: [/wait-shutdown]}}`, `{"sleep":{"seconds":29}}`},
		{`{exec: {command: [kong, quit]}}`, `{"exec":{"command":["kong","quit"]}}`},
		{`{sleep: {seconds: 3}}`, `{"sleep":{"seconds":29}}`},
	} {
		fixed, _ := Fix(mk(tc.hook), WithLBProfile(prof))
		if got := hookOf(fixed); got != tc.want {
			t.Errorf("hook %s fixed to %s, want %s", tc.hook, got, tc.want)
		}
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Without a budget, a pool drain that outpaces the LB (ZD024) is fixed by
// adding one: one eviction at a time; the new object is in the fixed
// manifests, the input is untouched, and ZD024 is gone.
func TestFixAddsABudget(t *testing.T) {
	const in = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: x
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}, initialDelaySeconds: 10, periodSeconds: 10}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
`
	m, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := LookupProfile("aws-nlb")
	has := func(r *Report, id string) bool {
		return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.RuleID == id })
	}
	if !has(Check(m, WithLBProfile(prof)), "ZD024") {
		t.Fatal("the input should show ZD024")
	}
	fixed, applied := Fix(m, WithLBProfile(prof))
	if has(Check(fixed, WithLBProfile(prof)), "ZD024") {
		t.Errorf("ZD024 left after Fix (applied %v)", applied)
	}
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range fixed.Objects {
		if p, ok := o.Obj.(*policyv1.PodDisruptionBudget); ok {
			pdb = p
		}
	}
	if pdb == nil || pdb.Namespace != "shop" || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntVal != 1 ||
		pdb.Spec.UnhealthyPodEvictionPolicy == nil || pdb.Spec.Selector.MatchLabels["app"] != "web" {
		t.Fatalf("added budget %+v", pdb)
	}
	if len(m.Objects) != 2 {
		t.Errorf("Fix added to its input: %d objects", len(m.Objects))
	}
	n := 0
	for _, a := range applied {
		if a.RuleID == "ZD024" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("ZD024 applied %d times: %v", n, applied)
	}
}

// TestFixSpreadPerRelease: the spread the fix writes refuses to schedule
// against it only where the scheduler can leave cordoned nodes out of its
// domains (1.26 on); before, it prefers, or a drain's rescheduled Pod
// would stay Pending.
func TestFixSpreadPerRelease(t *testing.T) {
	// The clean base manifest without its spread: ZD010 fires, Fix adds one.
	in := m{PodExtra: "-"}.yaml(t)
	for _, tc := range []struct {
		minor int // 0: release unknown
		want  corev1.UnsatisfiableConstraintAction
	}{{0, corev1.DoNotSchedule}, {37, corev1.DoNotSchedule}, {26, corev1.DoNotSchedule}, {25, corev1.ScheduleAnyway}} {
		if got, applied, _ := fixedSpread(t, in, tc.minor); len(got) != 1 || got[0].WhenUnsatisfiable != tc.want {
			t.Errorf("1.%d: spread %+v (applied %v), want one constraint, %s", tc.minor, got, applied, tc.want)
		}
	}
}

// fixedSpread fixes the manifest in for release 1.minor (0: unknown) and
// returns its Deployment's spread, the fixes applied and the options used.
func fixedSpread(t *testing.T, in []byte, minor int) ([]corev1.TopologySpreadConstraint, []Applied, []Option) {
	t.Helper()
	man, err := Read("in.yaml", bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var opts []Option
	if minor > 0 {
		opts = append(opts, WithKubernetesMinor(minor))
	}
	fixed, applied := Fix(man, opts...)
	var got []corev1.TopologySpreadConstraint
	for _, o := range fixed.Objects {
		if d, ok := o.Obj.(*appsv1.Deployment); ok {
			got = d.Spec.Template.Spec.TopologySpreadConstraints
		}
	}
	return got, applied, opts
}

// TestFixSpreadCountsTainted: before 1.26 the fix for ZD013 turns the
// user's own DoNotSchedule spread into ScheduleAnyway, after which the rule
// is quiet; from 1.26 the spread stays and honours taints.
func TestFixSpreadCountsTainted(t *testing.T) {
	in := m{PodExtra: noHonor}.yaml(t)
	fires := func(man *Manifests, opts []Option) bool {
		return slices.ContainsFunc(Check(man, opts...).Findings, func(f Finding) bool { return f.RuleID == "ZD013" })
	}
	for _, tc := range []struct {
		minor       int
		firesBefore bool
		want        corev1.UnsatisfiableConstraintAction
	}{{25, true, corev1.ScheduleAnyway}, {26, true, corev1.DoNotSchedule}, {37, true, corev1.DoNotSchedule}} {
		man, err := Read("in.yaml", bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		got, applied, opts := fixedSpread(t, in, tc.minor)
		if len(got) != 1 || got[0].WhenUnsatisfiable != tc.want {
			t.Errorf("1.%d: spread %+v (applied %v), want one constraint, %s", tc.minor, got, applied, tc.want)
		}
		if honored := len(got) == 1 && got[0].NodeTaintsPolicy != nil && *got[0].NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor; honored != (tc.minor >= 26) {
			t.Errorf("1.%d: nodeTaintsPolicy Honor %v, want %v", tc.minor, honored, tc.minor >= 26)
		}
		if fires(man, opts) != tc.firesBefore {
			t.Errorf("1.%d: ZD013 fires on the original: %v, want %v", tc.minor, !tc.firesBefore, tc.firesBefore)
		}
		fixed, _ := Fix(man, opts...)
		if fires(fixed, opts) {
			t.Errorf("1.%d: ZD013 still fires after the fix", tc.minor)
		}
	}
}

// A Pod is ready only while all its containers are: a sibling whose
// readiness gates the Pod gets the serving container's preStop sleep, so
// it does not stop first and take the endpoint out of serving while the
// LB still sends (NGINX Gateway Fabric: its controller beside nginx). A
// sibling without a probe, or with a long enough or non-sleep hook, is
// left alone.
func TestFixHoldsTheContainersThatGateReadiness(t *testing.T) {
	const in = `apiVersion: apps/v1
kind: Deployment
metadata: {name: gw}
spec:
  replicas: 2
  selector: {matchLabels: {app: gw}}
  template:
    metadata: {labels: {app: gw}}
    spec:
      containers:
      - name: controller
        image: x
        readinessProbe: {httpGet: {path: /readyz, port: 8081}}
      - name: nginx
        image: y
        ports: [{containerPort: 80}]
      - name: sidecar
        image: z
      - name: agent
        image: w
        readinessProbe: {httpGet: {path: /ready, port: 9000}}
        lifecycle: {preStop: {exec: {command: [agent, drain]}}}
---
apiVersion: v1
kind: Service
metadata: {name: gw}
spec: {type: LoadBalancer, externalTrafficPolicy: Local, selector: {app: gw}, ports: [{port: 80}]}
`
	m, err := Read("in.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := LookupProfile("gke-l4")
	fixed, applied := Fix(m, WithLBProfile(prof))
	want := map[string]string{
		"controller": `{"sleep":{"seconds":11}}`,
		"nginx":      `{"sleep":{"seconds":11}}`,
		"sidecar":    `null`,
		"agent":      `{"exec":{"command":["agent","drain"]}}`,
	}
	for _, o := range fixed.Objects {
		d, ok := o.Obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			var hook *corev1.LifecycleHandler
			if c.Lifecycle != nil {
				hook = c.Lifecycle.PreStop
			}
			if got := show(hook); got != want[c.Name] {
				t.Errorf("container %s: preStop %s, want %s", c.Name, got, want[c.Name])
			}
		}
	}
	said := false
	for _, a := range applied {
		said = said || strings.Contains(a.Change, "container controller (its readiness gates the Pod's)")
	}
	if !said {
		t.Errorf("the fix does not say it held the controller: %+v", applied)
	}
}

// ZD030's fix is a readiness probe that needs no path: a TCP connect to
// the port the Service sends to, by the name the container gives it, or
// the Service's number when the container declares none.
func TestFixGivesAReadinessProbe(t *testing.T) {
	for _, tc := range []struct {
		name, ports, target, want string
	}{
		{"a declared port by name", "ports: [{name: http, containerPort: 8080}]", "http", "http"},
		{"an undeclared port by number", "env: []", "8080", "8080"},
		// A TCP probe of a UDP port would never pass: no fix.
		{"a UDP port", "ports: [{containerPort: 53, protocol: UDP}]", "53, protocol: UDP", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n" +
				"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: x\n        " + tc.ports + "\n" +
				"---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: LoadBalancer\n  selector: {app: web}\n  ports: [{port: 80, targetPort: " + tc.target + "}]\n"
			m, err := Read("in.yaml", strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			prof, _ := LookupProfile("gcp-nlb")
			fixed, applied := Fix(m, WithLBProfile(prof))
			for _, f := range Check(fixed, WithLBProfile(prof)).Findings {
				if f.RuleID == "ZD030" && tc.want != "" {
					t.Errorf("ZD030 still found after Fix (applied %v): %s", applied, f.Message)
				}
			}
			var p *corev1.Probe
			for _, o := range fixed.Objects {
				if d, ok := o.Obj.(*appsv1.Deployment); ok {
					p = d.Spec.Template.Spec.Containers[0].ReadinessProbe
				}
			}
			if tc.want == "" {
				if p != nil {
					t.Errorf("readiness probe %+v, want none", p)
				}
				return
			}
			if p == nil || p.TCPSocket == nil || p.TCPSocket.Port.String() != tc.want || p.PeriodSeconds != 1 || p.FailureThreshold != 3 {
				t.Errorf("readiness probe %+v, want tcpSocket %s every 1 s, 3 failures", p, tc.want)
			}
		})
	}
}
