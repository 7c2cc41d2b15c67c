package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"os/exec"
	"slices"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/router"
)

// startBGP runs the upstream router next to the cluster and gives MetalLB
// its BGP mode: a peer (the router), the BGP pool and its advertisement.
// The speakers then open their sessions; it waits until the router has
// one from every node whose speaker runs.
func (k *Kind) startBGP(ctx context.Context) error {
	o := &k.o
	pool := netip.MustParsePrefix(contract.MetalLBBGPPrefix)
	r, err := router.Start(ctx, router.Options{Cluster: o.name, Network: kindNetwork, Image: o.routerImage, Pool: pool,
		Tuning: o.routerTuning, Timeout: o.readyTimeout, Progress: o.progress})
	if err != nil {
		return err
	}
	m, err := metallbBGPManifest(r)
	if err != nil {
		return err
	}
	cp := k.controlPlane()
	if err := fixASNFormat(ctx, cp); err != nil {
		return err
	}
	if err := retry(ctx, "MetalLB to accept the BGP peer and pool", o.readyTimeout, 3*time.Second, func(ctx context.Context) error {
		return kubectlApply(ctx, cp, m)
	}); err != nil {
		return err
	}
	// The control plane is labelled out of the LBs (kind's kubeadm
	// config), so its speaker opens no session (metallb v0.15.2
	// speaker/bgp_controller.go syncPeers skips an excluded node).
	if err := k.waitSessions(ctx, r); err != nil {
		return err
	}
	o.emit(zdv1.EventAction, "router/"+r.Container, fmt.Sprintf("BGP router %s at %s (%s), MetalLB pool %s %s", r.Container, r.IP,
		r.Settings(), contract.MetalLBBGPPool, pool), map[string]string{"frr": r.FRRVersion, "hash": r.Hash.String(), "groups": r.Groups.String(), "pool": pool.String()})
	return nil
}

// waitSessions waits until router r has a BGP session from every worker.
func (k *Kind) waitSessions(ctx context.Context, r *router.Router) error {
	want, err := k.workers(ctx)
	if err != nil {
		return err
	}
	return retry(ctx, fmt.Sprintf("%d BGP sessions on router %s", want, r.Container), k.o.readyTimeout, 2*time.Second, func(ctx context.Context) error {
		up, err := r.Established(ctx)
		if err != nil {
			return err
		}
		if up < want {
			return fmt.Errorf("%d of %d sessions established", up, want)
		}
		return nil
	})
}

// workers counts the cluster's nodes that are not its control plane.
func (k *Kind) workers(ctx context.Context) (int, error) {
	ns, err := k.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, node := range ns {
		if node.Role != "control-plane" {
			n++
		}
	}
	return n, nil
}

// fixASNFormat makes MetalLB's BGPPeer schema one the API server applies:
// metallb v0.15.2 declares myASN and peerASN (config/manifests
// metallb-native.yaml, every version of bgppeers.metallb.io) as integers of
// format int32 with maximum 4294967295, the 4-byte AS range, and the API
// server of this suite's cluster (v1.37.2) refuses every BGPPeer with
// "Maximum boundary value must be of type integer with format int32"
// (measured 2026-11-28). Format int64 holds that maximum and changes no
// valid value; MetalLB itself reads the fields as uint32.
func fixASNFormat(ctx context.Context, controlPlane string) error {
	out, err := nodeExec(ctx, controlPlane, nil, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "get", "crd", "bgppeers.metallb.io", "-o", "json")
	if err != nil {
		return fmt.Errorf("MetalLB BGPPeer schema: %w", err)
	}
	patch, err := asnFormatPatch([]byte(out))
	if err != nil || patch == "" {
		return err
	}
	if _, err := nodeExec(ctx, controlPlane, nil, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "patch", "crd", "bgppeers.metallb.io",
		"--type=json", "-p", patch); err != nil {
		return fmt.Errorf("MetalLB BGPPeer schema: %w", err)
	}
	return nil
}

// asnFormatPatch is the JSON patch that fixASNFormat applies to the CRD
// crd (JSON): format int64 for every spec field of format int32 whose
// maximum is beyond int32 ("" when there is none).
func asnFormatPatch(crd []byte) (string, error) {
	var c struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties map[string]struct {
									Format  string   `json:"format"`
									Maximum *float64 `json:"maximum"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(crd, &c); err != nil {
		return "", fmt.Errorf("MetalLB BGPPeer schema: %w", err)
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value"`
	}
	var ops []op
	for i, v := range c.Spec.Versions {
		for _, name := range slices.Sorted(maps.Keys(v.Schema.OpenAPIV3Schema.Properties.Spec.Properties)) {
			f := v.Schema.OpenAPIV3Schema.Properties.Spec.Properties[name]
			if f.Format == "int32" && f.Maximum != nil && *f.Maximum > math.MaxInt32 {
				ops = append(ops, op{"replace", fmt.Sprintf("/spec/versions/%d/schema/openAPIV3Schema/properties/spec/properties/%s/format", i, name), "int64"})
			}
		}
	}
	if len(ops) == 0 {
		return "", nil
	}
	b, err := json.Marshal(ops)
	return string(b), err
}

// removeRouter removes the cluster's router and the host's route through
// it, if any.
func (k *Kind) removeRouter(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil
	}
	return router.Remove(ctx, k.o.name, nil, netip.MustParsePrefix(contract.MetalLBBGPPrefix), netip.MustParsePrefix(contract.KubeVIPBGPPrefix))
}
