// Package dockercli runs the docker CLI for the harness (kind does the
// same): one runner for the cluster provider and the cloud LB.
package dockercli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"strings"

	"zerodrop.dev/zerodrop/internal/sched"
)

// Run runs `docker args...` with stdin (may be nil) and returns its
// standard output. The error names the command (shortened) and the end of
// what docker said (its standard error, else its output).
func Run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var out, errb bytes.Buffer
	cmd.Stdin = stdin
	cmd.Stdout = &out
	cmd.Stderr = &errb
	// In the default class even when the load runs real-time: the CLI
	// streams images and starts node containers for the cluster.
	if err := sched.Normal(cmd.Run); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return out.String(), fmt.Errorf("docker %s: %w: %s", shortArgs(args), err, msg)
	}
	return out.String(), nil
}

// shortArgs is args joined, cut to 160 characters for a message.
func shortArgs(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// NetworkSubnet is the IPv4 subnet of a docker network (kind's is
// dual-stack: its IPv6 subnet is skipped).
func NetworkSubnet(ctx context.Context, network string) (netip.Prefix, error) {
	out, err := Run(ctx, nil, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", network)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("docker network %s: %w", network, err)
	}
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil && p.Addr().Is4() {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("docker network %s has no IPv4 subnet (%q)", network, out)
}
