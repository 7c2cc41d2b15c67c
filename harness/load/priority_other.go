//go:build !linux

package load

import "fmt"

// CurrentPriority is unknown (the zero Priority) off Linux.
func CurrentPriority() Priority { return Priority{} }

// RaisePriority is implemented for Linux only.
func RaisePriority() (Priority, error) {
	return Priority{}, fmt.Errorf("%w: zerodrop raises the load's priority on Linux only", ErrPriorityRefused)
}
