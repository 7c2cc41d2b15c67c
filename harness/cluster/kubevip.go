package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kube"
)

// KubeVIPImage is kube-vip's image; the offline image build
// (clusters/images, KUBE_VIP_VERSION) builds it from its module under this
// name and preloads it into the node image.
const KubeVIPImage = "ghcr.io/kube-vip/kube-vip:v0.9.2"

//go:embed manifests/kube-vip.yaml
var kubeVIPTmpl string

// kubeVIPBlock is the block of the kind network kube-vip's addresses come
// from (lbRange): below every MetalLB and cloud LB block (0 to 33), one per
// cluster name as lbBlock picks them.
func kubeVIPBlock(cluster string) int {
	if b := lbBlock(cluster); b > 0 {
		return 33 + b
	}
	return 34
}

func kubeVIPManifest(first, last string) (string, error) {
	v := KubeVIPImage[strings.LastIndex(KubeVIPImage, ":")+1:]
	return render("kube-vip", kubeVIPTmpl, map[string]string{"Image": KubeVIPImage, "Version": v, "Class": contract.KubeVIPClass,
		"ConfigMap": contract.KubeVIPConfigMap, "First": first, "Last": last})
}

// installKubeVIP runs kube-vip in services mode with ARP on every worker,
// for the Services of its class (column kube-vip-arp), and records the
// range their addresses come from. A node image without kube-vip's image
// (kind's stock one) gets no kube-vip: the column then says so.
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
	m, err := kubeVIPManifest(first.String(), last.String())
	if err != nil {
		return err
	}
	o.progress("installing kube-vip (services, ARP)")
	if err := kubectlApply(ctx, cp, m); err != nil {
		return fmt.Errorf("install kube-vip: %w", err)
	}
	if err := kube.New(cs).WaitDaemonSet(ctx, "kube-system", "kube-vip", o.readyTimeout); err != nil {
		return fmt.Errorf("kube-vip: %w", err)
	}
	o.emit(zdv1.EventAction, "daemonset/kube-system/kube-vip", fmt.Sprintf("kube-vip %s (services, ARP) for class %s, addresses %s-%s",
		KubeVIPImage, contract.KubeVIPClass, first, last), map[string]string{"image": KubeVIPImage, "range": first.String() + "-" + last.String()})
	return nil
}
