package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"zerodrop/harness/runfile"
)

// AdminPort is the echo server's admin port. It is never exposed by a
// Service; the harness reaches it through the API server's pod proxy, which
// needs no port-forward and no route from the host to pod IPs.
const AdminPort = 8081

// EchoStats is the echo server's /admin/stats.
type EchoStats struct {
	ServedTotal         int64 `json:"served_total"`
	ServedWhileUnready  int64 `json:"served_while_unready"`
	ServedWhileDraining int64 `json:"served_while_draining"`
	OpenConnections     int64 `json:"open_connections"`
	ConnectionsTotal    int64 `json:"connections_total"`
	Ready               bool  `json:"ready"`
	Keepalive           bool  `json:"keepalive"`
	Draining            bool  `json:"draining"`
}

// SetEchoReady flips an echo server pod's readiness through its admin port
// (incident keepalive-unready: the pod fails readiness while staying alive).
func (c *Client) SetEchoReady(ctx context.Context, namespace, pod string, ready bool) error {
	return c.echoAdminPost(ctx, namespace, pod, "admin/ready", ready)
}

// SetEchoKeepalive turns an echo server pod's HTTP keep-alive on or off.
func (c *Client) SetEchoKeepalive(ctx context.Context, namespace, pod string, on bool) error {
	return c.echoAdminPost(ctx, namespace, pod, "admin/keepalive", on)
}

func (c *Client) echoAdminPost(ctx context.Context, namespace, pod, path string, value bool) error {
	v := strconv.FormatBool(value)
	_, err := c.cs.CoreV1().RESTClient().Post().
		Namespace(namespace).Resource("pods").Name(fmt.Sprintf("%s:%d", pod, AdminPort)).
		SubResource("proxy").Suffix(path).Param("value", v).
		Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("POST %s?value=%s on pod %s/%s admin port %d via the API server: %w", path, v, namespace, pod, AdminPort, err)
	}
	c.emit(runfile.Action, "pod/"+namespace+"/"+pod, fmt.Sprintf("echo admin %s=%s", path, v), nil)
	return nil
}

// EchoStats reads an echo server pod's counters.
func (c *Client) EchoStats(ctx context.Context, namespace, pod string) (EchoStats, error) {
	var s EchoStats
	raw, err := c.cs.CoreV1().RESTClient().Get().
		Namespace(namespace).Resource("pods").Name(fmt.Sprintf("%s:%d", pod, AdminPort)).
		SubResource("proxy").Suffix("admin/stats").
		Do(ctx).Raw()
	if err != nil {
		return s, fmt.Errorf("GET admin/stats on pod %s/%s via the API server: %w", namespace, pod, err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("decode admin/stats of pod %s/%s: %w", namespace, pod, err)
	}
	return s, nil
}
