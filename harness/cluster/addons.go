package cluster

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net/netip"
	"strings"
	"text/template"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/harness/router"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// Versions of the add-ons the harness installs; the offline image build
// (clusters/images) builds images with exactly these names.
const (
	FlannelImage = "ghcr.io/flannel-io/flannel:v0.27.4"
	// metallbManifestPath is where the node image carries MetalLB's upstream
	// manifest (CRDs, RBAC, webhook, controller, speaker); the offline image
	// build (clusters/images) copies it from the MetalLB module with the
	// images.
	metallbManifestPath = "/kind/manifests/metallb-native.yaml"
)

//go:embed manifests/flannel.yaml
var flannelTmpl string

//go:embed manifests/metallb-pool.yaml
var metallbPoolTmpl string

//go:embed manifests/metallb-bgp.yaml
var metallbBGPTmpl string

func render(name, tmpl string, data any) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("parse %s template: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

// imageTag is an image reference's tag, the add-on's version.
func imageTag(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }

func flannelManifest(podSubnet string) (string, error) {
	if _, err := netip.ParsePrefix(podSubnet); err != nil {
		return "", fmt.Errorf("pod subnet %q: %w", podSubnet, err)
	}
	return render("flannel", flannelTmpl, map[string]string{"PodSubnet": podSubnet, "Image": FlannelImage, "Version": imageTag(FlannelImage)})
}

func metallbPoolManifest(first, last netip.Addr) (string, error) {
	return render("metallb-pool", metallbPoolTmpl, map[string]string{"First": first.String(), "Last": last.String()})
}

// metallbBGPManifest is MetalLB's BGP mode with r as its one peer.
func metallbBGPManifest(r *router.Router) (string, error) {
	return render("metallb-bgp", metallbBGPTmpl, map[string]string{"Peer": r.Container, "MyASN": fmt.Sprint(r.PeerASN),
		"PeerASN": fmt.Sprint(r.ASN), "PeerAddress": r.IP.String(), "Pool": contract.MetalLBBGPPool, "Prefix": r.Pool.String()})
}

// kubectlApply applies a manifest with the control plane's own kubectl and
// admin credentials: no kubectl is needed on the host.
func kubectlApply(ctx context.Context, controlPlane, manifest string) error {
	_, err := nodeExec(ctx, controlPlane, strings.NewReader(manifest),
		"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "apply", "-f", "-")
	return err
}

// retry is the harness's one poller (internal/waitfor) for checks whose
// error means "not yet".
func retry(ctx context.Context, what string, timeout, every time.Duration, f func(context.Context) error) error {
	return waitfor.Retry(ctx, what, timeout, every, f)
}
