package lb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	lbimage "zerodrop.dev/zerodrop/clusters/lb"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/dockercli"
	"zerodrop.dev/zerodrop/internal/sched"
)

var kindDockerfile = lbimage.Dockerfile

// KindLabel marks the LB container with the kind cluster it serves, so
// RemoveKind finds it.
const KindLabel = "dev.zerodrop.lb.cluster"

// KindOptions says how to run the LB next to a kind cluster.
type KindOptions struct {
	Cluster      string // kind cluster name (containers <name>-control-plane, ...)
	Network      string // docker network, default "kind"
	BaseImage    string // local image to build FROM (the node image); never pulled
	Binary       string // static zerodrop-lb binary; empty: built with `go build` into CacheDir
	CacheDir     string // where a built binary goes (default zerodrop/lb under os.UserCacheDir)
	Profile      string // default profile (--lb-profile), default generic
	ProfileDir   string // host directory of extra profiles, mounted read-only
	ClaimAll     bool   // take LoadBalancer Services without a class (MetalLB absent)
	AdminPort    int    // default 9100
	ReadyTimeout time.Duration
	Progress     func(string)
}

// KindLB is a running LB container.
type KindLB struct {
	Container string
	IP        netip.Addr
	VIPFirst  netip.Addr
	VIPLast   netip.Addr
	// ClaimsUnclassed: the LB also takes LoadBalancer Services without a
	// loadBalancerClass (started with ClaimAll), so MetalLB must not run
	// beside it.
	ClaimsUnclassed bool
	adminPort       int
}

// AdminURL is the base URL of the LB's admin server (/state, /events), reachable from the host.
func (k *KindLB) AdminURL() string {
	return "http://" + netip.AddrPortFrom(k.IP, uint16(k.adminPort)).String()
}

func dockerCmd(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return dockercli.Run(ctx, stdin, args...)
}

func subnetOf(ctx context.Context, network string) (netip.Prefix, error) {
	p, err := dockercli.NetworkSubnet(ctx, network)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("cloud LB: %w", err)
	}
	return p, nil
}

