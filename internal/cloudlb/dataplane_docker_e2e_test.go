//go:build e2e

package cloudlb

// The data plane between Docker containers on a Docker bridge, with the host as
// the client: the same path as on kind (host -> LB container -> node container,
// reply node -> host directly), including whatever the host's bridge
// netfilter does. Needs a running Docker with a zerodrop/debian-base image
// (`make node-image` builds it). Traffic only to the network this test creates.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

func dockerRunner(container string) Runner {
	return func(ctx context.Context, stdin, name string, args ...string) ([]byte, error) {
		a := append([]string{"exec", "-i", container, name}, args...)
		cmd := exec.CommandContext(ctx, "docker", a...)
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("docker %s: %w: %s", strings.Join(a, " "), err, out)
		}
		return out, nil
	}
}

func TestDataplaneDockerBridgeE2E(t *testing.T) {
	ctx := context.Background()
	base, err := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "zerodrop/debian-base").Output()
	if err != nil || strings.TrimSpace(string(base)) == "" {
		t.Fatalf("needs Docker and a zerodrop/debian-base image (make node-image): %v", err)
	}
	image := strings.Fields(string(base))[0]
	id := fmt.Sprint(os.Getpid() % 100000)
	netName := "zdlb-test-" + id
	const (
		subnet = "10.215.0.0/24"
		hostIP = "10.215.0.1"
		lbIP   = "10.215.0.2"
		vip    = "10.215.0.200"
	)
	nodes := map[string]string{"n1": "10.215.0.11", "n2": "10.215.0.12"}
	ctr := func(role string) string { return "zdlb-" + id + "-" + role }
	cleanup := func() {
		for _, r := range []string{"lb", "n1", "n2"} {
			_ = exec.Command("docker", "rm", "-f", ctr(r)).Run()
		}
		_ = exec.Command("docker", "network", "rm", netName).Run()
	}
	cleanup()
	t.Cleanup(cleanup)
	sh(t, "docker", "network", "create", "--subnet", subnet, "--gateway", hostIP, netName)
	run := func(role, ip string) {
		sh(t, "docker", "run", "-d", "--name", ctr(role), "--hostname", role, "--network", netName, "--ip", ip, "--privileged",
			"--entrypoint", "sleep", image, "infinity")
	}
	run("lb", lbIP)
	echoBin := filepath.Join(t.TempDir(), "echo-server")
	build := exec.Command("go", "build", "-o", echoBin, "zerodrop.dev/zerodrop/echo-server")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo-server: %v: %s", err, out)
	}
	for n, ip := range nodes {
		run(n, ip)
		sh(t, "docker", "cp", echoBin, ctr(n)+":/usr/local/bin/echo-server")
		sh(t, "docker", "exec", "-d", "-e", "POD_NAME=pod-"+n, "-e", "NODE_NAME="+n, ctr(n), "/usr/local/bin/echo-server", "--listen", ":8080", "--admin-listen", ":8081")
		sh(t, "docker", "exec", ctr(n), "iptables", "-t", "nat", "-A", "PREROUTING", "-d", vip, "-p", "tcp", "--dport", "80", "-j", "DNAT", "--to-destination", ip+":8080")
	}
	dp := NewDataplane(dockerRunner(ctr("lb")), "eth0")
	if err := dp.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := func(active, draining []string) DPConfig {
		ns := map[string]netip.Addr{}
		for n, ip := range nodes {
			ns[n] = netip.MustParseAddr(ip)
		}
		return DPConfig{Nodes: ns, VIPs: []netip.Addr{netip.MustParseAddr(vip)},
			Services: []DPService{{Key: "e2e/web", VIP: netip.MustParseAddr(vip), Ports: []DPPort{{ProtoTCP, 80}}, Active: active, Draining: draining,
				CloseAction: profiles.CloseReset, NoBackends: profiles.CloseReset, IdleTimeout: time.Minute}}}
	}
	if err := dp.Apply(ctx, cfg([]string{"n1", "n2"}, nil)); err != nil {
		t.Fatal(err)
	}
	type reply struct {
		Node     string `json:"node"`
		ClientIP string `json:"client_ip"`
	}
	get := func(c *http.Client) (reply, error) {
		resp, err := c.Get("http://" + vip + "/")
		if err != nil {
			return reply{}, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r reply
		return r, json.Unmarshal(b, &r)
	}
	oneShot := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// The echo server starts in the background: wait for both nodes to answer.
	waitDeadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]int{}
		for i := 0; i < 10; i++ {
			if r, err := get(oneShot); err == nil {
				got[r.Node]++
			}
		}
		if got["n1"] > 0 && got["n2"] > 0 {
			break
		}
		if time.Now().After(waitDeadline) {
			t.Fatalf("both nodes did not answer through the VIP within 20s: %v", got)
		}
		time.Sleep(300 * time.Millisecond)
	}
	got := map[string]int{}
	for i := 0; i < 40; i++ {
		r, err := get(oneShot)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if r.ClientIP != hostIP {
			t.Fatalf("node %s saw client %s, want the host's %s", r.Node, r.ClientIP, hostIP)
		}
		got[r.Node]++
	}
	t.Logf("40 requests from the host: %v, client_ip %s preserved on all", got, hostIP)

	// A keep-alive connection stays on its node while it drains.
	c, err := net.DialTimeout("tcp4", vip+":80", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func() (reply, error) {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: vip\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return reply{}, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r reply
		return r, json.Unmarshal(b, &r)
	}
	first, err := ask()
	if err != nil {
		t.Fatal(err)
	}
	x := first.Node
	if err := dp.Apply(ctx, cfg([]string{other(x)}, []string{x})); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		r, err := ask()
		if err != nil || r.Node != x {
			t.Fatalf("established connection after %s started draining: %+v, %v", x, r, err)
		}
	}
	got = map[string]int{}
	for i := 0; i < 20; i++ {
		r, err := get(oneShot)
		if err != nil {
			t.Fatal(err)
		}
		got[r.Node]++
	}
	if got[x] != 0 {
		t.Fatalf("new connections reached draining %s: %v", x, got)
	}
	t.Logf("draining %s: the kept-alive connection stayed on it; 20 new connections: %v", x, got)
}
