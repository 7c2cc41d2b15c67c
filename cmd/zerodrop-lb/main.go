// Command zerodrop-lb is zerodrop's cloud-style load balancer for kind
// clusters: it implements Services of type LoadBalancer the way GCP, AWS and
// Azure do (nodes as backends, health checks against kube-proxy, vendor
// timing from profiles), from inside its own container on the kind network.
// See package zerodrop.dev/zerodrop/harness/lb for the mechanism.
//
// Admin endpoints on --admin-addr: GET /healthz, GET /state (JSON: what the LB
// does per Service), GET /events (JSON lines, streaming; ?since=RFC3339).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/internal/cloudlb"
	"zerodrop.dev/zerodrop/internal/sched"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "zerodrop-lb:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		kubeconfig  = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (its server must be reachable from here)")
		profileName = flag.String("lb-profile", profiles.DefaultName, "profile of Services without the "+contract.LBProfileAnnotation+" annotation")
		profileDir  = flag.String("profile-dir", "", "directory of extra profile YAML files (same schema as clusters/lb/profiles)")
		vipRange    = flag.String("vip-range", "", "LoadBalancer addresses to hand out, FIRST-LAST (required)")
		iface       = flag.String("interface", "eth0", "interface towards the nodes")
		adminAddr   = flag.String("admin-addr", ":9100", "address of the admin HTTP server (/healthz, /state, /events)")
		class       = flag.String("class", contract.CloudLBClass, "spec.loadBalancerClass this LB owns")
		unclassed   = flag.Bool("claim-unclassed", true, "also implement LoadBalancer Services without a loadBalancerClass (turn off when MetalLB runs too)")
		listProf    = flag.Bool("list-profiles", false, "print the profiles (stock and --profile-dir) as JSON and exit")
		k8sMinor    = flag.Int("kubernetes-minor", 0, "apply the node rules of the Kubernetes 1.N service controller (0: the API server's version)")
		realtime    = flag.Bool("realtime", true, "run in a real-time scheduling class where the kernel allows it (internal/sched): the LB stands in for one outside the cluster, whose CPUs the cluster's Pods do not share")
	)
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	profiles, err := profiles.Load(*profileDir)
	if err != nil {
		return err
	}
	if *listProf {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(profiles)
	}
	if *vipRange == "" {
		return errors.New("--vip-range is required (e.g. 172.18.255.190-172.18.255.221)")
	}
	pool, err := cloudlb.ParseVIPRange(*vipRange)
	if err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig (or KUBECONFIG) is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.UserAgent = "zerodrop-lb"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}

	if *realtime {
		// A cloud LB does not share the cluster's CPUs; this one runs on
		// them, and its L7 proxy and health checks are user space: under
		// the default scheduler a busy node set (a rollout of every
		// column's Pods on 2 cores) delayed its answers by seconds, and
		// the client timed them out as if the workload had dropped them.
		if p, err := sched.Raise(); err != nil {
			log.Warn("scheduling stays "+p.String()+": a busy cluster can delay the LB's proxy and health checks", "err", err)
		} else {
			log.Info("scheduling: " + p.String() + " (real-time, ahead of the cluster's tasks; --realtime=false leaves it)")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	dev := *iface
	dp := cloudlb.NewDataplane(cloudlb.ExecRunner(""), dev, cloudlb.WithAnnounce(func(ip netip.Addr) error {
		err := cloudlb.GratuitousARP(dev, ip)
		if err != nil {
			log.Warn("gratuitous ARP failed", "vip", ip.String(), "err", err)
		}
		return err
	}))
	if err := dp.Prepare(ctx); err != nil {
		return fmt.Errorf("%w (the LB needs NET_ADMIN and nft/ip/sysctl in its container)", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := dp.Close(cctx); err != nil {
			log.Warn("data plane cleanup", "err", err)
		}
	}()
	proxy := cloudlb.NewL7Proxy(log, nil)
	defer proxy.Close()
	hub := cloudlb.NewEventHub(log, 10000)

	opts := []cloudlb.Option{cloudlb.WithProfiles(profiles), cloudlb.WithDefaultProfile(*profileName),
		cloudlb.WithClass(*class, *unclassed), cloudlb.WithVIPPool(pool), cloudlb.WithL4(dp), cloudlb.WithL7(proxy),
		cloudlb.WithEventSink(hub), cloudlb.WithLogger(log), cloudlb.WithBackendConfigs(dyn)}
	if *k8sMinor < 0 {
		return fmt.Errorf("--kubernetes-minor %d: want 0 (ask the API server) or a minor version such as 34", *k8sMinor)
	}
	if *k8sMinor > 0 {
		opts = append(opts, cloudlb.WithKubernetesMinor(*k8sMinor))
	}
	c, err := cloudlb.NewController(cs, opts...)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /events", hub)
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(c.State())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.Ready() {
			http.Error(w, "not synced with the API server yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ln, err := net.Listen("tcp", *adminAddr)
	if err != nil {
		return fmt.Errorf("admin server on %s: %w", *adminAddr, err)
	}
	admin := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = admin.Serve(ln) }()
	defer admin.Close()
	log.Info("zerodrop-lb started", "vipRange", *vipRange, "defaultProfile", *profileName, "profiles", strings.Join(profiles.Names(), ","), "admin", ln.Addr().String())

	err = c.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
