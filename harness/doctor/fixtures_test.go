package doctor

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
)

func fixtureReport(t *testing.T, opts []fixtures.Option, check ...Option) *Report {
	t.Helper()
	w, err := fixtures.New(opts...)
	if err != nil {
		t.Fatalf("fixtures.New: %v", err)
	}
	out, err := w.RenderYAML()
	if err != nil {
		t.Fatalf("RenderYAML: %v", err)
	}
	ms, err := Read("fixture.yaml", bytes.NewReader(out))
	if err != nil {
		t.Fatalf("Read rendered fixture: %v\n%s", err, out)
	}
	if len(check) == 0 {
		// The fixtures design for generic unless told otherwise.
		g, _ := LookupProfile(DefaultProfile)
		check = []Option{WithLBProfile(g)}
	}
	return Check(ms, check...)
}

func ids(r *Report, sev Severity) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Severity == sev {
			out = append(out, f.RuleID)
		}
	}
	sort.Strings(out)
	return out
}

// TestFixtureProfiles: the naive profile has the seeds' hazards, the hardened
// profile has none at error level, for both policies and every PDB mode.
func TestFixtureProfiles(t *testing.T) {
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	tests := []struct {
		name     string
		opts     []fixtures.Option
		errors   []string
		warnings []string
	}{
		{name: "naive Local", opts: []fixtures.Option{fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(local)},
			errors: []string{"ZD002"}, warnings: []string{"ZD010", "ZD033"}},
		{name: "naive Local blocking PDB (incident drain-local-pdb)", opts: []fixtures.Option{fixtures.WithHardening(fixtures.Naive), fixtures.WithPDB(fixtures.PDBBlocking)},
			errors: []string{"ZD002", "ZD020"}, warnings: []string{"ZD010", "ZD033"}},
		{name: "naive Cluster", opts: []fixtures.Option{fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(cluster)},
			errors: nil, warnings: []string{"ZD004"}},
		{name: "hardened Local", opts: []fixtures.Option{fixtures.WithHardening(fixtures.Hardened), fixtures.WithPolicy(local)}},
		{name: "hardened Cluster", opts: []fixtures.Option{fixtures.WithHardening(fixtures.Hardened), fixtures.WithPolicy(cluster)}},
		{name: "hardened with a blocking PDB still gets ZD020", opts: []fixtures.Option{fixtures.WithPDB(fixtures.PDBBlocking)},
			errors: []string{"ZD020"}},
		{name: "hardened pinned to a pool and LB pinned to it", opts: []fixtures.Option{fixtures.WithPools("pool-a"), fixtures.WithLBPool("pool-a")}},
		// The fronts: the doctor reads Traefik's and HAProxy's own shutdown.
		{name: "naive Traefik, Cluster", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontTraefik), fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(cluster)},
			warnings: []string{"ZD004"}},
		{name: "hardened Traefik, Cluster", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontTraefik), fixtures.WithPolicy(cluster)}},
		{name: "naive HAProxy, Cluster", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontHAProxy), fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(cluster)},
			warnings: []string{"ZD004"}},
		{name: "hardened HAProxy, Cluster", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontHAProxy), fixtures.WithPolicy(cluster)}},
		{name: "naive HAProxy, Local: its hard stop at SIGTERM", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontHAProxy), fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(local)},
			errors: []string{"ZD002"}, warnings: []string{"ZD010", "ZD033"}},
		{name: "naive Traefik, Local", opts: []fixtures.Option{fixtures.WithFront(fixtures.FrontTraefik), fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy(local)},
			errors: []string{"ZD002"}, warnings: []string{"ZD010", "ZD033"}},
		{name: "hardened with the LB pinned elsewhere (incident nodepool-backend)", opts: []fixtures.Option{fixtures.WithPools("pool-a"), fixtures.WithLBPool("pool-b")},
			errors: []string{"ZD011"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fixtureReport(t, tc.opts)
			if got := ids(r, Error); strings.Join(got, ",") != strings.Join(tc.errors, ",") {
				t.Errorf("errors = %v, want %v; %s", got, tc.errors, summary(r))
			}
			if got := ids(r, Warning); strings.Join(got, ",") != strings.Join(tc.warnings, ",") {
				t.Errorf("warnings = %v, want %v; %s", got, tc.warnings, summary(r))
			}
			if len(r.Services) != 1 || len(r.Services[0].Workloads) != 1 {
				t.Errorf("services = %+v, want the fixture's one Service with its Deployment", r.Services)
			}
		})
	}
}

// TestHardenedMatchesEveryProfile: a hardened fixture built for a vendor's
// health-check timing passes the doctor with that vendor's profile, and a
// fixture built for a faster LB fails against a slower one.
func TestHardenedMatchesEveryProfile(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			// A Service whose recipe names a BackendConfig (gclb Local) pins
			// its healthCheckNodePort, so the whole workload carries it.
			r := fixtureReport(t, []fixtures.Option{fixtures.WithLB(p.Profile), fixtures.WithHealthCheckNodePort(31234)}, WithLBProfile(p))
			if got := ids(r, Error); len(got) > 0 {
				t.Errorf("hardened fixture for %s has errors %v; %s", p.Name, got, summary(r))
			}
		})
	}
	fast, _ := LookupProfile("azure-lb")
	slow, _ := LookupProfile("aws-elb")
	r := fixtureReport(t, []fixtures.Option{fixtures.WithLB(fast.Profile)}, WithLBProfile(slow))
	if got := bySeverity(r)["ZD002"]; got != Error {
		t.Errorf("fixture tuned for azure-lb checked against aws-elb: ZD002 = %v, want error", got)
	}
}

