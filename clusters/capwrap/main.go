// Command capwrap is an OCI runtime wrapper for hosts whose capability
// bounding set lacks capabilities that Docker grants to --privileged
// containers (seen: CAP_SYS_RESOURCE missing for every process, host root
// included). runc refuses to apply a capability it does not hold ("unable to
// apply caps: operation not permitted"), so a privileged container cannot
// start at all. capwrap removes every capability that is not in its own
// bounding set from the runtime spec, then execs the real runc with the same
// arguments.
//
// Two paths carry capabilities: create/run read BUNDLE/config.json, and exec
// (docker exec, and kind's docker exec --privileged) reads --process FILE.
// Both are edited in place.
//
// It is registered as Docker's default runtime only on hosts where a plain
// privileged run fails (clusters/host-setup.sh decides); elsewhere it is not
// installed. Extra modes, used by the host set-up script:
//
//	capwrap probe                    print "capwrap-probe ok" (the probe image's entrypoint)
//	capwrap daemon-json FILE NAME PATH   register PATH as runtime NAME and make it the default
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// realRuntime is the runc binary to exec; set at build time with
// -ldflags "-X main.realRuntime=/usr/sbin/runc". Empty means look it up.
var realRuntime = ""

func main() {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case "probe":
			fmt.Println("capwrap-probe ok")
			return
		case "daemon-json":
			if len(os.Args) != 5 {
				fmt.Fprintln(os.Stderr, "usage: capwrap daemon-json FILE RUNTIME-NAME RUNTIME-PATH")
				os.Exit(2)
			}
			changed, err := registerRuntime(os.Args[2], os.Args[3], os.Args[4])
			if err != nil {
				fmt.Fprintf(os.Stderr, "capwrap: %v\n", err)
				os.Exit(1)
			}
			if changed {
				fmt.Println("changed")
			} else {
				fmt.Println("unchanged")
			}
			return
		}
	}
	if err := run(os.Args[1:]); err != nil {
		// runc's callers (containerd-shim) show stderr to the user.
		fmt.Fprintf(os.Stderr, "capwrap: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	runc, err := findRuntime()
	if err != nil {
		return err
	}
	inv := parseArgs(args)
	if file := inv.specFile(); file != "" {
		bound, err := ownBoundingSet()
		if err != nil {
			return fmt.Errorf("read own capability bounding set: %w", err)
		}
		if err := filterFile(file, inv.Command == "exec", bound); err != nil {
			return fmt.Errorf("filter capabilities in %s: %w", file, err)
		}
	}
	argv := append([]string{runc}, args...)
	// Exec, not fork: runc's pid, stdio and exit status must be the caller's.
	return syscall.Exec(runc, argv, os.Environ())
}

func findRuntime() (string, error) {
	if realRuntime != "" {
		return realRuntime, nil
	}
	self, _ := os.Executable()
	for _, c := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"} {
		if st, err := os.Stat(c); err == nil && !st.IsDir() && !sameFile(c, self) {
			return c, nil
		}
	}
	if p, err := exec.LookPath("runc"); err == nil && !sameFile(p, self) {
		return p, nil
	}
	return "", errors.New("real runc not found (looked in /usr/sbin, /usr/bin, /usr/local/{sbin,bin} and PATH); install the runc package or rebuild capwrap with -X main.realRuntime=PATH")
}

func sameFile(a, b string) bool {
	if b == "" {
		return false
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
