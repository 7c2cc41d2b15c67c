package sched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// realtimePriority is the SCHED_RR priority Raise asks for: the
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

func realTime(policy uint32) bool { return policy == unix.SCHED_FIFO || policy == unix.SCHED_RR }

// threadIDs lists this process's threads (/proc/self/task).
func threadIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list this process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// Current is the scheduling of the calling thread (the zero
// Priority when the kernel will not say). Raise gives every thread
// of the process the same, so any thread speaks for all.
func Current() Priority {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return Priority{}
	}
	p := Priority{Policy: policyName(a.Policy), Nice: int(a.Nice)}
	if realTime(a.Policy) {
		p.RealTime = int(a.Priority)
	}
	return p
}

// Raise puts every thread of this process in SCHED_RR at the lowest
// real-time priority. Threads the Go runtime starts later inherit it (a
// new thread takes its creator's policy, sched(7)), and so do child
// processes, unless started under Normal.
// The process keeps what it had when the kernel refuses (the error wraps
// ErrRefused); the returned Priority is what it runs with either
// way.
func Raise() (Priority, error) {
	attr := unix.SchedAttr{Policy: unix.SCHED_RR, Priority: realtimePriority}
	was, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return Priority{}, fmt.Errorf("read this thread's scheduling: %w", err)
	}
	done := map[int]bool{}
	// A failure half-way puts every thread back, those cloned from a raised
	// one meanwhile too: the process runs as before or entirely raised.
	undo := func(cause error) error {
		tids, err := threadIDs()
		if err != nil {
			return errors.Join(cause, fmt.Errorf("put the threads back: %w", err))
		}
		errs := []error{cause}
		for _, tid := range tids {
			if err := unix.SchedSetAttr(tid, was, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("put thread %d back: %w", tid, err))
			}
		}
		return errors.Join(errs...)
	}
	// A thread the runtime starts while the list is read may be cloned
	// from one not yet raised: read again until a pass finds no new one.
	for pass := 0; pass < 10; pass++ {
		tids, err := threadIDs()
		if err != nil {
			return Current(), undo(err)
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread ended meanwhile
				}
				if len(done) == 0 && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL)) {
					return Current(), undo(fmt.Errorf("%w (sched_setattr SCHED_RR %d: %v; run as root, or raise RLIMIT_RTPRIO)", ErrRefused, realtimePriority, err))
				}
				return Current(), undo(fmt.Errorf("sched_setattr SCHED_RR %d on thread %d: %w", realtimePriority, tid, err))
			}
			done[tid] = true
		}
		if fresh == 0 {
			return Current(), nil
		}
	}
	return Current(), undo(fmt.Errorf("new threads kept appearing through 10 passes over /proc/self/task: not every thread may be raised"))
}

// Normal runs f on a thread of the default class (SCHED_OTHER, nice 0)
// when the calling thread has a real-time one: a command f starts (the
// docker CLI, kind's node commands, a build) then runs in the default
// class as well, instead of ahead of the cluster it serves. The thread is
// the goroutine's alone and ends with it, so no thread of the default
// class returns to the Go runtime's pool. Elsewhere f just runs.
func Normal(f func() error) error {
	if a, err := unix.SchedGetAttr(0, 0); err != nil || !realTime(a.Policy) {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		// Not unlocked: the Go runtime ends a thread whose goroutine
		// exits locked to it (runtime.LockOSThread).
		runtime.LockOSThread()
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0); err != nil {
			done <- fmt.Errorf("leave the real-time class for a command: %w", err)
			return
		}
		done <- f()
	}()
	return <-done
}
