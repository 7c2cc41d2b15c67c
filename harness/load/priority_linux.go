package load

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// realtimePriority is the SCHED_RR priority RaisePriority asks for: the
// lowest (sched_get_priority_min(SCHED_RR) is 1 on Linux).
const realtimePriority = 1

func policyName(p uint32) string {
	switch p {
	case unix.SCHED_NORMAL:
		return "SCHED_OTHER"
	case unix.SCHED_FIFO:
		return "SCHED_FIFO"
	case unix.SCHED_RR:
		return "SCHED_RR"
	case unix.SCHED_BATCH:
		return "SCHED_BATCH"
	case unix.SCHED_IDLE:
		return "SCHED_IDLE"
	case unix.SCHED_DEADLINE:
		return "SCHED_DEADLINE"
	}
	return fmt.Sprintf("policy %d", p)
}

// CurrentPriority is the scheduling of the calling thread (the zero
// Priority when the kernel will not say). RaisePriority gives every thread
// of the process the same, so any thread speaks for all.
func CurrentPriority() Priority {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return Priority{}
	}
	p := Priority{Policy: policyName(a.Policy), Nice: int(a.Nice)}
	if a.Policy == unix.SCHED_FIFO || a.Policy == unix.SCHED_RR {
		p.RealTime = int(a.Priority)
	}
	return p
}

// RaisePriority puts every thread of this process in SCHED_RR at the lowest
// real-time priority. Threads the Go runtime starts later inherit it (a
// new thread takes its creator's policy, sched(7)), and so do child
// processes: the process should start none that compute for long.
// The process keeps what it had when the kernel refuses (the error wraps
// ErrPriorityRefused); the returned Priority is what it runs with either
// way.
func RaisePriority() (Priority, error) {
	attr := unix.SchedAttr{Policy: unix.SCHED_RR, Priority: realtimePriority}
	was, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return Priority{}, fmt.Errorf("read this thread's scheduling: %w", err)
	}
	done := map[int]bool{}
	// A failure half-way puts the raised threads back: the process runs
	// as before or entirely raised, never split.
	undo := func() {
		for tid := range done {
			_ = unix.SchedSetAttr(tid, was, 0)
		}
	}
	// A thread the runtime starts while the list is read may be cloned
	// from one not yet raised: read again until a pass finds no new one.
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			undo()
			return CurrentPriority(), fmt.Errorf("list this process's threads: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread ended meanwhile
				}
				undo()
				if len(done) == 0 && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL)) {
					return CurrentPriority(), fmt.Errorf("%w (sched_setattr SCHED_RR %d: %v; run as root, or raise RLIMIT_RTPRIO)", ErrPriorityRefused, realtimePriority, err)
				}
				return CurrentPriority(), fmt.Errorf("sched_setattr SCHED_RR %d on thread %d: %w", realtimePriority, tid, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return CurrentPriority(), nil
		}
	}
	return CurrentPriority(), nil
}
