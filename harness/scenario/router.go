package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/router"
	"zerodrop.dev/zerodrop/internal/waitfor"
)

// routeSettle is how long the router's route to a Service's address must
// stay the same before the load starts: MetalLB's speakers advertise it one
// after another as each sees the Service.
const routeSettle = 3 * time.Second

// RouterHooks connect a run to the upstream router of MetalLB's BGP mode
// (harness/router): every change of the router's route to the Service's
// address (a speaker advertised or withdrew it) goes into the run file as
// a route-changed event with the nexthops before and after, and the load
// starts once the router has a route that holds still.
func RouterHooks(r *router.Router, cs kubernetes.Interface, logger *slog.Logger) LBHooks {
	mon := r.NewMonitor()
	return LBHooks{
		Events: func(ctx context.Context, namespace, name string, sink zdv1.EventSink) error {
			addr, err := serviceAddress(ctx, cs, namespace, name, 2*time.Minute)
			if err != nil {
				return err
			}
			svc := namespace + "/" + name
			var was router.Route
			return mon.Watch(ctx, addr, func(at time.Time, rt router.Route) {
				e := zdv1.Event{Time: at, Source: zdv1.SourceLB, Type: zdv1.EventRouteChanged, Object: "service/" + svc,
					Message: "router " + r.Container + ": " + rt.String(),
					Fields:  map[string]string{"service": svc, "vip": addr.String(), "nexthops": hops(rt.Nexthops), "was": hops(was.Nexthops)}}
				was = rt
				if err := sink.Event(e); err != nil {
					logger.Warn("router event not recorded", "service", svc, "err", err)
				}
			})
		},
		WaitSettled: func(ctx context.Context, namespace, name string, timeout time.Duration) (string, error) {
			addr, err := serviceAddress(ctx, cs, namespace, name, timeout)
			if err != nil {
				return "", err
			}
			var rt, prev router.Route
			var since time.Time
			err = waitfor.Retry(ctx, fmt.Sprintf("router %s to hold a route to %s/%s's address %s for %s", r.Container, namespace, name, addr, routeSettle),
				timeout, 500*time.Millisecond, func(ctx context.Context) error {
					var err error
					if rt, err = r.RouteTo(ctx, addr); err != nil {
						return err
					}
					if len(rt.Nexthops) == 0 {
						return fmt.Errorf("no route to %s yet (are the speakers' BGP sessions up? vtysh -c 'show bgp summary' in %s)", addr, r.Container)
					}
					if !slices.Equal(rt.Nexthops, prev.Nexthops) {
						prev, since = rt, time.Now()
					}
					if held := time.Since(since); held < routeSettle {
						return fmt.Errorf("route %s changed %s ago", rt, held.Round(100*time.Millisecond))
					}
					return nil
				})
			return "router " + r.Container + ": " + rt.String(), err
		},
	}
}

func hops(h []netip.Addr) string {
	s := make([]string, len(h))
	for i, a := range h {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// serviceAddress waits for the address the Service's LB assigned.
func serviceAddress(ctx context.Context, cs kubernetes.Interface, namespace, name string, timeout time.Duration) (netip.Addr, error) {
	var addr netip.Addr
	err := waitfor.Retry(ctx, fmt.Sprintf("an address for service %s/%s", namespace, name), timeout, 500*time.Millisecond,
		func(ctx context.Context) error {
			svc, err := cs.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, in := range svc.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(in.IP); err == nil {
					addr = a
					return nil
				}
			}
			return fmt.Errorf("service %s/%s has no load-balancer address yet", namespace, name)
		})
	return addr, err
}
