package suites

// The Ginkgo driver (zerodrop_e2e_test.go, build tag e2e) is a thin layer:
// what it does besides Ginkgo lives here, where go vet and the unit tests
// see it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kubevip"
	"zerodrop.dev/zerodrop/harness/lb"
	"zerodrop.dev/zerodrop/harness/router"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// modelNames is the columns, for the report's run metadata.
func modelNames(models []Model) string {
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	return strings.Join(names, ",")
}

// lbImplementation is the report's lbImplementation: the columns, what
// stands behind metallb-bgp's (the router's FRR and hash policy) and
// kube-vip-arp's (kube-vip's image and settings).
func lbImplementation(models []Model, r *router.Router, vip string) string {
	s := modelNames(models)
	if r != nil && slices.ContainsFunc(models, bgpModel) {
		s += fmt.Sprintf(" (%s: MetalLB's BGP mode behind the router: %s)", contract.LBMetalLBBGP, r.Settings())
	}
	if vip != "" {
		s += " (" + vip + ")"
	}
	return s
}

// selectCells keeps the cells a Ginkgo label filter selects, given the
// labels of their scenario's container: a scenario begins a witness only for
// a cell that will be checked.
func selectCells(filter string, container []string, cells []Cell) ([]Cell, error) {
	if filter == "" {
		return cells, nil
	}
	match, err := types.ParseLabelFilter(filter)
	if err != nil {
		return nil, fmt.Errorf("label filter %q: %w", filter, err)
	}
	var out []Cell
	for _, c := range cells {
		if match(append(append([]string(nil), container...), c.Labels()...)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// brokenRun records a run that could not complete as an ERROR scenario, so
// the report says what broke instead of leaving a gap.
func brokenRun(sc Scenario, c Cell, err error) zdv1.Scenario {
	return zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Name: sc.CellName(c), Role: c.Role, Description: sc.Description, Seeds: sc.Seeds,
			PlatformLimit: c.PlatformLimit, Expected: c.Expected, Labels: c.reportLabels(sc.Name)},
		Verdict: zdv1.Verdict{Status: zdv1.Error, Reasons: []zdv1.Reason{{
			Check: "run", Status: zdv1.Error, Message: err.Error(),
		}}},
	}
}

// CellResult is a cell's scenario result: its run's, or a broken run's
// when the witness could not run.
func CellResult(sc Scenario, c Cell, r scenario.Result) zdv1.Scenario {
	if r.Err != nil {
		// A measurement taken again that broke still lists the spoiled
		// ones before it.
		b := brokenRun(sc, c, r.Err)
		b.Remeasured = r.Scenario.Remeasured
		return b
	}
	return r.Scenario
}

// summary is the verdict with its numbers and failure windows, for the
// Ginkgo output and failure messages.
func summary(s zdv1.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s] %s: %d requests, %d dropped, %d failure windows\n  %s\n",
		s.Name, s.Role, s.Outcome(), s.Results.Total, s.Results.Dropped, len(s.FailureWindows), s.OutcomeText())
	if s.PlatformLimit != "" {
		fmt.Fprintf(&b, "  platform limit: %s\n", s.PlatformLimit)
	}
	for _, r := range s.Verdict.Reasons {
		fmt.Fprintf(&b, "  %-4s %s: %s\n", r.Status, r.Check, r.Message)
	}
	for k, m := range s.Remeasured {
		fmt.Fprintf(&b, "  measured again after measurement %d (%s): %s\n", k+1, m.RunFile, m)
	}
	for _, w := range s.FailureWindows {
		fmt.Fprintf(&b, "  window %s\n", verdict.WindowText(w))
		for _, e := range w.NearestEvents {
			fmt.Fprintf(&b, "    %+8.0fms %-10s %-22s %s %s\n", e.OffsetMs, e.Source, e.Type, e.Object, e.Message)
		}
	}
	return b.String()
}

// configureRouter connects the witnesses of metallb-bgp to the upstream
// router of MetalLB's BGP mode (harness/router): their run files get the
// router's route changes, and the load starts once its route holds.
func configureRouter(ctx context.Context, s *Suite, progress func(string)) error {
	if !slices.ContainsFunc(s.Models, bgpModel) {
		return nil
	}
	found, err := router.Find(ctx, s.Settings.ClusterName, "", "kind")
	if err != nil {
		return fmt.Errorf("find the BGP router of cluster %q: %w", s.Settings.ClusterName, err)
	}
	if found == nil {
		return fmt.Errorf("column %s needs the BGP router, but none runs for cluster %q; re-create the cluster with it (make cluster-down, then make cluster LB=all), or leave the column out (ZERODROP_BGP=0)",
			contract.LBMetalLBBGP, s.Settings.ClusterName)
	}
	progress(fmt.Sprintf("BGP router %s at %s (%s) for column %s", found.Container, found.IP, found.Settings(), contract.LBMetalLBBGP))
	s.Router, s.RouterInfo = scenario.RouterHooks(found, s.Env.Clientset, s.Env.Logger), found
	return nil
}