func (o *KindOptions) defaults() {
	if o.Network == "" {
		o.Network = "kind"
	}
	if o.Profile == "" {
		o.Profile = profiles.DefaultName
	}
	if o.AdminPort == 0 {
		o.AdminPort = 9100
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		o.CacheDir = filepath.Join(base, "zerodrop", "lb")
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
}

// lbCPUShares is the LB container's CPU weight, eight times a node
// container's default (1024).
const lbCPUShares = 8192

// KindContainerName is the LB container of a cluster.
func KindContainerName(cluster string) string { return cluster + "-cloud-lb" }

// StartKind builds the LB image (cached by content) and runs the LB on the
// cluster's docker network, replacing a previous LB container of the cluster.
func StartKind(ctx context.Context, o KindOptions) (*KindLB, error) {
	o.defaults()
	if o.Cluster == "" || o.BaseImage == "" {
		return nil, fmt.Errorf("cloud LB: cluster name and base image are required")
	}
	if _, err := dockerCmd(ctx, nil, "image", "inspect", "-f", "{{.Id}}", o.BaseImage); err != nil {
		return nil, fmt.Errorf("cloud LB: base image %s is not in the local Docker (it is the kind node image; build it with `make node-image`): %w", o.BaseImage, err)
	}
	bin := o.Binary
	if bin == "" {
		o.Progress("cloud LB: building zerodrop-lb")
		var err error
		if bin, err = buildBinary(ctx, o.CacheDir); err != nil {
			return nil, err
		}
	}
	img, err := buildImage(ctx, o, bin)
	if err != nil {
		return nil, err
	}
	subnet, err := subnetOf(ctx, o.Network)
	if err != nil {
		return nil, err
	}
	first, last, err := KindVIPRange(subnet, o.Cluster)
	if err != nil {
		return nil, err
	}
	cp := o.Cluster + "-control-plane"
	kubeconfig, err := dockerCmd(ctx, nil, "exec", cp, "cat", "/etc/kubernetes/admin.conf")
	if err != nil {
		return nil, fmt.Errorf("cloud LB: read the admin kubeconfig from %s: %w", cp, err)
	}
	name := KindContainerName(o.Cluster)
	_, _ = dockerCmd(ctx, nil, "rm", "-f", name)
	args := []string{"create", "--name", name, "--hostname", name, "--network", o.Network,
		// NET_ADMIN for nft/ip and a writable /proc/sys/net for the sysctls.
		"--privileged", "--label", KindLabel + "=" + o.Cluster, "--restart", "no",
		// A cloud LB does not share the cluster's CPUs; this one does, and
		// its L7 proxy and health checks run in user space. With the
		// default weight a rollout of every column's Pods on 2 cores gave
		// it one share of five and delayed gclb's answers by seconds
		// (2026-11-26: p50 1 s, 180 of 4,119 over 1 s, client timeouts the
		// verdict charged to the workload). cpu.shares (cpu.weight on
		// cgroup v2) of eight nodes' worth lets it run first when it
		// needs to; the LB also asks for a real-time class itself
		// (zerodrop-lb --realtime), which a host with real-time group
		// scheduling refuses a container.
		"--cpu-shares", strconv.Itoa(lbCPUShares)}
	if o.ProfileDir != "" {
		abs, err := filepath.Abs(o.ProfileDir)
		if err != nil {
			return nil, err
		}
		args = append(args, "--volume", abs+":/etc/zerodrop-lb/profiles:ro")
	}
	args = append(args, img, "--kubeconfig", "/etc/zerodrop-lb.kubeconfig", "--vip-range", first.String()+"-"+last.String(),
		"--lb-profile", o.Profile, "--admin-addr", fmt.Sprintf(":%d", o.AdminPort), fmt.Sprintf("--claim-unclassed=%v", o.ClaimAll))
	if o.ProfileDir != "" {
		args = append(args, "--profile-dir", "/etc/zerodrop-lb/profiles")
	}
	if _, err := dockerCmd(ctx, nil, args...); err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = dockerCmd(cctx, nil, "rm", "-f", name)
		}
	}()
	tmp, err := os.CreateTemp("", "zerodrop-lb-kubeconfig")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(kubeconfig); err != nil {
		return nil, err
	}
	_ = tmp.Close()
	if _, err := dockerCmd(ctx, nil, "cp", tmp.Name(), name+":/etc/zerodrop-lb.kubeconfig"); err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	if _, err := dockerCmd(ctx, nil, "start", name); err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	ipStr, err := dockerCmd(ctx, nil, "inspect", "-f", fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}", o.Network), name)
	if err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(ipStr))
	if err != nil {
		return nil, fmt.Errorf("cloud LB: container %s has no address on network %s (%q)", name, o.Network, ipStr)
	}
	k := &KindLB{Container: name, IP: ip, VIPFirst: first, VIPLast: last, adminPort: o.AdminPort}
	o.Progress(fmt.Sprintf("cloud LB: container %s at %s, addresses %s-%s, default profile %s; waiting for it to sync", name, ip, first, last, o.Profile))
	// A container that exits (a bad setting it refuses) ends the wait at
	// once, with its own words in the error.
	running := func(ctx context.Context) error {
		st, err := dockerCmd(ctx, nil, "inspect", "-f", "{{.State.Status}}", name)
		if err == nil && strings.TrimSpace(st) != "running" {
			return fmt.Errorf("container %s is %s", name, strings.TrimSpace(st))
		}
		return nil
	}
	if err := waitHealthy(ctx, k.AdminURL()+"/healthz", o.ReadyTimeout, running); err != nil {
		logs, _ := dockerCmd(context.WithoutCancel(ctx), nil, "logs", "--tail", "20", name)
		return nil, fmt.Errorf("cloud LB: %w; last log lines:\n%s", err, logs)
	}
	ok = true
	return k, nil
}

// RemoveKind removes the LB container(s) of a cluster; none is not an error.
func RemoveKind(ctx context.Context, cluster string) error {
	out, err := dockerCmd(ctx, nil, "ps", "-aq", "--filter", "label="+KindLabel+"="+cluster)
	if err != nil {
		return fmt.Errorf("cloud LB: %w", err)
	}
	for _, id := range strings.Fields(out) {
		if _, err := dockerCmd(ctx, nil, "rm", "-f", id); err != nil {
			return fmt.Errorf("cloud LB: %w", err)
		}
	}
	return nil
}

