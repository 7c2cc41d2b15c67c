// Command pause is the pod sandbox's placeholder process: it holds the pod's
// namespaces open, reaps zombies (it is PID 1 when the pod shares its PID
// namespace) and exits on SIGINT or SIGTERM. Built static into a FROM scratch
// image tagged registry.k8s.io/pause:3.10 and :3.10.1, so no registry is needed.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
