package kube

import (
	"context"
	"fmt"
	"strconv"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

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
// The admin port is never exposed by a Service (fixtures.AdminPort for the
// bundled workload; a stand-in's own, see harness/standin); the harness
// reaches it through the API server's pod proxy, which needs no
// port-forward and no route from the host to pod IPs.
func (c *Client) SetEchoReady(ctx context.Context, namespace, pod string, adminPort int32, ready bool) error {
	return c.echoAdminPost(ctx, namespace, pod, adminPort, "admin/ready", ready)
}

func (c *Client) echoAdminPost(ctx context.Context, namespace, pod string, adminPort int32, path string, value bool) error {
	v := strconv.FormatBool(value)
	_, err := c.cs.CoreV1().RESTClient().Post().
		Namespace(namespace).Resource("pods").Name(fmt.Sprintf("%s:%d", pod, adminPort)).
		SubResource("proxy").Suffix(path).Param("value", v).
		Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("POST %s?value=%s on pod %s/%s admin port %d via the API server: %w", path, v, namespace, pod, adminPort, err)
	}
	c.emit(zdv1.EventAction, "pod/"+namespace+"/"+pod, fmt.Sprintf("echo admin %s=%s", path, v), nil)
	return nil
}
