package suites

import (
	"context"
	"errors"
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestBrokenRunSaysWhatBroke(t *testing.T) {
	sc := Scenarios()[1] // a documentation cell first (the control has none)
	c := sc.Cells([]Model{{Name: "metallb"}})[0]
	got := brokenRun(sc, c, errors.New("deployment zd/echo did not roll out"))
	if got.Name != sc.Name+"/"+c.Name() || got.Verdict.Status != zdv1.Error || len(got.Verdict.Reasons) != 1 ||
		!strings.Contains(got.Verdict.Reasons[0].Message, "did not roll out") || got.Description != sc.Description ||
		got.Labels["lb"] != "metallb" || got.Expected == nil {
		t.Errorf("broken run = %+v", got)
	}
}

func TestSummaryPrintsTheOutcomeAndEveryReason(t *testing.T) {
	doc := zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "rolling-update/local/naive", Role: zdv1.RoleDocumentation},
		Results:      zdv1.Results{Total: 2000, Dropped: 75},
		Verdict: zdv1.Verdict{Status: zdv1.Pass, Reasons: []zdv1.Reason{
			{Check: "run", Status: zdv1.Pass, Message: "run complete"},
			{Check: "load", Status: zdv1.Pass, Message: "load delivered as scheduled"},
		}},
	}
	s := summary(doc)
	for _, want := range []string{"rolling-update/local/naive [documentation] hazard reproduced: 2000 requests, 75 dropped", "run complete", "load delivered"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(strings.SplitN(s, "\n", 2)[0], "PASS") {
		t.Errorf("a documentation case's summary says PASS:\n%s", s)
	}
}

func TestModelsAreTheMatrixColumns(t *testing.T) {
	names := func(ms []Model) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
			own := m.Name == "metallb" || m.Name == "metallb-bgp" || m.Name == "kube-vip-arp" || m.Name == "kube-vip-bgp"
			if m.Cloud == own || m.Profile.Name != m.Name {
				t.Errorf("model %+v: cloud flag or profile wrong", m)
			}
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		lb           string
		profiles     []string
		bgp, kubeVIP bool
		arpOnly      bool // ZERODROP_KUBE_VIP_BGP=0
		want         string
		wantErr      string
	}{
		// The implementations LB=all runs besides the cloud LB are
		// columns of their own, each where its setting is on and
		// LB_PROFILE names it or names nothing.
		{lb: "all", bgp: true, kubeVIP: true, want: "metallb,metallb-bgp,kube-vip-arp,kube-vip-bgp,aws-alb-ip,aws-nlb,aws-nlb-ip,azure-basic,azure-lb,gclb,gclb-neg,gcp-nlb,generic,gke-l4,gke-legacy"},
		{lb: "all", bgp: true, kubeVIP: true, arpOnly: true, want: "metallb,metallb-bgp,kube-vip-arp,aws-alb-ip,aws-nlb,aws-nlb-ip,azure-basic,azure-lb,gclb,gclb-neg,gcp-nlb,generic,gke-l4,gke-legacy"},
		{lb: "all", bgp: true, kubeVIP: true, arpOnly: true, profiles: []string{"kube-vip-bgp"}, want: "metallb"},
		{lb: "all", bgp: true, kubeVIP: true, profiles: []string{"kube-vip-arp"}, want: "metallb,kube-vip-arp"},
		{lb: "all", bgp: true, kubeVIP: true, profiles: []string{"kube-vip-arp", "gcp-nlb"}, want: "metallb,kube-vip-arp,gcp-nlb"},
		{lb: "all", bgp: true, profiles: []string{"kube-vip-arp"}, want: "metallb"},
		{lb: "all", kubeVIP: true, want: "metallb,kube-vip-arp,aws-alb-ip,aws-nlb,aws-nlb-ip,azure-basic,azure-lb,gclb,gclb-neg,gcp-nlb,generic,gke-l4,gke-legacy"},
		{lb: "all", bgp: true, kubeVIP: true, profiles: []string{"kube-vip-bgp", "metallb-bgp"}, want: "metallb,metallb-bgp,kube-vip-bgp"},
		{lb: "metallb", kubeVIP: true, want: "metallb"},
		{lb: "cloud", kubeVIP: true, profiles: []string{"kube-vip-arp"}, wantErr: "only LB=all runs"},
		{lb: "cloud", bgp: true, profiles: []string{"metallb-bgp"}, wantErr: "only LB=all runs"},
		{lb: "metallb", want: "metallb"},
		{lb: "all", profiles: []string{"gcp-nlb", "aws-nlb"}, want: "metallb,gcp-nlb,aws-nlb"},
		{lb: "cloud", profiles: []string{"gke-legacy"}, want: "gke-legacy"},
		{lb: "all", want: "metallb,aws-alb-ip,aws-nlb,aws-nlb-ip,azure-basic,azure-lb,gclb,gclb-neg,gcp-nlb,generic,gke-l4,gke-legacy"},
		{lb: "all", profiles: []string{"no-such-profile"}, wantErr: "no-such-profile"},
		{lb: "cloud", profiles: []string{"metallb"}, wantErr: "not a profile the cloud LB runs"},
		{lb: "all", profiles: []string{"aws-elb"}, wantErr: "not a profile the cloud LB runs"},
		{lb: "cloud", profiles: []string{"gclb-neg"}, want: "gclb-neg"},
		{lb: "all", profiles: []string{"gcp-nlb", "gcp-nlb"}, wantErr: "twice"},
	} {
		ms, err := Settings{LB: tc.lb, LBProfiles: tc.profiles, Provider: "kind", BGP: tc.bgp, KubeVIP: tc.kubeVIP, KubeVIPBGP: !tc.arpOnly}.Models()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LB=%s LB_PROFILE=%v: err %v, want %q", tc.lb, tc.profiles, err, tc.wantErr)
			}
			continue
		}
		if err != nil || names(ms) != tc.want {
			t.Errorf("LB=%s LB_PROFILE=%v: %s, %v; want %s", tc.lb, tc.profiles, names(ms), err, tc.want)
		}
	}
}

