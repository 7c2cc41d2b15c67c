//go:build e2e

package suites

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	zdv1 "zerodrop/apis/v1"
	"zerodrop/harness/cluster"
	"zerodrop/harness/scenario"
	"zerodrop/harness/verdict"
)

func TestZerodrop(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "zerodrop")
}

var (
	suite     *Suite
	collector *Collector
	created   bool
)

var _ = BeforeSuite(func(ctx SpecContext) {
	repo, err := filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	settings, err := SettingsFromEnv(os.Getenv, repo)
	Expect(err).NotTo(HaveOccurred(), "fix the environment variables and run again")
	Expect(os.MkdirAll(settings.OutDir, 0o755)).To(Succeed())

	logger := slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
	events := &SwitchSink{}
	opts := []cluster.Option{
		cluster.WithName(settings.ClusterName), cluster.WithKubeconfig(settings.Kubeconfig), cluster.WithEventSink(events),
		cluster.WithLogger(logger), cluster.WithProgress(func(msg string) { fmt.Fprintln(GinkgoWriter, "cluster:", msg) }),
		cluster.WithStateDir(filepath.Join(or(os.Getenv("ZERODROP_CACHE"), "/var/cache/zerodrop"), "state")),
	}
	if settings.NodeImage != "" {
		opts = append(opts, cluster.WithNodeImage(settings.NodeImage))
	}
	provider, err := cluster.New(settings.Provider, opts...)
	Expect(err).NotTo(HaveOccurred())

	cs, version, reachErr := reach(ctx, settings.Kubeconfig)
	if reachErr != nil {
		Expect(settings.Provider).To(Equal("kind"),
			"cluster in %s is unreachable (%v); the existing provider never creates one", settings.Kubeconfig, reachErr)
		By("creating a kind cluster (none reachable at " + settings.Kubeconfig + ")")
		Expect(provider.Create(ctx)).To(Succeed(), "create the kind cluster; `make cluster` shows each step")
		created = true
		cs, version, err = reach(ctx, settings.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
	}
	if settings.Provider == "kind" {
		By("loading " + settings.EchoImage + " into the nodes")
		Expect(provider.LoadImages(ctx, settings.EchoImage)).To(Succeed(), "build it with `make image`")
	}

	models, err := settings.Models()
	Expect(err).NotTo(HaveOccurred())
	suite = &Suite{
		Settings: settings,
		Provider: provider,
		Models:   models,
		Timing:   DefaultTiming(),
		Events:   events,
		Env: &scenario.Env{
			Clientset: cs, OutDir: settings.OutDir, Rate: settings.Rate, ReadyTimeout: settings.ReadyTimeout,
			Logger: logger, ToolVersion: toolVersion(),
		},
	}
	Expect(configureCloudLB(ctx, suite, func(msg string) { fmt.Fprintln(GinkgoWriter, msg) })).To(Succeed())
	collector = NewCollector(filepath.Join(settings.OutDir, "report.json"), zdv1.RunMeta{
		ToolVersion: toolVersion(), Provider: settings.Provider, KubernetesVersion: version,
		LBImplementation: modelNames(models), Start: time.Now(),
		Host: fmt.Sprintf("%d cores, %s/%s, rate %d rps", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, settings.Rate),
	})
}, NodeTimeout(30*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if collector != nil {
		Expect(collector.Close(time.Now())).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "report: %s\n", filepath.Join(suite.Settings.OutDir, "report.json"))
	}
	if created && suite != nil && !suite.Settings.KeepCluster {
		By("deleting the kind cluster this suite created (KEEP_CLUSTER=1 keeps it)")
		Expect(suite.Provider.Delete(ctx)).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))

// Ordered: the scenarios run in the registry's order even under
// --randomize-all (Ginkgo otherwise only keeps the order inside one top-level
// container by default), because that order is a decision (Scenarios).
// ContinueOnFailure: one scenario's failure must not skip the others, which
// an Ordered container does by default.
//
// A scenario is one disruption seen by one witness per cell (a case on one
// LB model), repeated per batch when there are more cells than the witness
// budget (Suite.RunScenario): BeforeAll runs them all, then one spec per
// cell checks its own witness, so JUnit has a line per cell.
var _ = Describe("zerodrop", Ordered, ContinueOnFailure, func() {
	settings, serr := SettingsFromEnv(os.Getenv, "..")
	models, merr := settings.Models()
	for pos, sc := range Scenarios() {
		if serr != nil || merr != nil {
			break // BeforeSuite reports the settings' error
		}
		if !settings.Shard.Has(pos) {
			continue
		}
		// Only the witnesses of cells the label filter selects are begun
		// (make e2e-smoke: -ginkgo.label-filter=smoke).
		suiteConfig, _ := GinkgoConfiguration()
		cells, ferr := selectCells(suiteConfig.LabelFilter, []string{"scenario:" + sc.Name}, sc.Cells(models))
		if ferr != nil {
			panic(ferr)
		}
		if len(cells) == 0 {
			continue
		}
		Describe(sc.Name, Ordered, Label("scenario:"+sc.Name), func() {
			var results []zdv1.Scenario
			BeforeAll(func(ctx SpecContext) {
				if sc.NeedsNodepools && suite.Settings.Provider == "existing" {
					Skip("the existing provider cannot add or remove nodepools; run with PROVIDER=kind")
				}
				suite.DeferCleanup = func(f func(context.Context) error) {
					DeferCleanup(func(ctx SpecContext) error { return f(ctx) }, NodeTimeout(10*time.Minute))
				}
				start := time.Now()
				out := suite.RunScenario(ctx, sc, cells)
				results = make([]zdv1.Scenario, len(cells))
				for i, c := range cells {
					results[i] = out[i].Scenario
					if out[i].Err != nil {
						results[i] = brokenRun(sc, c, out[i].Err)
					}
					Expect(collector.Add(results[i])).To(Succeed())
				}
				AddReportEntry("witnesses", fmt.Sprintf("%s: %d witnesses in %d disruptions (at most %d witnesses each, ZERODROP_WITNESSES) in %s",
					sc.Name, len(cells), len(Batches(cells, suite.Settings.Witnesses)), suite.Settings.Witnesses, time.Since(start).Round(time.Second)))
			}, NodeTimeout(60*time.Minute))
			for i, c := range cells {
				It(c.Name(), Label(c.Labels()...), func(ctx SpecContext) {
					result := results[i]
					// The verdict is printed once, as this report entry; the
					// assertions below refer to it instead of repeating it.
					AddReportEntry("verdict", summary(result))
					Expect(result.Verdict.Reasons).NotTo(BeEmpty(), "no verdict")
					if result.RunFile != "" {
						// The run file alone decides the verdict: analysing
						// it again, as `zerodrop analyze` does, gives the
						// same verdict, reason for reason.
						again, aerr := verdict.AnalyzeFile(ctx, filepath.Join(suite.Settings.OutDir, result.RunFile))
						Expect(aerr).NotTo(HaveOccurred(), "re-analyse %s", result.RunFile)
						Expect(again.Verdict).To(Equal(result.Verdict), "re-analysing %s alone gives another verdict than the suite's", result.RunFile)
					}
					switch c.Role {
					case zdv1.RoleAssertion:
						Expect(result.Verdict.Status).To(Equal(zdv1.Pass), "%s: %s (the verdict entry above says why)", result.Name, result.OutcomeText())
					default:
						Expect(result.Outcome()).NotTo(Equal(string(zdv1.Error)), "%s: the run broke, the hazard was not measured (the verdict entry above says why)", result.Name)
					}
				})
			}
		})
	}
})