// TestProfilesAreTheStockProfiles: the doctor reads every LB profile of
// clusters/lb/profiles and its numbers, so the doctor, the fixtures and the
// cloud LB cannot disagree on a vendor's timing.
func TestProfilesAreTheStockProfiles(t *testing.T) {
	stock, err := profiles.Stock()
	if err != nil {
		t.Fatal(err)
	}
	got := Profiles()
	if len(got) != len(stock) {
		t.Fatalf("doctor has %d profiles, clusters/lb/profiles %d", len(got), len(stock))
	}
	for _, d := range got {
		p := stock[d.Name]
		if d.Interval != p.HealthCheck.Interval.D() || d.RemovalLag() != p.RemovalLag() || d.AdditionLag() != p.AdditionLag() ||
			d.FollowsServing != p.FollowsServing() || d.Source == "" {
			t.Errorf("%s: doctor view %+v does not carry the profile's numbers %+v", d.Name, d, p.HealthCheck)
		}
	}
	for name, want := range map[string]time.Duration{"generic": 30 * time.Second, "gcp-nlb": 24 * time.Second, "aws-elb": time.Minute, "metallb": time.Second} {
		if p, ok := LookupProfile(name); !ok || p.RemovalLag() != want {
			t.Errorf("%s removal lag = %v (found %v), want %v", name, p.RemovalLag(), ok, want)
		}
	}
	if p, _ := LookupProfile("azure-basic"); !p.SinglePool {
		t.Error("azure-basic must be single-pool (incident nodepool-backend)")
	}
}

// TestFixesAreTheRecipe: the doctor's fix of a naive workload sets the
// preStop and minReadySeconds the bundled hardened workload has, for every
// LB profile and both policies (both read harness/recipe).
func TestFixesAreTheRecipe(t *testing.T) {
	for _, p := range Profiles() {
		for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal} {
			t.Run(p.Name+"/"+string(policy), func(t *testing.T) {
				hard, err := fixtures.NewConfig(fixtures.WithLB(p.Profile), fixtures.WithPolicy(policy))
				if err != nil {
					t.Fatal(err)
				}
				naive, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithLB(p.Profile), fixtures.WithPolicy(policy))
				if err != nil {
					t.Fatal(err)
				}
				out, err := naive.RenderYAML()
				if err != nil {
					t.Fatal(err)
				}
				ms, err := Read("naive.yaml", bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				fixed, applied := Fix(ms, WithLBProfile(p))
				var d *appsv1.Deployment
				for _, o := range fixed.Objects {
					if dd, ok := o.Obj.(*appsv1.Deployment); ok {
						d = dd
					}
				}
				if d == nil {
					t.Fatalf("no Deployment after Fix (applied %v)", applied)
				}
				c := d.Spec.Template.Spec.Containers[0]
				if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
					t.Fatalf("fixed container has no preStop sleep (applied %v)", applied)
				}
				if got, want := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second, hard.PreStopSleep; got != want {
					t.Errorf("fixed preStop %v, hardened fixture %v (applied %v)", got, want, applied)
				}
				// minReadySeconds is the LB's addition lag where nothing else
				// waits for the LB: with Local on a node-based LB, and behind
				// Pod targets without the vendor's readiness gate (which,
				// where the naive Pods already carry it, needs no fix).
				gated := len(hard.ReadinessGates) > 0 && namesGate(&d.Spec.Template, hard.ReadinessGates[0])
				if (policy == corev1.ServiceExternalTrafficPolicyLocal || p.PodBackends) && !gated && d.Spec.MinReadySeconds != hard.MinReadySeconds {
					t.Errorf("fixed minReadySeconds %d, hardened fixture %d (applied %v)", d.Spec.MinReadySeconds, hard.MinReadySeconds, applied)
				}
				// A gate the vendor injects by namespace label comes as the
				// labelled Namespace (the fixture writes it into the template,
				// as no webhook runs in the test cluster).
				injected := false
				for _, o := range fixed.Objects {
					if ns, ok := o.Obj.(*corev1.Namespace); ok && ns.Name == d.Namespace {
						g := p.Profile.ReadinessGate()
						injected = g != nil && g.InjectedIn(ns.Labels)
					}
				}
				for _, g := range hard.ReadinessGates {
					if !namesGate(&d.Spec.Template, g) && !injected {
						t.Errorf("the hardened fixture names readiness gate %s; the fixed workload does not (applied %v)", g, applied)
					}
				}
				// The check the recipe asks the LB for comes with the fix: a
				// BackendConfig on the Service's pinned healthCheckNodePort.
				var bc *Object
				var svc *corev1.Service
				for _, o := range fixed.Objects {
					if backendConfigOf(o) != nil {
						bc = o
					}
					if s, ok := o.Obj.(*corev1.Service); ok {
						svc = s
					}
				}
				if (bc != nil) != (hard.LBCheck != nil) {
					t.Fatalf("fixed manifests carry BackendConfig %v, the hardened fixture asks for %v (applied %v)", bc != nil, hard.LBCheck, applied)
				}
				if bc != nil {
					hc, _, err := profiles.DecodeBackendConfigHealthCheck(backendConfigOf(bc).Object)
					eff, werr := p.Profile.WithBackendConfig(hc)
					if err != nil || werr != nil || !eff.AsksKubeProxy(svc.Spec.HealthCheckNodePort) || eff.RemovalLag() != hard.LBCheck.DetectionTime() {
						t.Errorf("fixed BackendConfig %+v (%v, %v) on Service port %d: want the recipe's check %+v on it",
							hc, err, werr, svc.Spec.HealthCheckNodePort, *hard.LBCheck)
					}
					if name, _ := profiles.ServiceBackendConfig(svc); name != bc.Name {
						t.Errorf("the fixed Service names BackendConfig %q, the fix added %q", name, bc.Name)
					}
				}
			})
		}
	}
}
