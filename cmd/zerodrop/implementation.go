package main

import (
	"flag"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// implFlags are the flags that fill report.json's implementation block:
// what was tested and who stands behind the report, for a vendor's
// submission.
type implFlags struct {
	org, project, url, version          *string
	lb, lbVersion, platform, platformVs *string
	contact                             stringList
}

func addImplementationFlags(fs *flag.FlagSet) *implFlags {
	f := &implFlags{
		org:        fs.String("org", "", "report: `ORGANIZATION` that maintains the implementation under test"),
		project:    fs.String("project", "", "report: `NAME` of the implementation (project or repository) under test"),
		url:        fs.String("project-url", "", "report: `URL` to read about the implementation"),
		version:    fs.String("project-version", "", "report: `VERSION` of the implementation tested"),
		lb:         fs.String("lb", "", "report: `NAME` of the load balancer under test (default: what the run recorded)"),
		lbVersion:  fs.String("lb-version", "", "report: `VERSION` of the load balancer under test"),
		platform:   fs.String("platform", "", "report: `NAME` of the platform under test, e.g. GKE (default: the run's provider)"),
		platformVs: fs.String("platform-version", "", "report: `VERSION` of the platform under test"),
	}
	fs.Var(&f.contact, "contact", "report: how to reach the maintainers (@user, @org/team, e-mail or URL); repeat for several")
	return f
}

// implementation is what the flags say, nil when none was given; an
// invalid one (a URL that is not one) is an error for bad input.
func (f *implFlags) implementation() (*zdv1.Implementation, error) {
	i := &zdv1.Implementation{
		Organization: strings.TrimSpace(*f.org), Project: strings.TrimSpace(*f.project), URL: strings.TrimSpace(*f.url),
		Version: strings.TrimSpace(*f.version), LoadBalancer: strings.TrimSpace(*f.lb), LoadBalancerVersion: strings.TrimSpace(*f.lbVersion),
		Platform: strings.TrimSpace(*f.platform), PlatformVersion: strings.TrimSpace(*f.platformVs), Contact: f.contact,
	}
	if i.Empty() {
		return nil, nil
	}
	if err := i.Validate(); err != nil {
		return nil, err
	}
	return i, nil
}

// reportExtras are the report-level blocks a command adds besides the run
// metadata.
type reportExtras struct {
	impl *zdv1.Implementation
	set  *zdv1.ScenarioSet
}
