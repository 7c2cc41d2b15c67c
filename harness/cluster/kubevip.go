package cluster

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/router"
)

// KubeVIPImage is kube-vip's image; the offline image build
// (clusters/images, KUBE_VIP_VERSION) builds it from its module under this
// name and preloads it into the node image.
const KubeVIPImage = "ghcr.io/kube-vip/kube-vip:v0.9.2"

//go:embed manifests/kube-vip.yaml
var kubeVIPTmpl string

//go:embed manifests/kube-vip-bgp.yaml
var kubeVIPBGPTmpl string

// kubeVIPASN is the AS of kube-vip's BGP speakers (eBGP with its router).
const kubeVIPASN = 64514

// kubeVIPBlock is the block of the kind network kube-vip's addresses come
// from (lbRange): below every MetalLB and cloud LB block (0 to 33), one per
// cluster name as lbBlock picks them.
func kubeVIPBlock(cluster string) int {
	if b := lbBlock(cluster); b > 0 {
		return 33 + b
	}
	return 34
}

func kubeVIPManifest(first, last string, arpRate time.Duration) (string, error) {
	return render(contract.KubeVIPDaemonSet, kubeVIPTmpl, map[string]string{"Name": contract.KubeVIPDaemonSet, "Image": KubeVIPImage, "Version": imageTag(KubeVIPImage), "Class": contract.KubeVIPClass,
		"ConfigMap": contract.KubeVIPConfigMap, "First": first, "Last": last, "ARPRate": fmt.Sprint(cmp.Or(arpRate, DefaultKubeVIPARPRate).Milliseconds())})
}

// DefaultKubeVIPARPRate is kube-vip's own period of gratuitous ARP
// (vip_arpRate, 3000 ms: kube-vip v0.9.2 pkg/kubevip/config_environment.go).
const DefaultKubeVIPARPRate = 3 * time.Second

// minKubeVIPARPRate is the shortest period kube-vip keeps: below it the
// announcer logs "arp broadcast rate is too low" and uses 3000 ms
// (kube-vip v0.9.2 pkg/arp/arp.go StartAdvertisement).
const minKubeVIPARPRate = 500 * time.Millisecond

// ValidKubeVIPARPRate says whether kube-vip keeps d as its period of
// gratuitous ARP: whole milliseconds, at least its minimum.
func ValidKubeVIPARPRate(d time.Duration) error {
	if d < minKubeVIPARPRate || d%time.Millisecond != 0 {
		return fmt.Errorf("kube-vip's ARP period %s: want whole milliseconds, at least %s (kube-vip v0.9.2 replaces a shorter one with 3000 ms)", d, minKubeVIPARPRate)
	}
	return nil
}

func kubeVIPBGPManifest(r *router.Router, first, last string) (string, error) {
	return render(contract.KubeVIPBGPDaemonSet, kubeVIPBGPTmpl, map[string]string{"Name": contract.KubeVIPBGPDaemonSet,
		"Parked": contract.KubeVIPBGPParkedLabel, "Image": KubeVIPImage, "Version": imageTag(KubeVIPImage), "Class": contract.KubeVIPBGPClass,
		"ConfigMap": contract.KubeVIPBGPConfigMap, "First": first, "Last": last, "Instance": contract.RouterKubeVIP,
		"Peer": r.IP.String(), "PeerASN": fmt.Sprint(r.ASN), "MyASN": fmt.Sprint(r.PeerASN)})
}

