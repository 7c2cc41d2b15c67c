package e2e

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/kube"
)

// Kind describes zerodrop's kind cluster for KindCluster.
type Kind struct {
	// Name is the cluster's name (default "zerodrop", as `make cluster`).
	Name string
	// Kubeconfig is where the cluster's kubeconfig is, or is written when
	// KindCluster creates it. Required.
	Kubeconfig string
	// CacheDir keeps the host state between create and delete (default:
	// zerodrop under os.UserCacheDir).
	CacheDir string
	// Images are local Docker images loaded into every node, since the
	// nodes pull nothing (the echo server's, zerodrop/echo-server:dev, for
	// workloads like examples/web.yaml; `make image` builds it).
	Images []string
}

// createdKey marks, in the environment's context, a kind cluster that
// KindCluster created, so DeleteKindCluster removes that one and no other.
type createdKey struct{ name string }

// KindCluster is an environment function that makes zerodrop's kind
// cluster the environment's: the one that answers at k.Kubeconfig, or a
// new one made as `make cluster` makes it (node pools, MetalLB answering
// Services of type LoadBalancer; the node image from `make node-image`),
// with k.Images loaded into its nodes. DeleteKindCluster, as a Finish
// function, removes it again if this function made it.
func KindCluster(k Kind) types.EnvFunc {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if k.Kubeconfig == "" {
			return ctx, errors.New("zerodrop: KindCluster needs the path of the cluster's kubeconfig")
		}
		p, err := k.provider()
		if err != nil {
			return ctx, err
		}
		if _, _, reachErr := kube.Reach(k.Kubeconfig); reachErr != nil {
			// Created here, so removed on a failure below: a later run
			// would take it for someone else's.
			if err := p.Create(ctx); err != nil {
				return ctx, fmt.Errorf("zerodrop: none answered at %s (%v), and creating kind cluster %s failed (`make cluster` shows each step): %w", k.Kubeconfig, reachErr, k.name(), err)
			}
			ctx = context.WithValue(ctx, createdKey{k.name()}, true)
		}
		if len(k.Images) > 0 {
			if err := p.LoadImages(ctx, k.Images...); err != nil {
				return ctx, fmt.Errorf("zerodrop: load %v into kind cluster %s (build them first; the nodes pull nothing): %w", k.Images, k.name(), err)
			}
		}
		cfg.WithKubeconfigFile(k.Kubeconfig)
		return ctx, nil
	}
}

// DeleteKindCluster is a Finish function that removes the kind cluster
// KindCluster made in this environment; one it found running stays.
func DeleteKindCluster(k Kind) types.EnvFunc {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if created, _ := ctx.Value(createdKey{k.name()}).(bool); !created {
			return ctx, nil
		}
		p, err := k.provider()
		if err != nil {
			return ctx, err
		}
		if err := p.Delete(ctx); err != nil {
			return ctx, fmt.Errorf("zerodrop: remove kind cluster %s (make cluster-down removes it by hand): %w", k.name(), err)
		}
		return ctx, nil
	}
}

func (k Kind) name() string {
	if k.Name == "" {
		return "zerodrop"
	}
	return k.Name
}

// provider is the kind provider of k, with MetalLB as its LB.
func (k Kind) provider() (cluster.Provider, error) {
	opts := []cluster.Option{cluster.WithName(k.name()), cluster.WithKubeconfig(k.Kubeconfig)}
	if k.CacheDir != "" {
		opts = append(opts, cluster.WithCacheDir(k.CacheDir))
	}
	p, err := cluster.New("kind", opts...)
	if err != nil {
		return nil, fmt.Errorf("zerodrop: %w", err)
	}
	return p, nil
}
