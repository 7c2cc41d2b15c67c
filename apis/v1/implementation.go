package v1

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Implementation names what a report tested and who stands behind it, the
// way Gateway API's ConformanceReport names its implementation
// (sigs.k8s.io/gateway-api conformance/apis/v1, type Implementation:
// organization, project, url, version, contact), plus the two things a
// zerodrop verdict is about: the load balancer and the platform under
// test. Everything is as the submitter gave it (zerodrop analyze and load
// flags); the run's own view of the platform is RunMeta.
type Implementation struct {
	// Organization maintains the implementation: a company, group or
	// person.
	Organization string `json:"organization,omitempty"`
	// Project is the implementation's name or repository.
	Project string `json:"project,omitempty"`
	// URL is where to read about it (http or https).
	URL string `json:"url,omitempty"`
	// Version is the implementation's version that was tested.
	Version string `json:"version,omitempty"`
	// Contact reaches the maintainers: GitHub handles (@user,
	// @org/team), e-mail addresses or a support URL.
	Contact []string `json:"contact,omitempty"`
	// LoadBalancer and LoadBalancerVersion are the load balancer under
	// test ("metallb", "v0.14.9"); Platform and PlatformVersion the
	// platform it ran on ("GKE", "1.31.5-gke.1000").
	LoadBalancer        string `json:"loadBalancer,omitempty"`
	LoadBalancerVersion string `json:"loadBalancerVersion,omitempty"`
	Platform            string `json:"platform,omitempty"`
	PlatformVersion     string `json:"platformVersion,omitempty"`
}

// Empty reports whether nothing was given.
func (i *Implementation) Empty() bool {
	return i == nil || (i.Organization == "" && i.Project == "" && i.URL == "" && i.Version == "" && len(i.Contact) == 0 &&
		i.LoadBalancer == "" && i.LoadBalancerVersion == "" && i.Platform == "" && i.PlatformVersion == "")
}

// Validate checks what can be checked: a URL that is one, contacts that
// are not blank. An empty field is allowed: a report says what it was
// told, and a renderer shows what is missing.
func (i *Implementation) Validate() error {
	if i == nil {
		return nil
	}
	var errs []error
	if i.URL != "" {
		u, err := url.Parse(i.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("implementation url %q: want an http or https URL", i.URL))
		}
	}
	for _, c := range i.Contact {
		if strings.TrimSpace(c) == "" {
			errs = append(errs, errors.New("implementation contact: an entry is blank"))
		}
	}
	return errors.Join(errs...)
}

// Merge sets the fields given in o (non-empty) on i: a later command
// (zerodrop analyze) can add what an earlier one (the suite) did not know.
func (i *Implementation) Merge(o Implementation) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&i.Organization, o.Organization)
	set(&i.Project, o.Project)
	set(&i.URL, o.URL)
	set(&i.Version, o.Version)
	set(&i.LoadBalancer, o.LoadBalancer)
	set(&i.LoadBalancerVersion, o.LoadBalancerVersion)
	set(&i.Platform, o.Platform)
	set(&i.PlatformVersion, o.PlatformVersion)
	if len(o.Contact) > 0 {
		i.Contact = append([]string(nil), o.Contact...)
	}
}

// ScenarioSet names the scenarios a report ran and their version, like a
// conformance profile: two reports of the same set and version ran the
// same scenarios with the same criteria.
type ScenarioSet struct {
	// Name is "zerodrop-e2e" for the suite's scenarios, "load" for a
	// single `zerodrop load`.
	Name string `json:"name"`
	// Version is the zerodrop version that defines the set: scenarios are
	// code, so its version (git describe, "-dirty" with local changes)
	// changes with any scenario, case or criterion. Two reports of the same
	// set and version ran the same scenarios; different versions may
	// still have.
	Version string `json:"version"`
}

// Names of scenario sets.
const (
	// ScenarioSetLoad is one `zerodrop load` against a URL: its scenario is
	// whatever the flags said.
	ScenarioSetLoad = "load"
	// ScenarioSetE2E is the suite's scenarios (package zerodrop.dev/zerodrop/suites).
	ScenarioSetE2E = "zerodrop-e2e"
)

// SubmissionSummary is the paragraph a vendor attaches to a submission:
// what was tested, on what, with which scenarios, and how it went, from
// the report's own figures. It claims nothing the report does not hold
// (whether the report agrees with its run files is for `zerodrop report`
// to say). Summarize must have run.
func (r *Report) SubmissionSummary() string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "zerodrop %s: ", s.Status)
	impl := Implementation{}
	if r.Implementation != nil {
		impl = *r.Implementation
	}
	subject := join(" ", impl.Project, impl.Version)
	if subject == "" {
		subject = "an unnamed implementation"
	}
	if impl.Organization != "" {
		subject += " (" + impl.Organization + ")"
	}
	b.WriteString(subject)
	if lb := r.LoadBalancerText(); lb != "" {
		b.WriteString(", load balancer " + lb)
	}
	if platform := r.PlatformText(); platform != "" {
		b.WriteString(", on " + platform)
	}
	b.WriteString(". ")
	if set := r.ScenarioSet; set != nil {
		fmt.Fprintf(&b, "Scenario set %s %s", set.Name, set.Version)
	} else {
		b.WriteString("Scenario set not named")
	}
	assertions := s.Scenarios - s.Documentation
	fmt.Fprintf(&b, ": %d of %d assertion scenario(s) passed, %d failed, %d errored; %d documentation scenario(s) measured known hazards.",
		s.Passed, assertions, s.Failed, s.Errored, s.Documentation)
	if s.Remeasured > 0 {
		fmt.Fprintf(&b, " %d scenario(s) had a measurement spoiled by the load generator falling behind its schedule and were run again; the spoiled measurements are kept in the report.", s.Remeasured)
	}
	if !r.Run.Start.IsZero() {
		fmt.Fprintf(&b, " Run %s to %s UTC", r.Run.Start.UTC().Format("2006-01-02 15:04:05"), r.Run.End.UTC().Format("15:04:05"))
		if r.Run.ToolVersion != "" {
			fmt.Fprintf(&b, " with zerodrop %s", r.Run.ToolVersion)
		}
		b.WriteString(".")
	}
	if len(impl.Contact) > 0 {
		b.WriteString(" Contact: " + strings.Join(impl.Contact, ", ") + ".")
	}
	return b.String()
}

// LoadBalancerText names the load balancer under test: the submitter's
// name and version for it, else the run's LB implementation.
func (r *Report) LoadBalancerText() string {
	var impl Implementation
	if r.Implementation != nil {
		impl = *r.Implementation
	}
	return join(" ", or(impl.LoadBalancer, r.Run.LBImplementation), impl.LoadBalancerVersion)
}

// PlatformText names the platform the run measured: the submitter's
// platform (else the provider), the Kubernetes version, and kube-proxy's
// feature gates where the run changed any.
func (r *Report) PlatformText() string {
	var impl Implementation
	if r.Implementation != nil {
		impl = *r.Implementation
	}
	platform := join(" ", or(impl.Platform, r.Run.Provider), impl.PlatformVersion)
	if r.Run.KubernetesVersion != "" {
		platform = join(", ", platform, "Kubernetes "+r.Run.KubernetesVersion)
		if g := r.Run.KubeProxyFeatureGates; g != "" {
			platform += " (kube-proxy feature gates " + g + ")"
		}
	}
	return platform
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// join joins the non-empty parts with sep.
func join(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
