// Command zerodrop is the conformance suite's command line: attributed load
// against any URL, analysis of run files into report.json, and (added by
// their owners) the other subcommands.
//
// Each subcommand lives in its own cmd_<name>.go file and is registered by
// one line in commandTable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"zerodrop.dev/zerodrop/harness/evidence"
)

// version is the tool version, set at link time:
// go build -ldflags "-X main.version=v0.1.0".
var version = "dev"

// Exit codes shared by every subcommand.
const (
	exitOK     = 0 // nothing dropped / every criterion held
	exitFailed = 1 // something was dropped / a criterion failed
	exitBroken = 2 // bad input, or the run itself broke
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, cli *cli, args []string) int
}

// commandTable lists the subcommands; add one line per new cmd_<name>.go.
func commandTable() []command {
	return []command{
		loadCommand(),
		analyzeCommand(),
		clusterCommand(),
		doctorCommand(),
		reportCommand(),
		lbCommand(),
		ownCommand(),
		planCommand(),
		keygenCommand(),
	}
}

// cli carries what a command needs from its environment, so tests can run
// commands in-process.
type cli struct {
	stdout  io.Writer
	stderr  io.Writer
	version string
	// interrupts receives every Ctrl-C (and SIGTERM), the first of which
	// also cancels the command's context: a command that waits after the
	// first (load lets its requests in flight finish) gives up at the
	// second. Nil in tests that do not send any.
	interrupts <-chan os.Signal
	// keyDir holds this machine's signing key (evidence.DefaultKeyDir);
	// tests give a directory of their own.
	keyDir string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &cli{stdout: os.Stdout, stderr: os.Stderr, version: version, interrupts: interrupts,
		keyDir: evidence.DefaultKeyDir(os.Getenv)}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, c *cli, args []string) int {
	if len(args) == 0 {
		usage(c.stderr)
		return exitBroken
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			return run(ctx, c, []string{args[1], "--help"})
		}
		usage(c.stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(c.stdout, "zerodrop", c.version)
		return exitOK
	}
	for _, cmd := range commandTable() {
		if cmd.name == name {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(c.stderr, "zerodrop: unknown command %q\n\n", name)
	usage(c.stderr)
	return exitBroken
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "zerodrop proves a Service of type LoadBalancer keeps serving while its cluster is drained, rolled and re-pooled.")
	fmt.Fprintln(w, "\nUsage: zerodrop <command> [flags]\n\nCommands:")
	for _, cmd := range commandTable() {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nRun 'zerodrop <command> --help' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 pass (nothing dropped), 1 fail (something dropped or a criterion failed), 2 bad input or the run broke.")
}

// newFlagSet returns a flag set that reports errors instead of exiting, with
// a usage text of synopsis, description and flags.
func newFlagSet(c *cli, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: zerodrop %s %s\n\n%s\n\nFlags:\n", name, synopsis, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; --help prints usage to stdout and yields exitOK,
// a bad flag prints the error and a pointer to --help to stderr and yields
// exitBroken.
func parseFlags(c *cli, fs *flag.FlagSet, args []string) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(c.stdout)
		fs.Usage()
		return exitOK, false
	case err != nil:
		return badInput(c, fs.Name(), "%v", err), false
	}
	fs.SetOutput(c.stderr)
	return 0, true
}

// badInput reports a usage error and returns exitBroken.
func badInput(c *cli, cmd, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "zerodrop %s: %s\nRun 'zerodrop %s --help' for usage.\n", cmd, fmt.Sprintf(format, a...), cmd)
	return exitBroken
}
