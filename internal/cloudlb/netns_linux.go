package cloudlb

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs f on an OS thread switched into the named network namespace
// (/run/netns/<name>, as `ip netns add` makes it). Sockets f creates stay in
// that namespace after f returns, so a listener or a connection can be opened
// there and used from any goroutine. The empty name runs f as is.
func InNetns(name string, f func() error) error {
	if name == "" {
		return f()
	}
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own network namespace: %w", err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open network namespace %q: %w", name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %q: %w", name, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: Go discards it when the goroutine ends
		// rather than reuse a thread in the wrong namespace.
		return fmt.Errorf("return from network namespace %q: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// NetnsDialer dials from the named network namespace (the empty name: from here).
func NetnsDialer(name string, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := InNetns(name, func() error {
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}
