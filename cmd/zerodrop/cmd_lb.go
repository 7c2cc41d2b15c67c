package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
	"zerodrop.dev/zerodrop/harness/lb"
)

func lbCommand() command {
	return command{name: "lb", summary: "inspect the cloud-style LB (LB=cloud): profiles, state, events", run: runLB}
}

const lbDescription = `
Subcommands:
  start         run the LB next to a kind cluster (make cluster LB=cloud does this;
                with MetalLB present use --claim-unclassed=false: the LB then only
                takes Services with spec.loadBalancerClass zerodrop.dev/cloud-lb)
  stop          remove the cluster's LB container
  profiles      list the LB profiles (stock, plus --profile-dir) with their timing
  state         what the LB does per Service (backends, health, endpoints), JSON
  events        follow the LB's events as JSON lines until Ctrl-C

The LB is found as the container <cluster>-cloud-lb on the kind network, or
given with --url http://IP:9100.`

func runLB(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "lb", "profiles|state|events [flags]", lbDescription)
	name := fs.String("cluster", "zerodrop", "kind cluster `name`")
	url := fs.String("url", "", "LB admin `URL` (default: find the cluster's LB container)")
	dir := fs.String("profile-dir", "", "profiles, start: extra profile `dir`")
	nodeImage := fs.String("node-image", os.Getenv("KIND_NODE_IMAGE"), "start: local `image` to build the LB image FROM (the kind node image; default $KIND_NODE_IMAGE)")
	profile := fs.String("lb-profile", os.Getenv("LB_PROFILE"), "start: default `profile` (default $LB_PROFILE, else generic)")
	claim := fs.Bool("claim-unclassed", true, "start: also take LoadBalancer Services without a loadBalancerClass")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if code, ok := parseFlags(c, fs, args); !ok {
			return code
		}
		return badInput(c, "lb", "missing subcommand: start, stop, profiles, state or events")
	}
	sub := args[0]
	if code, ok := parseFlags(c, fs, args[1:]); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return badInput(c, "lb", "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	switch sub {
	case "profiles":
		ps, err := profiles.Load(*dir)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop lb profiles: %v\n", err)
			return exitBroken
		}
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMODE\tCHECK (LOCAL)\tREMOVAL LAG\tCHECK (CLUSTER)\tCORDONED\tPOOL\tUNHEALTHY FLOWS\tREMOVED FLOWS\tCLIENTIP AFFINITY")
		for _, n := range ps.Names() {
			p := ps[n]
			h := p.HealthCheck
			pool := "-"
			if p.Eligibility.PoolLabel != "" {
				pool = p.Eligibility.PoolLabel + " (default " + p.Eligibility.DefaultPool + ")"
			}
			cordon := "kept"
			if p.Eligibility.ExcludeUnschedulable {
				cordon = "dropped"
			}
			mode := string(p.Mode)
			ch := "same"
			if c := p.ClusterHealthCheck; c != nil {
				ch = fmt.Sprintf("%s %v/%v %d↑ %d↓ = %v", c.Target, c.Interval.D(), c.Timeout.D(), c.HealthyThreshold, c.UnhealthyThreshold, c.DetectionTime())
			}
			if p.Historical != "" {
				n += " (historical)"
			}
			if !p.Emulated() {
				// Timing only (the doctor, the fixtures); `lb start` refuses it.
				fmt.Fprintf(tw, "%s\t%s (not emulated)\t%s %v/%v %d↑ %d↓\t%v\t%s\t-\t-\t-\t-\t-\n", n, mode, h.Target, h.Interval.D(), h.Timeout.D(),
					h.HealthyThreshold, h.UnhealthyThreshold, h.DetectionTime(), ch)
				continue
			}
			removed := string(p.Flows.OnRemoved)
			if p.Flows.OnRemoved == profiles.FlowDrain {
				removed += " " + p.Flows.DrainTimeout.D().String()
				if p.Flows.AfterDrain == profiles.FlowKeep {
					removed += ", then kept"
				}
			}
			affinity := cmp.Or(p.SessionAffinity, profiles.AffinityIgnored)
			if p.Mode == profiles.ModeL7 {
				affinity = "-" // the proxy spreads requests; an L7 LB's affinity is not the Service's
			}
			fmt.Fprintf(tw, "%s\t%s\t%s %v/%v %d↑ %d↓\t%v\t%s\t%s\t%s\t%s\t%s\t%s\n", n, p.Mode, h.Target, h.Interval.D(), h.Timeout.D(), h.HealthyThreshold,
				h.UnhealthyThreshold, h.DetectionTime(), ch, cordon, pool, p.Flows.OnUnhealthy, removed, affinity)
		}
		_ = tw.Flush()
		return exitOK
	case "start":
		if *nodeImage == "" {
			return badInput(c, "lb", "start needs --node-image (or $KIND_NODE_IMAGE): the local kind node image to build FROM")
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		k, err := lb.StartKind(sctx, lb.KindOptions{Cluster: *name, BaseImage: *nodeImage, Profile: *profile, ProfileDir: *dir,
			ClaimAll: *claim, Progress: func(m string) { fmt.Fprintln(c.stdout, m) }})
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop lb start: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(c.stdout, "cloud LB %s ready: admin %s, addresses %s-%s\n", k.Container, k.AdminURL(), k.VIPFirst, k.VIPLast)
		return exitOK
	case "stop":
		if err := lb.RemoveKind(ctx, *name); err != nil {
			fmt.Fprintf(c.stderr, "zerodrop lb stop: %v\n", err)
			return exitFailed
		}
		return exitOK
	case "state", "events":
	default:
		return badInput(c, "lb", "unknown subcommand %q: want start, stop, profiles, state or events", sub)
	}
	base := *url
	if base == "" {
		k, err := lb.FindKind(ctx, *name, "kind")
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop lb %s: %v\n", sub, err)
			return exitBroken
		}
		if k == nil {
			fmt.Fprintf(c.stderr, "zerodrop lb %s: cluster %q has no cloud LB (bring it up with `make cluster LB=cloud`) \n", sub, *name)
			return exitBroken
		}
		base = k.AdminURL()
	}
	if sub == "state" {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		all, err := lb.FetchState(rctx, base)
		if err != nil {
			fmt.Fprintf(c.stderr, "zerodrop lb state: %v\n", err)
			return exitFailed
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(all)
		return exitOK
	}
	enc := json.NewEncoder(c.stdout)
	err := lb.SubscribeEvents(ctx, base, zdv1.EventFunc(func(e zdv1.Event) error { return enc.Encode(e) }), nil)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "zerodrop lb events: %v\n", err)
		return exitFailed
	}
	return exitOK
}
