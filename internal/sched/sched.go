// Package sched owns the CPU scheduling class of the zerodrop process: the
// load generator's real-time class (Raise), what a thread runs with
// (Current), and the default class for the commands it starts (Normal).
package sched

import (
	"errors"
	"fmt"
)

// Why a real-time class. The load generator shares the machine with the cluster it measures (on
// kind, every node is a container on the same CPUs). Under the default
// scheduler (CFS) a process of any nice value still waits behind the
// other runnable tasks' fair share: measured here, the test process
// waited 167 ms for a CPU while node containers were torn down, past its
// send-lag bound, and the span went unmeasured. A task of a real-time
// class runs as soon as it is runnable, ahead of every CFS task
// (sched(7), "SCHED_FIFO" and "SCHED_RR"; on a kernel without full
// preemption, once the task it displaces leaves kernel code or yields
// there), within the kernel's real-time
// throttling (sched_rt_runtime_us, 95% of each CPU by default), which
// keeps a runaway from freezing the machine. Round-robin at the lowest
// real-time priority: the process's threads share their time slices among
// themselves and stay below any real-time work the machine already has.

// Priority is how the kernel schedules a thread: its policy and, for the
// real-time policies, its priority; for the others, its nice value.
type Priority struct {
	Policy   string // "SCHED_OTHER", "SCHED_RR", ...
	RealTime int    // 1-99 for SCHED_FIFO and SCHED_RR, else 0
	Nice     int
}

func (p Priority) String() string {
	if p.Policy == "" {
		return "unknown"
	}
	if p.RealTime > 0 {
		return fmt.Sprintf("%s %d", p.Policy, p.RealTime)
	}
	return fmt.Sprintf("%s nice %d", p.Policy, p.Nice)
}

// ErrRefused is returned by Raise when the kernel will
// not give the process a real-time class (it needs CAP_SYS_NICE or an
// RLIMIT_RTPRIO of at least 1, sched(7); and, with real-time group
// scheduling, a cpu cgroup with real-time runtime).
var ErrRefused = errors.New("the kernel refused a real-time class")
