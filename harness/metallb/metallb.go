// Package metallb reads what MetalLB says about a Service it serves: in
// layer 2 mode, the node that announces the Service's address. A
// disruption that must meet a MetalLB witness where its traffic enters
// the cluster (a drain, a scale-down) asks here.
package metallb

import (
	"context"
	"fmt"
	"regexp"

	"zerodrop.dev/zerodrop/harness/kube"
)

// AnnounceReason is the reason of the event MetalLB's speaker records on a
// Service when its node starts announcing the Service's address
// (metallb v0.15.2 speaker/main.go, (*controller).handleService:
// Infof(svc, "nodeAssigned", "announcing from node %q with protocol %q")).
const AnnounceReason = "nodeAssigned"

// announcement is that event's message.
var announcement = regexp.MustCompile(`^announcing from node "([^"]+)" with protocol "([^"]+)"$`)

// ParseAnnouncement reads the node and protocol of an AnnounceReason
// event's message.
func ParseAnnouncement(msg string) (node, protocol string, ok bool) {
	m := announcement.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Announcer is the node that last started announcing service's address in
// layer 2 mode, from the speaker's latest AnnounceReason event on it. With
// externalTrafficPolicy Local that node is chosen among the nodes with a
// serving endpoint (metallb v0.15.2 speaker/layer2_controller.go,
// ShouldAnnounce: the first by sha256 of node name and address), and all
// of the Service's traffic enters there: that node's Pods serve it all.
func Announcer(ctx context.Context, c *kube.Client, namespace, service string) (string, error) {
	e, err := c.LastEvent(ctx, namespace, "Service", service, AnnounceReason)
	if err != nil {
		return "", fmt.Errorf("MetalLB announcer of service %s/%s: %w", namespace, service, err)
	}
	if e == nil {
		return "", fmt.Errorf("MetalLB announcer of service %s/%s: no %q event on it; is MetalLB's speaker running, in layer 2 mode?",
			namespace, service, AnnounceReason)
	}
	node, proto, ok := ParseAnnouncement(e.Message)
	if !ok {
		return "", fmt.Errorf("MetalLB announcer of service %s/%s: cannot read the %q event %q (written for metallb v0.15.2)",
			namespace, service, AnnounceReason, e.Message)
	}
	if proto != "layer2" {
		return "", fmt.Errorf("MetalLB announcer of service %s/%s: announced with protocol %q, not layer2: no single node carries it",
			namespace, service, proto)
	}
	return node, nil
}
