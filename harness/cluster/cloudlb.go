package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"zerodrop.dev/zerodrop/apis/contract"
	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/lb"
)

// startCloudLB runs harness/lb's LB container next to the cluster (LB=cloud).
func (k *Kind) startCloudLB(ctx context.Context) error {
	o := &k.o
	_, claimAll := o.cloudLB()
	o.progress(fmt.Sprintf("starting the cloud LB (harness/lb; Services of class %s%s)", contract.CloudLBClass,
		map[bool]string{true: " and those without a class", false: ""}[claimAll]))
	l, err := lb.StartKind(ctx, lb.KindOptions{Cluster: o.name, Network: kindNetwork, BaseImage: o.nodeImage,
		Profile: o.lbProfile, ClaimAll: claimAll, CacheDir: filepath.Join(o.cacheDir, "lb"), ReadyTimeout: o.readyTimeout, Progress: o.progress})
	if err != nil {
		return err
	}
	o.emit(zdv1.EventAction, "lb/"+l.Container, fmt.Sprintf("cloud LB running at %s (addresses %s-%s)", l.AdminURL(), l.VIPFirst, l.VIPLast),
		map[string]string{"admin": l.AdminURL(), "vipFirst": l.VIPFirst.String(), "vipLast": l.VIPLast.String(), "profile": o.lbProfile})
	return nil
}

// removeCloudLB removes the cloud LB container of the cluster, if any.
func (k *Kind) removeCloudLB(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil
	}
	return lb.RemoveKind(ctx, k.o.name)
}
