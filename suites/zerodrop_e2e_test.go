//go:build e2e

package suites

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestZerodrop(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "zerodrop")
}

var (
	session   *Session
	suite     *Suite
	collector *Collector
	// runPlan is the run's plan (PlanFor), made while the spec tree is
	// built: the cells of each scenario, their timeouts, the progress.
	runPlan Plan
)

var _ = BeforeSuite(func(ctx SpecContext) {
	repo, err := filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	settings, err := SettingsFromEnv(os.Getenv, repo)
	Expect(err).NotTo(HaveOccurred(), "fix the environment variables and run again")
	settings.Images = runPlan.Images()
	logger := slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
	session, err = Open(ctx, settings, logger, func(msg string) { fmt.Fprintln(GinkgoWriter, msg) })
	Expect(err).NotTo(HaveOccurred())
	suite, collector = session.Suite, session.Collector
	suite.Progress = NewProgress(runPlan, progressFile(settings.OutDir), logger.Info)
	fmt.Fprintln(GinkgoWriter, "plan (zerodrop plan prints it before any cluster):")
	Expect(runPlan.Write(GinkgoWriter)).To(Succeed())
}, NodeTimeout(30*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if session != nil {
		Expect(session.Close(ctx, func(msg string) { By(msg) })).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "report: %s\n", filepath.Join(suite.Settings.OutDir, "report.json"))
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
// budget (the plan's batches, Suite.RunBatches): BeforeAll runs them all, then one spec per
// cell checks its own witness, so JUnit has a line per cell.
var _ = Describe("zerodrop", Ordered, ContinueOnFailure, func() {
	settings, serr := SettingsFromEnv(os.Getenv, "..")
	if _, merr := settings.Models(); serr != nil || merr != nil {
		return // BeforeSuite reports the settings' error
	}
	// Only the witnesses of cells the label filter selects are begun
	// (make e2e-smoke: -ginkgo.label-filter=smoke), and of those only the
	// shard's (SHARD=i/n: the plan deals batches, longest first).
	suiteConfig, _ := GinkgoConfiguration()
	plan, perr := PlanFor(settings, suiteConfig.LabelFilter)
	if perr != nil {
		panic(perr)
	}
	runPlan = plan
	for _, sc := range settings.Scenarios() {
		cells := plan.CellsOf(sc.Name)
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
				// The plan's own batches (the disruptions it estimated and
				// progress counts), with the cluster's limits applied.
				var note string
				var err error
				results, note, err = suite.RunPlanned(ctx, sc, plan, collector)
				Expect(err).NotTo(HaveOccurred())
				Expect(results).To(HaveLen(len(cells)))
				AddReportEntry("witnesses", note)
			}, NodeTimeout(Timeout(plan.ScenarioEstimate(sc.Name))))
			for i, c := range cells {
				It(c.Name(), Label(c.Labels()...), func(ctx SpecContext) {
					result := results[i]
					// The verdict is printed once, as this report entry; the
					// assertions below refer to it instead of repeating it.
					AddReportEntry("verdict", summary(result))
					Expect(result.Verdict.Reasons).NotTo(BeEmpty(), "no verdict")
					// The run file alone decides the verdict, and a
					// measurement taken again replaced only one the load
					// generator spoiled.
					Expect(Recheck(ctx, suite.Settings.OutDir, result)).To(Succeed())
					// The run's role: a limit that depends on the cluster's
					// kube-proxy may have made an assertion cell document
					// (Scenario.OnCluster).
					Expect(Passed(result)).To(BeEmpty(), "the verdict entry above says why")
				})
			}
		})
	}
})
