//go:build !linux

package sched

import "fmt"

// Current is unknown (the zero Priority) off Linux.
func Current() Priority { return Priority{} }

// Raise is implemented for Linux only.
func Raise() (Priority, error) {
	return Priority{}, fmt.Errorf("%w: zerodrop raises the load's priority on Linux only", ErrRefused)
}

// Normal runs f: off Linux nothing was raised.
func Normal(f func() error) error { return f() }