// configureKubeVIP connects the witnesses of kube-vip's columns to it:
// each Service gets an address from the range the cluster gave that
// kube-vip; the ARP column's run files get the changes of their lease's
// holder, the BGP column's the changes of its router's route.
func configureKubeVIP(ctx context.Context, s *Suite, progress func(string)) error {
	arp, bgp := slices.ContainsFunc(s.Models, kubeVIPModel), slices.ContainsFunc(s.Models, kubeVIPBGPModel)
	if !arp && !bgp {
		return nil
	}
	recreate := "re-create the cluster with it (make cluster-down, then make cluster LB=all, with a node image from make node-image), or leave kube-vip's columns out (ZERODROP_KUBE_VIP=0)"
	var infos []string
	addresses := func(column, configMap, daemonSet string) (*kubevip.Addresses, error) {
		first, last, err := kubevip.Range(ctx, s.Env.Clientset, configMap)
		if errors.Is(err, kubevip.ErrNotInstalled) {
			return nil, fmt.Errorf("column %s: %w; %s", column, err, recreate)
		}
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", column, err)
		}
		info, err := kubevip.Describe(ctx, s.Env.Clientset, daemonSet)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", column, err)
		}
		progress(fmt.Sprintf("%s for column %s: addresses %s-%s", info, column, first, last))
		infos = append(infos, column+": "+info)
		return kubevip.NewAddresses(s.Env.Clientset, configMap), nil
	}
	if arp {
		a, err := addresses(contract.LBKubeVIPARP, contract.KubeVIPConfigMap, contract.KubeVIPDaemonSet)
		if err != nil {
			return err
		}
		s.KubeVIP = scenario.KubeVIPHooks(s.Env.Clientset, a, s.Env.Logger)
	}
	if bgp {
		a, err := addresses(contract.LBKubeVIPBGP, contract.KubeVIPBGPConfigMap, contract.KubeVIPBGPDaemonSet)
		if err != nil {
			return err
		}
		r, err := router.Find(ctx, s.Settings.ClusterName, contract.RouterKubeVIP, "kind")
		if err != nil {
			return fmt.Errorf("column %s: find kube-vip's BGP router: %w", contract.LBKubeVIPBGP, err)
		}
		if r == nil {
			return fmt.Errorf("column %s needs kube-vip's BGP router (%s), but none runs; %s", contract.LBKubeVIPBGP,
				router.ContainerName(s.Settings.ClusterName, contract.RouterKubeVIP), recreate)
		}
		hooks := scenario.RouterHooks(r, s.Env.Clientset, s.Env.Logger)
		hooks.Prepare = a.Assign
		s.KubeVIPBGP = hooks
		infos[len(infos)-1] += fmt.Sprintf(", behind router %s at %s: %s", r.Container, r.IP, r.Settings())
	}
	s.KubeVIPInfo = strings.Join(infos, "; ")
	return nil
}

// configureCloudLB connects the witnesses of the cloud LB's models to it:
// their Services name their own profile (Suite.spec), and the LB's own
// events (backend added/removed, node healthy/unhealthy) go into their run
// files next to the Kubernetes events; the load starts once the LB has
// settled each Service.
func configureCloudLB(ctx context.Context, s *Suite, progress func(string)) error {
	cloud := 0
	for _, m := range s.Models {
		if m.Cloud {
			cloud++
		}
	}
	if cloud == 0 || s.Settings.Provider != "kind" {
		return nil
	}
	found, err := lb.FindKind(ctx, s.Settings.ClusterName, "kind")
	if err != nil {
		return fmt.Errorf("find the cloud LB of cluster %q: %w", s.Settings.ClusterName, err)
	}
	if found == nil {
		return fmt.Errorf("LB=%s but no cloud LB container runs for cluster %q; create the cluster with it (make cluster LB=%s)",
			s.Settings.LB, s.Settings.ClusterName, s.Settings.LB)
	}
	if found.ClaimsUnclassed && s.Models[0].Name == contract.LBMetalLB {
		return fmt.Errorf("the cloud LB of cluster %q takes every Service, so the metallb column would not be MetalLB's; re-create the cluster with LB=%s (make cluster-down first)",
			s.Settings.ClusterName, s.Settings.LB)
	}
	url := found.AdminURL()
	progress(fmt.Sprintf("cloud LB %s at %s: %d of the %d columns", found.Container, url, cloud, len(s.Models)))
	s.CloudLB = scenario.CloudLBHooks(url, s.Env.Logger)
	return nil
}
