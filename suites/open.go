package suites

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/cluster"
	"zerodrop.dev/zerodrop/harness/evidence"
	"zerodrop.dev/zerodrop/harness/kube"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/scenario"
	"zerodrop.dev/zerodrop/internal/kubeversion"
	"zerodrop.dev/zerodrop/internal/sched"
)

// Session is a suite ready to run scenarios on its cluster, with the
// report it streams to. The Ginkgo driver and `zerodrop test` open one the
// same way.
type Session struct {
	Suite     *Suite
	Collector *Collector
	// created: Open made the kind cluster, so Close removes it (unless
	// Settings.KeepCluster).
	created bool
}

// Open reaches the cluster of settings (creating a kind cluster when none
// answers and the provider is kind), loads the echo image into kind, and
// connects the cloud LB's columns; the report goes to
// settings.OutDir/report.json. progress gets one line per step.
func Open(ctx context.Context, settings Settings, logger *slog.Logger, progress func(string)) (_ *Session, err error) {
	if err := os.MkdirAll(settings.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	events := &SwitchSink{}
	opts := []cluster.Option{
		cluster.WithName(settings.ClusterName), cluster.WithKubeconfig(settings.Kubeconfig), cluster.WithEventSink(events),
		cluster.WithLogger(logger), cluster.WithProgress(func(msg string) { progress("cluster: " + msg) }),
		cluster.WithCacheDir(settings.CacheDir),
	}
	if settings.NodeImage != "" {
		opts = append(opts, cluster.WithNodeImage(settings.NodeImage))
	}
	if len(settings.KubeProxyGates) > 0 {
		opts = append(opts, cluster.WithKubeProxyFeatureGates(settings.KubeProxyGates))
	}
	provider, err := cluster.New(settings.Provider, opts...)
	if err != nil {
		return nil, err
	}
	sess := &Session{}
	cs, version, reachErr := kube.Reach(settings.Kubeconfig)
	if reachErr != nil {
		if settings.Provider != "kind" {
			return nil, fmt.Errorf("cluster in %s is unreachable (%w); the existing provider never creates one", settings.Kubeconfig, reachErr)
		}
		progress("creating a kind cluster (none reachable at " + settings.Kubeconfig + ")")
		if err := provider.Create(ctx); err != nil {
			return nil, fmt.Errorf("create the kind cluster (`make cluster` shows each step): %w", err)
		}
		sess.created = true
		// A set-up that fails after this point removes the cluster it made:
		// a later run would find it reachable, take it for someone else's
		// and never remove it.
		defer func() {
			if err != nil && !settings.KeepCluster {
				progress("deleting the kind cluster this run created: the set-up failed")
				if derr := provider.Delete(context.WithoutCancel(ctx)); derr != nil {
					err = fmt.Errorf("%w (and removing the cluster failed: %v; run make cluster-down)", err, derr)
				}
			}
		}()
		if cs, version, err = kube.Reach(settings.Kubeconfig); err != nil {
			return nil, err
		}
	}
	if settings.Provider == "kind" {
		progress("loading " + settings.EchoImage + " into the nodes")
		if err := provider.LoadImages(ctx, settings.EchoImage); err != nil {
			return nil, fmt.Errorf("load %s (build it with `make image`): %w", settings.EchoImage, err)
		}
		if len(settings.Images) > 0 {
			progress(fmt.Sprintf("loading %v into the nodes", settings.Images))
			if err := provider.LoadImages(ctx, settings.Images...); err != nil {
				return nil, fmt.Errorf("load %v, the fronts' images the selected cells need (build them with `make proxy-images`): %w", settings.Images, err)
			}
		}
	}
	models, err := settings.Models()
	if err != nil {
		return nil, err
	}
	pauses := load.NewPauseWatch()
	if settings.PauseTraces > 0 {
		// Half the send-lag bound: a pause that long is the same stall as
		// one that breaks the bound, caught far more often.
		// The highest rate has the tightest bound.
		bound := zdv1.LoadSettings{Rate: max(settings.Rate, settings.AssertionRate)}.SendLagBound() / 2
		if err := pauses.WithTrace(load.PauseTrace{Dir: filepath.Join(settings.OutDir, "pause-traces"), Min: bound, Max: settings.PauseTraces}); err != nil {
			return nil, fmt.Errorf("ZERODROP_PAUSE_TRACE: %w", err)
		}
		progress(fmt.Sprintf("keeping a flight recorder: up to %d execution traces of pauses of %v or more, in %s",
			settings.PauseTraces, bound, filepath.Join(settings.OutDir, "pause-traces")))
	}
	ports, err := load.NewPorts()
	if err != nil {
		return nil, err
	}
	key, keyNote, err := evidence.Resolve(settings.SignKey, settings.KeyDir)
	if err != nil {
		return nil, fmt.Errorf("ZERODROP_SIGN_KEY: %w", err)
	}
	progress(keyNote)
	s := &Suite{
		Settings: settings, Provider: provider, Models: models, Timing: settings.Timing(), Events: events,
		Env: &scenario.Env{
			Clientset: cs, OutDir: settings.OutDir, Rate: settings.Rate, ReadyTimeout: settings.ReadyTimeout,
			Logger: logger, ToolVersion: settings.ToolVersion, Pauses: pauses, Ports: ports,
		},
	}
	if key != nil {
		// Only a key: a nil *Key in the interface would read as a sealer.
		s.Env.Sealer = key
	}
	if err := configureCloudLB(ctx, s, progress); err != nil {
		return nil, err
	}
	if err := configureKubeVIP(ctx, s, progress); err != nil {
		return nil, err
	}
	if err := configureRouter(ctx, s, progress); err != nil {
		return nil, err
	}
	if settings.Realtime {
		// Once the cluster, its images and the cloud LB are up; the docker,
		// kind and build commands the harness starts later run in the
		// default class (sched.Normal).
		if p, err := sched.Raise(); err != nil {
			progress(fmt.Sprintf("load scheduling stays %s: %v; a busy machine may then stall the load past its send-lag bound (such a span is reported unmeasured, not passed)", p, err))
		} else {
			progress("load scheduling: " + p.String() + " (real-time, ahead of the cluster's tasks; ZERODROP_REALTIME=off leaves it)")
		}
	}
	sess.Suite = s
	if v, perr := kubeversion.Parse(version); perr == nil {
		s.Kubernetes = v
	} else {
		progress(fmt.Sprintf("the API server's version %q is not one zerodrop reads (%v): the workload is written for a current release", version, perr))
	}
	// A release measured with a kube-proxy gate changed is another column
	// of the matrix than the release as shipped: the report says which.
	gates, known, err := cluster.KubeProxyFeatureGates(ctx, cs)
	switch {
	case err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)):
		// Only the report's column needs them: a run on a cluster where
		// this user may not read kube-system goes on without.
		progress(fmt.Sprintf("kube-proxy's feature gates are unknown (%v): the report's column cannot name them; "+
			"`get configmaps` in kube-system would let it", err))
	case err != nil:
		return nil, err
	case !known:
		progress("kube-proxy's feature gates are unknown (no kube-system/kube-proxy ConfigMap with config.conf)")
	case len(gates) > 0:
		progress("kube-proxy feature gates: " + gates.String())
	}
	if want := settings.KubeProxyGates; len(want) > 0 && (!known || gates.String() != want.String()) {
		// A cluster reused from an earlier run keeps the gates it was made
		// with; measuring it under the asked ones' name would be wrong.
		return nil, fmt.Errorf("KUBE_PROXY_FEATURE_GATES=%s, but the cluster's kube-proxy runs with %q (known: %t): "+
			"it was made with other gates; remove it (make cluster-down) so the run makes one with these", want, gates.String(), known)
	}
	s.KubeProxy = KubeProxy{Version: s.Kubernetes, Gates: gates}
	sess.Collector = NewCollector(filepath.Join(settings.OutDir, "report.json"), zdv1.RunMeta{
		ToolVersion: settings.ToolVersion, Provider: settings.Provider, KubernetesVersion: version,
		KubeProxyFeatureGates: gates.String(),
		LBImplementation:      lbImplementation(models, s.RouterInfo, s.KubeVIPInfo), Start: time.Now(),
		Host: fmt.Sprintf("%d cores, %s/%s, rate %d rps (assertions %d rps)", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, settings.Rate, settings.AssertionRate),
	})
	return sess, nil
}

// Close ends the report and removes the kind cluster Open made, unless
// Settings.KeepCluster.
func (s *Session) Close(ctx context.Context, progress func(string)) error {
	var err error
	if s.Collector != nil {
		err = s.Collector.Close(time.Now())
	}
	if s.created && !s.Suite.Settings.KeepCluster {
		progress("deleting the kind cluster this run created (KEEP_CLUSTER=1 keeps it)")
		if derr := s.Suite.Provider.Delete(ctx); derr != nil && err == nil {
			err = derr
		}
	}
	return err
}