// waitHealthy waits for url to answer 200; alive, when set, ends the wait
// with its error (the server is gone).
func waitHealthy(ctx context.Context, url string, timeout time.Duration, alive func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			last = fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		cancel()
		if alive != nil {
			if err := alive(ctx); err != nil {
				return fmt.Errorf("%s will not answer: %w (last: %s)", url, err, last)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %v (last: %s)", url, timeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func buildBinary(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cloud LB: %w", err)
	}
	out := filepath.Join(dir, "zerodrop-lb")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "zerodrop.dev/zerodrop/cmd/zerodrop-lb")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var b []byte
	if err := sched.Normal(func() (err error) { b, err = cmd.CombinedOutput(); return err }); err != nil {
		return "", fmt.Errorf("cloud LB: go build zerodrop-lb (run from inside the zerodrop module, or pass a binary): %w: %s", err, b)
	}
	return out, nil
}

func buildImage(ctx context.Context, o KindOptions, bin string) (string, error) {
	f, err := os.Open(bin)
	if err != nil {
		return "", fmt.Errorf("cloud LB: binary: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", err
	}
	baseID, err := dockerCmd(ctx, nil, "image", "inspect", "-f", "{{.Id}}", o.BaseImage)
	if err != nil {
		return "", err
	}
	h.Write([]byte(strings.TrimSpace(baseID)))
	h.Write(kindDockerfile)
	tag := "zerodrop/cloud-lb:" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := dockerCmd(ctx, nil, "image", "inspect", "-f", "{{.Id}}", tag); err == nil {
		return tag, nil
	}
	o.Progress("cloud LB: building image " + tag + " FROM " + o.BaseImage)
	dir, err := os.MkdirTemp("", "zerodrop-lb-image")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), kindDockerfile, 0o644); err != nil {
		return "", err
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "zerodrop-lb"), b, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "docker", "build", "--pull=false", "-q", "--build-arg", "BASE="+o.BaseImage, "-t", tag, dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	var out []byte
	if err := sched.Normal(func() (err error) { out, err = cmd.CombinedOutput(); return err }); err != nil {
		return "", fmt.Errorf("cloud LB: docker build %s: %w: %s", tag, err, out)
	}
	return tag, nil
}

// FindKind returns the running LB of a kind cluster (nil, nil when there is
// none), e.g. for a suite to subscribe to its events with SubscribeEvents.
func FindKind(ctx context.Context, cluster, network string) (*KindLB, error) {
	if network == "" {
		network = "kind"
	}
	name := KindContainerName(cluster)
	out, err := dockerCmd(ctx, nil, "ps", "-q", "--filter", "name=^"+name+"$")
	if err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	ipStr, err := dockerCmd(ctx, nil, "inspect", "-f", fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}", network), name)
	if err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(ipStr))
	if err != nil {
		return nil, fmt.Errorf("cloud LB: container %s has no address on network %s (%q)", name, network, ipStr)
	}
	subnet, err := subnetOf(ctx, network)
	if err != nil {
		return nil, err
	}
	first, last, err := KindVIPRange(subnet, cluster)
	if err != nil {
		return nil, err
	}
	args, err := dockerCmd(ctx, nil, "inspect", "-f", "{{range .Args}}{{.}} {{end}}", name)
	if err != nil {
		return nil, fmt.Errorf("cloud LB: %w", err)
	}
	return &KindLB{Container: name, IP: ip, VIPFirst: first, VIPLast: last, adminPort: 9100,
		ClaimsUnclassed: claimsUnclassed(strings.Fields(args))}, nil
}

// claimsUnclassed reads the LB's --claim-unclassed flag from its command
// line (the flag defaults to true in cmd/zerodrop-lb) the way Go's flag
// package does: a boolean flag takes its value only as "-flag=value" (parsed
// by strconv.ParseBool) and a bare "-flag" means true, so "--claim-unclassed
// false" is true followed by a stray argument. The last occurrence wins. A
// value ParseBool rejects would have stopped the LB from starting: it reads
// as the default. (Other flags' values are not told apart from arguments:
// only this flag's spelling is looked for.)
func claimsUnclassed(args []string) bool {
	claim := true
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "claim-unclassed" {
			continue
		}
		claim = true
		if hasValue {
			if v, err := strconv.ParseBool(value); err == nil {
				claim = v
			}
		}
	}
	return claim
}
