package suites

import (
	"fmt"
	"slices"
	"strings"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/fixtures"
)

// Model is one column of the readiness matrix: an LB model a Service can
// ask for on the suite's cluster. MetalLB takes a Service without a
// loadBalancerClass; zerodrop's cloud LB one of contract.CloudLBClass,
// run with the profile its annotation names, so every model runs side by
// side on one cluster and a column is just a Service's class and profile.
type Model struct {
	// Name is "metallb" or the cloud LB profile's name.
	Name string
	// Profile is the model's timing and behaviour (clusters/lb/profiles):
	// the hardened workload's preStop and the settle times follow it.
	Profile profiles.Profile
	// Cloud: implemented by zerodrop's cloud LB.
	Cloud bool
}

// ClusterLB is the column of an existing cluster's own LB.
const ClusterLB = "cluster-lb"

// Models are the matrix's columns for the settings, MetalLB first, then the
// cloud LB's profiles in the order given (default: every profile it runs,
// by name).
func (s Settings) Models() ([]Model, error) {
	stock, err := profiles.Stock()
	if err != nil {
		return nil, fmt.Errorf("LB profiles: %w", err)
	}
	var out []Model
	if s.Provider == "existing" {
		// A cluster someone else made has its own LB: one column, Services
		// without a class, timed by the profile LB_PROFILE names.
		name := profiles.DefaultName
		if len(s.LBProfiles) > 0 {
			name = s.LBProfiles[0]
		}
		p, ok := stock[name]
		if !ok || len(s.LBProfiles) > 1 {
			return nil, fmt.Errorf("LB_PROFILE=%q: an existing cluster has one LB; name the one profile whose timing it follows (%s)",
				strings.Join(s.LBProfiles, ","), strings.Join(stock.Names(), ", "))
		}
		return []Model{{Name: ClusterLB, Profile: p}}, nil
	}
	if s.LB != contract.LBCloud {
		out = append(out, Model{Name: contract.LBMetalLB, Profile: stock[contract.LBMetalLB]})
	}
	if s.LB == contract.LBMetalLB {
		return out, nil
	}
	names := s.LBProfiles
	own := []string{contract.LBMetalLBBGP, contract.LBKubeVIPARP, contract.LBKubeVIPBGP}
	for _, n := range own {
		if s.LB != contract.LBAll && slices.Contains(names, n) {
			return nil, fmt.Errorf("LB_PROFILE names %s, a column only LB=all runs (LB=%s)", n, s.LB)
		}
	}
	// MetalLB's BGP mode is a column of LB=all (the cluster then runs the
	// upstream router): in the full matrix, or where LB_PROFILE names it.
	bgp := s.LB == contract.LBAll && (len(names) == 0 || slices.Contains(names, contract.LBMetalLBBGP))
	if bgp && s.BGP {
		out = append(out, Model{Name: contract.LBMetalLBBGP, Profile: stock[contract.LBMetalLBBGP]})
	}
	// kube-vip (services mode, ARP) is one too: the cluster runs it with
	// LB=all for the Services of its class.
	vip := s.LB == contract.LBAll && (len(names) == 0 || slices.Contains(names, contract.LBKubeVIPARP))
	if vip && s.KubeVIP {
		out = append(out, Model{Name: contract.LBKubeVIPARP, Profile: stock[contract.LBKubeVIPARP]})
	}
	// And kube-vip's BGP mode, behind a router of its own (so only where
	// the cluster runs routers).
	vipBGP := s.LB == contract.LBAll && (len(names) == 0 || slices.Contains(names, contract.LBKubeVIPBGP))
	if vipBGP && s.KubeVIP && s.KubeVIPBGP && s.BGP {
		out = append(out, Model{Name: contract.LBKubeVIPBGP, Profile: stock[contract.LBKubeVIPBGP]})
	}
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(own, n) })
	if len(names) == 0 && len(s.LBProfiles) > 0 {
		return out, nil
	}
	if len(names) == 0 {
		names = stock.Emulated()
	}
	seen := map[string]bool{}
	for _, n := range names {
		p, ok := stock[n]
		if !ok || !p.Emulated() {
			return nil, fmt.Errorf("LB_PROFILE: %q is not a profile the cloud LB runs; it runs: %s",
				n, strings.Join(stock.Emulated(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("LB_PROFILE: %q listed twice", n)
		}
		seen[n] = true
		out = append(out, Model{Name: n, Profile: p, Cloud: true})
	}
	return out, nil
}

// podTargets picks the LB models whose targets are the Pods themselves
// (container-native load balancing: gclb-neg, aws-alb-ip): neither the
// node nor kube-proxy is between the LB and the Pod.
func podTargets(m Model) bool { return m.Cloud && m.Profile.PodBackends() }

// proxiedPodTargets picks the Pod-targeted models that proxy each request
// (an L7 LB: gclb-neg, aws-alb-ip), whose choice of Pod is made per
// request; an L4 one (aws-nlb-ip) chooses per connection and keeps it.
func proxiedPodTargets(m Model) bool { return podTargets(m) && m.Profile.Mode == profiles.ModeL7 }

// natPodTargets picks the Pod-targeted models that translate each
// connection to one Pod and keep it there (an L4 LB: aws-nlb-ip).
func natPodTargets(m Model) bool { return podTargets(m) && !proxiedPodTargets(m) }

// carriesGRPC picks the models that carry HTTP/2 to the Pods: every one
// but the L7 ones, whose proxy reaches the Pods over HTTP/1.1
// (internal/cloudlb proxy.go, frontProtocols).
func carriesGRPC(m Model) bool { return m.Profile.Mode != profiles.ModeL7 }

// optionalGate picks the Pod-targeted models whose readiness gate a
// workload may go without (aws-alb-ip: the controller injects it where a
// namespace asks), the ones the gate cases compare with and without it.
func optionalGate(m Model) bool { return podTargets(m) && fixtures.OptionalGate(m.Profile) }

// bgpModel picks MetalLB's BGP mode behind the ECMP router.
func bgpModel(m Model) bool { return m.Name == contract.LBMetalLBBGP }

// kubeVIPModel picks kube-vip in services mode with ARP.
func kubeVIPModel(m Model) bool { return m.Name == contract.LBKubeVIPARP }

// kubeVIPBGPModel picks kube-vip in services mode with BGP behind its
// ECMP router.
func kubeVIPBGPModel(m Model) bool { return m.Name == contract.LBKubeVIPBGP }

// measuresKubeVIPBGP says whether a batch of cells has kube-vip-bgp's: then
// its hold is the batch's (Costs.forBatch), else the departure parks it
// (parkKubeVIPBGP).
func measuresKubeVIPBGP(cells []Cell) bool {
	return slices.ContainsFunc(cells, func(c Cell) bool { return kubeVIPBGPModel(c.Model) })
}

// ecmpModel picks the models behind an ECMP router, whose nodes each
// advertise a Service's address (MetalLB's BGP mode, kube-vip's).
func ecmpModel(m Model) bool { return bgpModel(m) || kubeVIPBGPModel(m) }

// anyModel picks every LB model: a limit of the cluster itself (its nodes'
// shutdown), not of one LB.
func anyModel(Model) bool { return true }
