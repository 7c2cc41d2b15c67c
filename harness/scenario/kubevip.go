package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/kubevip"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// leaseSettle is how long a kube-vip Service's lease must keep one holder
// before the load starts: with externalTrafficPolicy Local the nodes
// campaign as their endpoints become ready, one after another.
const leaseSettle = 3 * time.Second

// leasePoll is how often the holder of a kube-vip lease is read: kube-vip
// retries a lease every second (vip_retryperiod, harness/cluster's
// manifest), so a change is seen within a quarter of that.
const leasePoll = 250 * time.Millisecond

// KubeVIPHooks connect a run to kube-vip (services mode, ARP): the Service
// gets an address from addrs before it is created; every change of its
// lease's holder (the node that announces the address) goes into the run
// file as an announcer-changed event; the load starts once the lease has
// held one holder for leaseSettle.
func KubeVIPHooks(cs kubernetes.Interface, addrs *kubevip.Addresses, logger *slog.Logger) LBHooks {
	return LBHooks{
		Prepare: addrs.Assign,
		Events: func(ctx context.Context, namespace, name string, sink zdv1.EventSink) error {
			addr, err := serviceAddress(ctx, cs, namespace, name, 2*time.Minute)
			if err != nil {
				return err
			}
			svc := namespace + "/" + name
			was := ""
			t := time.NewTicker(leasePoll)
			defer t.Stop()
			for {
				h, err := kubevip.Lease(ctx, cs, namespace, name)
				now := time.Now()
				if err == nil {
					node := ""
					if h.Current(now) {
						node = h.Node
					}
					if node != was {
						e := zdv1.Event{Time: now, Source: zdv1.SourceLB, Type: zdv1.EventAnnouncerChanged, Object: "service/" + svc,
							Message: announcerMessage(addr.String(), node, was),
							Fields:  map[string]string{"service": svc, "vip": addr.String(), "node": node, "was": was, "lease": kubevip.LeaseName(name)}}
						if err := sink.Event(e); err != nil {
							logger.Warn("kube-vip event not recorded", "service", svc, "err", err)
						}
						was = node
					}
				} else if ctx.Err() == nil {
					logger.Warn("kube-vip lease not read", "service", svc, "err", err)
				}
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
				}
			}
		},
		WaitSettled: func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
			addr, err := serviceAddress(ctx, cs, namespace, name, timeout)
			if err != nil {
				return "", err
			}
			var node, prev string
			var since time.Time
			err = waitfor.Retry(ctx, fmt.Sprintf("kube-vip's lease %s of %s/%s (address %s) to keep one holder for %s", kubevip.LeaseName(name), namespace, name, addr, leaseSettle),
				timeout, 500*time.Millisecond, func(ctx context.Context) error {
					h, err := kubevip.Lease(ctx, cs, namespace, name)
					if err != nil {
						return err
					}
					if !h.Current(time.Now()) {
						return fmt.Errorf("no node holds lease %s yet (kube-vip's Pods: kubectl -n kube-system logs ds/kube-vip)", kubevip.LeaseName(name))
					}
					if node = h.Node; node != prev {
						prev, since = node, time.Now()
					}
					if held := time.Since(since); held < leaseSettle {
						return fmt.Errorf("%s took the lease %s ago", node, held.Round(100*time.Millisecond))
					}
					return nil
				})
			return fmt.Sprintf("kube-vip announces %s from %s", addr, node), err
		},
	}
}

func announcerMessage(vip, node, was string) string {
	switch {
	case node == "":
		return fmt.Sprintf("kube-vip: nobody holds %s's lease (was %s)", vip, was)
	case was == "":
		return fmt.Sprintf("kube-vip: %s announces %s", node, vip)
	default:
		return fmt.Sprintf("kube-vip: %s announces %s (was %s)", node, vip, was)
	}
}