func TestAnExistingClusterIsOneColumn(t *testing.T) {
	ms, err := Settings{LB: "all", Provider: "existing", LBProfiles: []string{"gcp-nlb"}}.Models()
	if err != nil || len(ms) != 1 || ms[0].Name != ClusterLB || ms[0].Cloud || ms[0].Profile.Name != "gcp-nlb" {
		t.Errorf("existing: %+v, %v", ms, err)
	}
	if _, err := (Settings{Provider: "existing", LBProfiles: []string{"a", "b"}}).Models(); err == nil {
		t.Error("two profiles for one existing LB accepted")
	}
}

func TestConfigureCloudLBWithoutCloudColumns(t *testing.T) {
	ms, _ := Settings{LB: "metallb"}.Models()
	s := &Suite{Settings: Settings{LB: "metallb", Provider: "kind"}, Models: ms}
	if err := configureCloudLB(context.Background(), s, func(string) {}); err != nil || s.CloudLB.Events != nil {
		t.Errorf("metallb alone: err %v, hooks set %v", err, s.CloudLB.Events != nil)
	}
}

func TestSelectCellsFollowsTheLabelFilter(t *testing.T) {
	ms, _ := Settings{LB: "all", LBProfiles: []string{"gcp-nlb"}}.Models()
	cells := rollingUpdate().Cells(ms)
	for _, tc := range []struct {
		filter string
		want   int
	}{
		{"", 28},
		{"smoke", 2},
		{"smoke && lb:metallb", 1},
		{"lb:gcp-nlb && policy:local", 2},
		{"scenario:rolling-update", 28},
		{"protocol:h2c", 4},
		{"protocol:grpc", 4},
		{"protocol:websocket", 4},
		{"front:traefik || front:haproxy", 8},
		{"!protocol:h2c && !protocol:grpc && !protocol:websocket && !front:traefik && !front:haproxy && lb:metallb", 4},
		{"scenario:drain-node", 0},
	} {
		got, err := selectCells(tc.filter, []string{"scenario:rolling-update"}, cells)
		if err != nil || len(got) != tc.want {
			t.Errorf("filter %q: %d cells, %v; want %d", tc.filter, len(got), err, tc.want)
		}
	}
	if _, err := selectCells("smoke &&", nil, cells); err == nil {
		t.Error("a broken filter was accepted")
	}
}
