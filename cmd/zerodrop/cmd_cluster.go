package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/router"
)

func clusterCommand() command {
	return command{name: "cluster", summary: "bring a test cluster up or down, add or remove nodepools", run: runCluster}
}

const clusterDescription = `
Subcommands:
  up                          create the cluster (kind: nodes, flannel, CoreDNS,
                              MetalLB) and print the kubeconfig path
  down                        delete everything 'up' made and restore the host
                              sysctls kubelet changed
  nodes                       list the nodes with pool, IP and readiness
  add-pool NAME COUNT         add a nodepool of COUNT nodes (kind only)
  remove-pool NAME            drain, delete and destroy a nodepool (kind only)

Providers: kind (local Docker; the node image comes from --node-image,
$KIND_NODE_IMAGE, or 'make node-image') and existing (the cluster in
$KUBECONFIG; never created, deleted or re-pooled).

Ctrl-C during 'up' removes whatever it had created.
Exit status: 0 done, 1 the operation failed, 2 bad input.`

func runCluster(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "cluster", "up|down|nodes|add-pool|remove-pool [args] [flags]", clusterDescription)
	provider := fs.String("provider", envOr("PROVIDER", "kind"), "cluster `provider`: "+strings.Join(cluster.Providers(), " or "))
	name := fs.String("name", "zerodrop", "cluster `name`")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `path` (kind: written; existing: read, default $KUBECONFIG)")
	nodeImage := fs.String("node-image", os.Getenv("KIND_NODE_IMAGE"), "kind node `image` (default $KIND_NODE_IMAGE, else "+cluster.DefaultNodeImage+")")
	metallbManifest := fs.String("metallb-manifest", os.Getenv("ZERODROP_METALLB_MANIFEST"), "up: MetalLB's metallb-native.yaml `file`, for a node image that does not carry it (default $ZERODROP_METALLB_MANIFEST)")
	stateDir := fs.String("state-dir", filepath.Join(envOr("ZERODROP_CACHE", "/var/cache/zerodrop"), "state"), "`dir` recording host state between up and down")
	timeout := fs.Duration("timeout", 15*time.Minute, "overall time limit")
	labels := fs.String("labels", "", "add-pool: extra node labels, k=v,k2=v2")
	retain := fs.Bool("retain", os.Getenv("ZERODROP_RETAIN") != "", "up: keep a cluster whose creation failed, for debugging (default: $ZERODROP_RETAIN set)")
	lbKind := fs.String("lb", envOr("LB", contract.LBMetalLB), "up: what implements LoadBalancer Services: "+strings.Join(contract.LoadBalancers(), ", ")+" (both side by side) (default $LB, else metallb)")
	lbProfile := fs.String("lb-profile", os.Getenv("LB_PROFILE"), "up: default profile of the cloud LB (default $LB_PROFILE, else generic)")
	proxyGates := fs.String("kube-proxy-feature-gates", os.Getenv("KUBE_PROXY_FEATURE_GATES"), "up: kube-proxy's feature `gates`, Name=false,Other=true, e.g. ProxyTerminatingEndpoints=false on v1.27 to measure without KEP-1669 (default $KUBE_PROXY_FEATURE_GATES)")
	routerImage := fs.String("router-image", os.Getenv("ZERODROP_ROUTER_IMAGE"), "up: the upstream router `image` (clusters/images/build-router.sh) for MetalLB's BGP mode, which the cluster then runs beside layer 2 (column metallb-bgp); none without it (default $ZERODROP_ROUTER_IMAGE)")
	routerHash := fs.String("router-hash", envOr("ROUTER_HASH", "l4"), "up: the router's ECMP `hash` policy: l3 (addresses) or l4 (the 5-tuple) (default $ROUTER_HASH, else l4)")
	routerGroups := fs.String("router-ecmp", envOr("ROUTER_ECMP", "hash-threshold"), "up: how the router's kernel spreads flows over a route's nodes: hash-threshold (the multipath route FRR installs: a node that leaves or comes moves other nodes' flows too) or resilient (resilient nexthop groups: only its own) (default $ROUTER_ECMP, else hash-threshold)")
	routerHold := fs.String("router-hold-time", os.Getenv("ROUTER_HOLD_TIME"), "up: the BGP hold `time` the router offers the speakers (the session takes the lower of both sides'; MetalLB offers 90s); 0 keeps FRR's default (default $ROUTER_HOLD_TIME)")
	kubeVIP := fs.Bool("kube-vip", os.Getenv("ZERODROP_KUBE_VIP") != "0", "up: with --lb all, run kube-vip (services mode: ARP, and BGP behind a router of its own when there is a router image) for columns kube-vip-arp and kube-vip-bgp; false leaves it out (docs/kube-vip.md) (default: unless $ZERODROP_KUBE_VIP is 0)")
	kubeVIPBGP := fs.Bool("kube-vip-bgp", os.Getenv("ZERODROP_KUBE_VIP_BGP") != "0", "up: with --kube-vip and a router image, run kube-vip's BGP mode too (column kube-vip-bgp, behind a router of its own); false leaves it out, and with it its 90 s hold on its own departures' machines (docs/kube-vip.md) (default: unless $ZERODROP_KUBE_VIP_BGP is 0)")
	kubeVIPARPRate := fs.String("kube-vip-arp-rate", envOr("KUBE_VIP_ARP_RATE", cluster.DefaultKubeVIPARPRate.String()), "up: how often kube-vip's ARP mode announces each address it holds (vip_arpRate, at least 500ms; it sends none on taking a Service's lease) (default $KUBE_VIP_ARP_RATE, else 3s)")
	verbose := fs.Bool("v", false, "log details (kind's own messages, events)")
	// Subcommand first, flags anywhere after it.
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if code, ok := parseFlags(c, fs, args); !ok {
			return code
		}
		return badInput(c, "cluster", "missing subcommand: up, down, nodes, add-pool or remove-pool")
	}
	sub, rest := args[0], args[1:]
	var pos []string
	for len(rest) > 0 {
		if code, ok := parseFlags(c, fs, rest); !ok {
			return code
		}
		rest = fs.Args()
		if len(rest) > 0 {
			pos = append(pos, rest[0])
			rest = rest[1:]
		}
	}

	start := time.Now()
	progress := func(msg string) {
		fmt.Fprintf(c.stdout, "[%5.1fs] %s\n", time.Since(start).Seconds(), msg)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
	opts := []cluster.Option{
		cluster.WithName(*name), cluster.WithStateDir(*stateDir), cluster.WithCacheDir(envOr("ZERODROP_CACHE", "/var/cache/zerodrop")), cluster.WithRetainOnFailure(*retain), cluster.WithProgress(progress), cluster.WithLogger(logger),
	}
	if *kubeconfig != "" {
		opts = append(opts, cluster.WithKubeconfig(*kubeconfig))
	}
	if *nodeImage != "" {
		opts = append(opts, cluster.WithNodeImage(*nodeImage))
	}
	if *metallbManifest != "" {
		if _, err := os.Stat(*metallbManifest); err != nil {
			return badInput(c, "cluster", "--metallb-manifest: %v", err)
		}
		opts = append(opts, cluster.WithMetalLBManifest(*metallbManifest))
	}
	gates, err := cluster.ParseFeatureGates(*proxyGates)
	if err != nil {
		return badInput(c, "cluster", "--kube-proxy-feature-gates (default $KUBE_PROXY_FEATURE_GATES): %v", err)
	}
	if len(gates) > 0 {
		opts = append(opts, cluster.WithKubeProxyFeatureGates(gates))
	}
	switch *lbKind {
	case contract.LBMetalLB, contract.LBCloud, contract.LBAll:
		opts = append(opts, cluster.WithLoadBalancer(*lbKind, *lbProfile))
	default:
		return badInput(c, "cluster", "--lb %q: want %s", *lbKind, strings.Join(contract.LoadBalancers(), " or "))
	}
	if !*kubeVIP {
		opts = append(opts, cluster.WithoutKubeVIP())
	}
	if !*kubeVIPBGP {
		opts = append(opts, cluster.WithoutKubeVIPBGP())
	}
	arpRate, err := time.ParseDuration(*kubeVIPARPRate)
	if err == nil {
		err = cluster.ValidKubeVIPARPRate(arpRate)
	}
	if err != nil {
		return badInput(c, "cluster", "--kube-vip-arp-rate (default $KUBE_VIP_ARP_RATE) %q: %v", *kubeVIPARPRate, err)
	}
	opts = append(opts, cluster.WithKubeVIPARPRate(arpRate))
	if *routerImage != "" {
		hash, err := router.ParseHashPolicy(*routerHash)
		if err != nil {
			return badInput(c, "cluster", "--router-hash (default $ROUTER_HASH): %v", err)
		}
		groups, err := router.ParseGroupType(*routerGroups)
		if err != nil {
			return badInput(c, "cluster", "--router-ecmp (default $ROUTER_ECMP): %v", err)
		}
		if *lbKind == contract.LBCloud {
			return badInput(c, "cluster", "--router-image: MetalLB's BGP mode needs MetalLB, and --lb %s runs none", *lbKind)
		}
		var hold time.Duration
		if *routerHold != "" {
			if hold, err = time.ParseDuration(*routerHold); err != nil || hold < 0 {
				return badInput(c, "cluster", "--router-hold-time (default $ROUTER_HOLD_TIME) %q: want a duration such as 9s", *routerHold)
			}
		}
		opts = append(opts, cluster.WithBGPRouter(*routerImage, router.Tuning{Hash: hash, Groups: groups, HoldTime: hold}))
	}
	want := map[string]int{"up": 0, "down": 0, "nodes": 0, "add-pool": 2, "remove-pool": 1}
	n, known := want[sub]
	if !known {
		return badInput(c, "cluster", "unknown subcommand %q: want up, down, nodes, add-pool or remove-pool", sub)
	}
	if len(pos) != n {
		return badInput(c, "cluster", "%s takes %d argument(s), got %d (%s)", sub, n, len(pos), strings.Join(pos, " "))
	}
	p, err := cluster.New(*provider, opts...)
	if err != nil {
		return badInput(c, "cluster", "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "zerodrop cluster %s: %v\n", sub, err)
		if errors.Is(err, cluster.ErrUnsupported) {
			return exitBroken
		}
		return exitFailed
	}
	switch sub {
	case "up":
		if err := p.Create(ctx); err != nil {
			return fail(err)
		}
		nodes, err := p.Nodes(ctx)
		if err != nil {
			return fail(err)
		}
		printNodes(c, nodes)
		progress(fmt.Sprintf("cluster ready (%s provider, %d nodes)", p.Name(), len(nodes)))
		fmt.Fprintf(c.stdout, "KUBECONFIG=%s\n", p.Kubeconfig())
	case "down":
		if err := p.Delete(ctx); err != nil {
			return fail(err)
		}
		progress("cluster down")
	case "nodes":
		nodes, err := p.Nodes(ctx)
		if err != nil {
			return fail(err)
		}
		printNodes(c, nodes)
	case "add-pool":
		var count int
		if _, err := fmt.Sscan(pos[1], &count); err != nil || count < 1 {
			return badInput(c, "cluster", "add-pool COUNT %q: want a positive integer", pos[1])
		}
		lm, err := parseLabels(*labels)
		if err != nil {
			return badInput(c, "cluster", "--labels: %v", err)
		}
		if err := p.AddNodePool(ctx, pos[0], count, lm, nil); err != nil {
			return fail(err)
		}
		progress("nodepool " + pos[0] + " added")
	case "remove-pool":
		if err := p.RemoveNodePool(ctx, pos[0]); err != nil {
			return fail(err)
		}
		progress("nodepool " + pos[0] + " removed")
	}
	return exitOK
}

func printNodes(c *cli, nodes []cluster.Node) {
	fmt.Fprintf(c.stdout, "%-32s %-14s %-8s %-15s %s\n", "NODE", "ROLE", "POOL", "IP", "READY")
	for _, n := range nodes {
		fmt.Fprintf(c.stdout, "%-32s %-14s %-8s %-15s %v\n", n.Name, n.Role, n.Pool, n.InternalIP, n.Ready)
	}
}

func parseLabels(s string) (map[string]string, error) {
	m := map[string]string{}
	if s == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not k=v", kv)
		}
		m[k] = v
	}
	return m, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
