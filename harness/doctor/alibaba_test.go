package doctor

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// TestAlibabaSLB: a Service with Alibaba Cloud's annotations is judged as
// the CLB cloud-provider-alibaba-cloud builds (alibaba-slb), with the
// listener's health-check annotations read as that controller reads them:
// the lag is unhealthyThreshold x the longer of interval and the timeout
// of the check's type, so the issue's 6 s x 4 is 24 s, not aws-elb's 60 s.
func TestAlibabaSLB(t *testing.T) {
	const (
		pre    = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-"
		legacy = "service.beta.kubernetes.io/alicloud-loadbalancer-"
	)
	ann := func(kv ...string) string {
		var lines []string
		for i := 0; i+1 < len(kv); i += 2 {
			lines = append(lines, fmt.Sprintf("%s: %q", kv[i], kv[i+1]))
		}
		return strings.Join(lines, "\n")
	}
	prestop := func(s int) string { return fmt.Sprintf("lifecycle:\n  preStop:\n    sleep:\n      seconds: %d", s) }
	// The issue's Service: its own check every 6 s, 4 failures.
	issue := ann(pre+"health-check-flag", "on", pre+"health-check-type", "tcp", pre+"health-check-interval", "6",
		pre+"health-check-connect-timeout", "5", pre+"healthy-threshold", "2", pre+"unhealthy-threshold", "4")
	cases := []struct {
		name      string
		ann, spec string
		lifecycle string
		profile   string // ServiceSummary.Profile
		lag       string // ServiceSummary.LBLag
		choice    string // substring of LBChoice
		zd002     bool
		zd091     string // substring of a ZD091 message; "" none
	}{
		{name: "the issue's 6s x 4 outlasted by a 30 s preStop", ann: issue, lifecycle: prestop(30),
			profile: "alibaba-slb + Service annotations", lag: "6s x 4 = 24s", choice: "cloud-provider-alibaba-cloud's CLB"},
		{name: "the issue's 6s x 4 against a 20 s preStop", ann: issue, lifecycle: prestop(20),
			profile: "alibaba-slb + Service annotations", lag: "6s x 4 = 24s", zd002: true},
		// Defaults: 2 s interval, 5 s timeout, 3 failures; each failing
		// check may wait its timeout.
		{name: "any Alibaba annotation: the CLB's defaults", ann: ann(pre+"address-type", "intranet"), lifecycle: prestop(10),
			profile: "alibaba-slb", lag: "5s timeout x 3 = 15s", zd002: true},
		{name: "defaults outlasted", ann: ann(pre+"address-type", "intranet"), lifecycle: prestop(16), profile: "alibaba-slb", lag: "5s timeout x 3 = 15s"},
		{name: "the legacy alicloud prefix", ann: ann(legacy+"health-check-interval", "4", legacy+"unhealthy-threshold", "5"),
			profile: "alibaba-slb + Service annotations", lag: "5s timeout x 5 = 25s"},
		{name: "the new prefix wins over the legacy one", ann: ann(pre+"health-check-interval", "8", legacy+"health-check-interval", "1"),
			profile: "alibaba-slb + Service annotations", lag: "8s x 3 = 24s"},
		// A tcp check waits connect-timeout, an http one timeout.
		{name: "tcp check: connect-timeout", ann: ann(pre+"health-check-connect-timeout", "10", pre+"health-check-timeout", "1"),
			profile: "alibaba-slb + Service annotations", lag: "10s timeout x 3 = 30s"},
		{name: "http check: timeout", ann: ann(pre+"health-check-type", "http", pre+"health-check-connect-timeout", "10", pre+"health-check-timeout", "1"),
			profile: "alibaba-slb + Service annotations", lag: "2s x 3 = 6s"},
		{name: "unknown check type", ann: ann(pre+"health-check-type", "udp"), profile: "alibaba-slb", lag: "5s timeout x 3 = 15s", zd091: "neither tcp nor http"},
		{name: "not a number", ann: ann(pre+"unhealthy-threshold", "many"), profile: "alibaba-slb", lag: "5s timeout x 3 = 15s", zd091: "is not a count"},
		{name: "check switched off", ann: ann(pre+"health-check-switch", "off"), profile: "alibaba-slb", lag: "15s", zd091: "turns the listener's health check off"},
		// The port the check asks: the backend port (-520), kube-proxy's
		// healthCheckNodePort when it names the pinned one, else unknown.
		{name: "connect-port -520 is the backend port", ann: ann(pre+"health-check-connect-port", "-520"), profile: "alibaba-slb", lag: "15s"},
		{name: "connect-port the pinned healthCheckNodePort", ann: ann(pre+"health-check-connect-port", "31234"), spec: "healthCheckNodePort: 31234",
			profile: "alibaba-slb + Service annotations", lag: "15s"},
		{name: "connect-port another port", ann: ann(pre+"health-check-connect-port", "31235"), spec: "healthCheckNodePort: 31234",
			profile: "alibaba-slb", lag: "15s", zd091: "asks node port 31235, which is not this Service's healthCheckNodePort (31234)"},
		{name: "connect-port with no pinned port", ann: ann(pre+"health-check-connect-port", "31235"),
			profile: "alibaba-slb", lag: "15s", zd091: "not pinned"},
		// ENI backends: the Pods are the targets, which is said.
		{name: "ENI backends", ann: ann(pre+"address-type", "intranet", "service.beta.kubernetes.io/backend-type", "eni"),
			profile: "alibaba-slb", lag: "15s", choice: "Pods as backends, which no profile models"},
		// A class gives another LB (alibabacloud.com/nlb, the controller's
		// NLB): not the CLB.
		{name: "NLB class: not the CLB", ann: ann(pre+"address-type", "intranet"), spec: "loadBalancerClass: alibabacloud.com/nlb",
			profile: "any of aws-elb|", lag: "aws-elb 60s", zd002: true},
		{name: "class annotation: not the CLB", ann: ann(pre+"address-type", "intranet", "service.beta.kubernetes.io/class", "other"),
			profile: "any of aws-elb|", lag: "aws-elb 60s", zd002: true},
		// Alibaba's annotations change its profile only.
		{name: "named another LB: Alibaba annotations ignored", ann: ann("zerodrop.dev/lb-profile", "gcp-nlb", pre+"health-check-interval", "30"),
			profile: "gcp-nlb", lag: "8s x 3 = 24s"},
		{name: "named alibaba-slb by its alias", ann: ann("zerodrop.dev/lb-profile", "aliyun", pre+"unhealthy-threshold", "2"),
			profile: "alibaba-slb + Service annotations", lag: "5s timeout x 2 = 10s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := m{SvcAnnotations: c.ann, SvcSpec: c.spec, Lifecycle: c.lifecycle}.yaml(t)
			ms, err := Read("test.yaml", bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(ms)
			if len(r.Services) != 1 {
				t.Fatalf("%d services", len(r.Services))
			}
			s := r.Services[0]
			if !strings.HasPrefix(s.Profile, c.profile) || (c.profile == "alibaba-slb" && s.Profile != c.profile) ||
				!strings.Contains(s.LBLag, c.lag) || !strings.Contains(s.LBChoice, c.choice) {
				t.Errorf("lb = %q (%s; %s), want %q (%s; %s)", s.Profile, s.LBLag, s.LBChoice, c.profile, c.lag, c.choice)
			}
			got := bySeverity(r)
			if (got["ZD002"] == Error) != c.zd002 {
				t.Errorf("ZD002 = %v, want error %v; %s", got["ZD002"], c.zd002, summary(r))
			}
			var zd091 []string
			for _, f := range r.Findings {
				if f.RuleID == "ZD091" {
					zd091 = append(zd091, f.Message)
				}
			}
			said := slices.ContainsFunc(zd091, func(s string) bool { return strings.Contains(s, c.zd091) })
			if (c.zd091 == "" && len(zd091) > 0) || (c.zd091 != "" && !said) {
				t.Errorf("ZD091 = %q, want %q", zd091, c.zd091)
			}
		})
	}
}

// The connect port that is the pinned healthCheckNodePort makes the check
// kube-proxy's; the default asks the traffic port.
func TestAlibabaCheckTarget(t *testing.T) {
	base, ok := LookupProfile("alibaba-slb")
	if !ok || base.Profile.HealthCheck.Target != profiles.TargetTrafficPort || base.Profile.Emulated() {
		t.Fatalf("alibaba-slb: %+v (found %v); want a timing-only profile checking the traffic port", base.Profile.HealthCheck, ok)
	}
	doc := m{SvcAnnotations: `service.beta.kubernetes.io/alibaba-cloud-loadbalancer-health-check-connect-port: "31234"`, SvcSpec: "healthCheckNodePort: 31234"}.yaml(t)
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, so := range classify(ms, "default").services {
		c, problems := serviceProfile(so.Obj.(*corev1.Service), nil, nil, "")
		if len(problems) > 0 || len(c.profiles) != 1 || c.profiles[0].Profile.HealthCheck.Target != profiles.TargetKubeProxy {
			t.Errorf("profiles %+v, problems %v; want one asking kube-proxy", c.profiles, problems)
		}
	}
}
