package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"zerodrop.dev/zerodrop/suites"
)

func planCommand() command {
	return command{name: "plan", summary: "print what `make e2e` will run (cells, disruptions, Deployments, minutes) before any cluster exists", run: runPlan}
}

const planDescription = `
Prints the plan of the main job for the settings in the environment (the
variables make e2e reads: LB, LB_PROFILE, SHARD, ZERODROP_WITNESSES,
ZERODROP_RATE, ZERODROP_ASSERTION_RATE, ZERODROP_KEEPALIVE, ZERODROP_CONTROL,
PROVIDER): per scenario its cells, the disruptions they watch (batches of at
most ZERODROP_WITNESSES cells), the Deployments they deploy (cells of one Pod
recipe share theirs), the load of its heaviest disruption (requests/s, each
cell at its role's rate) and the estimated minutes, then the whole and the
timeout the run takes from it. The estimate is for this 2-core machine with
warm caches, cluster creation not included; a run's progress.txt says how it
compares.

--timeout-minutes prints only the timeout in whole minutes (for go test
-timeout). Exit status: 0, or 2 for settings or a label filter that cannot be
read.`

func runPlan(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "plan", "[flags]", planDescription)
	filter := fs.String("label-filter", "", "a Ginkgo label filter selecting cells, as make e2e-smoke's \"smoke\"")
	timeoutOnly := fs.Bool("timeout-minutes", false, "print only the run's timeout in minutes")
	if err := fs.Parse(args); err != nil {
		return exitBroken
	}
	if fs.NArg() > 0 {
		return badInput(c, "plan", "unexpected argument %q", fs.Arg(0))
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		return badInput(c, "plan", "%v", err)
	}
	settings, err := suites.SettingsFromEnv(os.Getenv, repo)
	if err != nil {
		return badInput(c, "plan", "%v", err)
	}
	plan, err := suites.PlanFor(settings, *filter)
	if err != nil {
		return badInput(c, "plan", "%v", err)
	}
	if *timeoutOnly {
		fmt.Fprintln(c.stdout, int(suites.Timeout(plan.Estimate()).Minutes()+0.5))
		return exitOK
	}
	if err := plan.Write(c.stdout); err != nil {
		fmt.Fprintf(c.stderr, "zerodrop plan: %v\n", err)
		return exitBroken
	}
	return exitOK
}
