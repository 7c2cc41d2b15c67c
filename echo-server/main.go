// Command echo-server is zerodrop's in-cluster echo server: every answer
// says which pod and node served it, what client address it saw, whether it
// was ready and whether the connection was reused. See package
// zerodrop.dev/zerodrop/echo-server/echo for the contract.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"zerodrop.dev/zerodrop/echo-server/echo"
)

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == "sleep" {
		return sleep(os.Args[2:])
	}
	cfg, err := echo.ParseConfig(os.Args[1:], echo.OSEnv, os.Hostname, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-server: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	// Buffered so a second signal is never lost while the first is being
	// handled: the second one is what makes the server exit at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	if err := echo.Run(context.Background(), cfg, sigs, echo.WithLogger(log)); err != nil {
		log.Error("echo-server exiting with an error", "err", err.Error())
		return 1
	}
	return 0
}

// sleep is `echo-server sleep SECONDS`: a preStop exec hook for Kubernetes
// releases without the kubelet's own sleep action (PodLifecycleSleepAction,
// on by default from 1.30: k8s.io/kubernetes pkg/features/kube_features.go).
// The image is the binary alone (no shell, no sleep(1)), so the hook runs
// the binary itself.
func sleep(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "echo-server sleep: want one argument, whole seconds (e.g. echo-server sleep 25)")
		return 2
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "echo-server sleep %q: want whole non-negative seconds\n", args[0])
		return 2
	}
	time.Sleep(time.Duration(n) * time.Second)
	return 0
}
