package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"zerodrop.dev/zerodrop/internal/dockercli"
)

// docker runs the docker CLI, as kind itself does; stdin may be nil.
func docker(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return dockercli.Run(ctx, stdin, args...)
}

// nodeExec runs a command inside a node container.
func nodeExec(ctx context.Context, node string, stdin io.Reader, cmd ...string) (string, error) {
	args := []string{"exec"}
	if stdin != nil {
		args = append(args, "-i")
	}
	args = append(args, node)
	args = append(args, cmd...)
	return docker(ctx, stdin, args...)
}

// networkInfo is the part of `docker network inspect` the harness needs.
type networkInfo struct {
	Name   string
	IPv4   netip.Prefix
	Labels map[string]string
}

func inspectNetwork(ctx context.Context, name string) (networkInfo, error) {
	out, err := docker(ctx, nil, "network", "inspect", name)
	if err != nil {
		return networkInfo{}, err
	}
	return parseNetworkInspect([]byte(out))
}

func parseNetworkInspect(b []byte) (networkInfo, error) {
	var nets []struct {
		Name string
		IPAM struct {
			Config []struct{ Subnet string }
		}
		Labels map[string]string
	}
	if err := json.Unmarshal(b, &nets); err != nil {
		return networkInfo{}, fmt.Errorf("parse docker network inspect: %w", err)
	}
	if len(nets) != 1 {
		return networkInfo{}, fmt.Errorf("docker network inspect returned %d networks, want 1", len(nets))
	}
	ni := networkInfo{Name: nets[0].Name, Labels: nets[0].Labels}
	for _, c := range nets[0].IPAM.Config {
		p, err := netip.ParsePrefix(c.Subnet)
		if err == nil && p.Addr().Is4() {
			ni.IPv4 = p.Masked()
			break
		}
	}
	if !ni.IPv4.IsValid() {
		return ni, fmt.Errorf("docker network %q has no IPv4 subnet", ni.Name)
	}
	return ni, nil
}

func networkExists(ctx context.Context, name string) (bool, error) {
	out, err := docker(ctx, nil, "network", "ls", "--filter", "name=^"+name+"$", "--format", "{{.Name}}")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == name, nil
}

// containerIPv4 is a container's IPv4 address on the given network.
func containerIPv4(ctx context.Context, container, network string) (string, error) {
	out, err := docker(ctx, nil, "inspect", "-f", "{{with index .NetworkSettings.Networks \""+network+"\"}}{{.IPAddress}}{{end}}", container)
	if err != nil {
		return "", err
	}
	ip := strings.TrimSpace(out)
	if ip == "" {
		return "", fmt.Errorf("container %s has no IPv4 address on network %s", container, network)
	}
	return ip, nil
}

// MissingImages are the images the local Docker does not hold: the ones a
// kind provider cannot load into its nodes (which pull nothing here). An
// error means Docker itself did not answer.
func MissingImages(ctx context.Context, images ...string) ([]string, error) {
	if _, err := docker(ctx, nil, "version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("ask Docker for images: %w", err)
	}
	var missing []string
	for _, img := range images {
		if _, err := docker(ctx, nil, "image", "inspect", "--format", "{{.Id}}", img); err != nil {
			missing = append(missing, img)
		}
	}
	return missing, nil
}