// installKubeVIP runs kube-vip in services mode with ARP on every worker,
// for the Services of its class (column kube-vip-arp), and records the
// range their addresses come from; with the router image, kube-vip's BGP
// mode too (installKubeVIPBGP). A node image without kube-vip's image
// (kind's stock one) gets no kube-vip: the columns then say so.
func (k *Kind) installKubeVIP(ctx context.Context, cs kubernetes.Interface) error {
	o := &k.o
	cp := k.controlPlane()
	imgs, err := nodeExec(ctx, cp, nil, "ctr", "--namespace=k8s.io", "images", "list", "-q", "name=="+KubeVIPImage)
	if err != nil {
		return fmt.Errorf("kube-vip: list the node's images: %w", err)
	}
	if strings.TrimSpace(imgs) == "" {
		o.progress(fmt.Sprintf("kube-vip: node image %s has no %s (make node-image builds it); column %s left out", o.nodeImage, KubeVIPImage, contract.LBKubeVIPARP))
		return nil
	}
	nw, err := inspectNetwork(ctx, kindNetwork)
	if err != nil {
		return fmt.Errorf("kube-vip address range: %w", err)
	}
	first, last, err := lbRange(nw.IPv4, o.lbAddressCount, kubeVIPBlock(o.name))
	if err != nil {
		return fmt.Errorf("kube-vip address range: %w", err)
	}
	m, err := kubeVIPManifest(first.String(), last.String(), o.kubeVIPARPRate)
	if err != nil {
		return err
	}
	o.progress("installing kube-vip (services, ARP)")
	if err := kubectlApply(ctx, cp, m); err != nil {
		return fmt.Errorf("install kube-vip: %w", err)
	}
	if err := kube.New(cs).WaitDaemonSet(ctx, "kube-system", contract.KubeVIPDaemonSet, o.readyTimeout); err != nil {
		return fmt.Errorf("kube-vip: %w", err)
	}
	o.emit(zdv1.EventAction, "daemonset/kube-system/"+contract.KubeVIPDaemonSet, fmt.Sprintf("kube-vip %s (services, ARP) for class %s, addresses %s-%s",
		KubeVIPImage, contract.KubeVIPClass, first, last), map[string]string{"image": KubeVIPImage, "range": first.String() + "-" + last.String()})
	if o.routerImage == "" || o.noKubeVIPBGP {
		return nil
	}
	return k.installKubeVIPBGP(ctx, cs)
}

// installKubeVIPBGP runs kube-vip in services mode with BGP on every
// worker, for the Services of its BGP class (column kube-vip-bgp), behind
// a router of its own: each node has one address, and MetalLB's speakers
// hold the first router's one session per address. It waits until the
// router has a session from every worker.
func (k *Kind) installKubeVIPBGP(ctx context.Context, cs kubernetes.Interface) error {
	o := &k.o
	pool := netip.MustParsePrefix(contract.KubeVIPBGPPrefix)
	r, err := router.Start(ctx, router.Options{Cluster: o.name, Instance: contract.RouterKubeVIP, Network: kindNetwork, Image: o.routerImage,
		Pool: pool, PeerASN: kubeVIPASN, Tuning: o.routerTuning, Timeout: o.readyTimeout, Progress: o.progress})
	if err != nil {
		return err
	}
	// The network and broadcast addresses (.0 and .255) left out, as
	// MetalLB's avoidBuggyIPs does for its pool.
	first, last := hostRange(pool)
	m, err := kubeVIPBGPManifest(r, first.String(), last.String())
	if err != nil {
		return err
	}
	o.progress("installing kube-vip (services, BGP)")
	cp := k.controlPlane()
	if err := kubectlApply(ctx, cp, m); err != nil {
		return fmt.Errorf("install kube-vip (BGP): %w", err)
	}
	if err := kube.New(cs).WaitDaemonSet(ctx, "kube-system", contract.KubeVIPBGPDaemonSet, o.readyTimeout); err != nil {
		return fmt.Errorf("kube-vip (BGP): %w", err)
	}
	// kube-vip's DaemonSet runs on the workers only.
	if err := k.waitSessions(ctx, r); err != nil {
		return err
	}
	o.emit(zdv1.EventAction, "router/"+r.Container, fmt.Sprintf("kube-vip %s (services, BGP) for class %s behind router %s at %s (%s), addresses %s-%s",
		KubeVIPImage, contract.KubeVIPBGPClass, r.Container, r.IP, r.Settings(), first, last),
		map[string]string{"image": KubeVIPImage, "frr": r.FRRVersion, "pool": pool.String(), "range": first.String() + "-" + last.String()})
	return nil
}
