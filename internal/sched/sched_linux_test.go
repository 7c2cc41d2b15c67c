package sched

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// priorityChildEnv runs TestPriorityChild's body in a child process: a
// real-time class would otherwise stay with the test binary.
const priorityChildEnv = "ZERODROP_TEST_PRIORITY_CHILD"

type priorityOutcome struct {
	Err      string
	Refused  bool
	Priority Priority
	// Threads is the policy of every thread after Raise and after
	// the runtime started more threads; Policies of threads the kernel
	// would not say are left out.
	Threads []string
	// NormalThread and NormalChild are the policies of the thread Normal
	// runs f on and of a process f starts; RawChild of a process started
	// outside Normal; After of every thread once Normal returned.
	NormalThread, NormalChild, RawChild string
	After                               []string
}

// TestPriorityChild is the child's side of TestRaisePriority.
func TestPriorityChild(t *testing.T) {
	if os.Getenv(priorityChildEnv) == "" {
		t.Skip("runs as TestRaisePriority's child process")
	}
	var out priorityOutcome
	p, err := Raise()
	out.Priority = p
	if err != nil {
		out.Err = err.Error()
		out.Refused = errors.Is(err, ErrRefused)
	}
	// Threads started after the raise: each locked goroutine needs a
	// thread of its own, which the runtime clones from a raised one.
	release := make(chan struct{})
	started := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			started <- struct{}{}
			<-release
		}()
	}
	for range 4 {
		<-started
	}
	out.Threads = threadPolicies(t)
	close(release)
	childPolicy := func() string {
		c := exec.Command("sleep", "10")
		if err := c.Start(); err != nil {
			return err.Error()
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
		a, err := unix.SchedGetAttr(c.Process.Pid, 0)
		if err != nil {
			return err.Error()
		}
		return policyName(a.Policy)
	}
	out.RawChild = childPolicy()
	if err := Normal(func() error {
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return err
		}
		out.NormalThread = policyName(a.Policy)
		out.NormalChild = childPolicy()
		return nil
	}); err != nil {
		out.NormalThread = err.Error()
	}
	// The thread Normal used ends with its goroutine; give it a moment.
	time.Sleep(50 * time.Millisecond)
	out.After = threadPolicies(t)
	b, _ := json.Marshal(out)
	// The parent reads the line that starts so.
	os.Stdout.WriteString("\nPRIORITY " + string(b) + "\n")
}

// runPriorityChild runs TestPriorityChild in a child process, as cred's
// user when given; an error says the child did not run to its end.
func runPriorityChild(t *testing.T, bin string, cred *syscall.Credential) (priorityOutcome, error) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^TestPriorityChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), priorityChildEnv+"=1")
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	b, err := cmd.CombinedOutput()
	if err != nil {
		return priorityOutcome{}, fmt.Errorf("child: %w\n%s", err, b)
	}
	var out priorityOutcome
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "PRIORITY "); ok {
			if err := json.Unmarshal([]byte(rest), &out); err != nil {
				t.Fatalf("child said %q: %v", rest, err)
			}
			return out, nil
		}
	}
	t.Fatalf("child said nothing about its priority:\n%s", b)
	return out, nil
}

func TestRaisePriority(t *testing.T) {
	if os.Getenv(priorityChildEnv) != "" {
		t.Skip("in the child")
	}
	// The right to a real-time class: CAP_SYS_NICE (root's, unless a
	// container took it away) or an RLIMIT_RTPRIO of at least 1 (sched(7)).
	allowed := hasCapSysNice(t) || func() bool {
		var rl unix.Rlimit
		return unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl) == nil && rl.Cur >= 1
	}()
	got, err := runPriorityChild(t, os.Args[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if !allowed {
		if !got.Refused || got.Priority.RealTime != 0 {
			t.Fatalf("without the right to a real-time class: got %+v, want ErrRefused and the process as it was", got)
		}
		t.Skip("not allowed a real-time class here: only the refusal was checked")
	}
	if got.Refused {
		// Allowed, and still refused: a cpu cgroup without real-time
		// runtime (real-time group scheduling) says no to everyone.
		t.Skipf("a real-time class is refused here despite the right to it (a cpu cgroup without real-time runtime?): %s", got.Err)
	}
	if got.Err != "" {
		t.Fatalf("Raise with the right to it: %s", got.Err)
	}
	if got.Priority.Policy != "SCHED_RR" || got.Priority.RealTime != 1 || got.Priority.String() != "SCHED_RR 1" {
		t.Errorf("priority %+v (%s), want SCHED_RR 1", got.Priority, got.Priority)
	}
	if len(got.Threads) < 5 {
		t.Fatalf("read %d threads, want the runtime's and 4 started after the raise", len(got.Threads))
	}
	for i, p := range got.Threads {
		if p != "SCHED_RR" {
			t.Errorf("thread %d of %d runs %s after the raise, want SCHED_RR: %v", i, len(got.Threads), p, got.Threads)
		}
	}
	if got.RawChild != "SCHED_RR" {
		t.Errorf("a command started outside Normal runs %s, want SCHED_RR (inherited)", got.RawChild)
	}
	if got.NormalThread != "SCHED_OTHER" || got.NormalChild != "SCHED_OTHER" {
		t.Errorf("under Normal: thread %s, command %s; want SCHED_OTHER for both", got.NormalThread, got.NormalChild)
	}
	for i, p := range got.After {
		if p != "SCHED_RR" {
			t.Errorf("after Normal, thread %d of %d runs %s: its thread went back to the pool: %v", i, len(got.After), p, got.After)
		}
	}

	// The same binary as a user without the right: refused, and the
	// process as it was.
	if os.Geteuid() != 0 {
		return
	}
	// The test binary sits in a directory only root may enter: the child
	// runs a copy another user can reach.
	dir, err := os.MkdirTemp("", "zerodrop-priority-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "load.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody, err := runPriorityChild(t, bin, &syscall.Credential{Uid: 65534, Gid: 65534})
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("refusal not checked: uid 65534 cannot run a copy of the test binary in %s: %v", dir, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !nobody.Refused || nobody.Priority.Policy != "SCHED_OTHER" {
		t.Errorf("as uid 65534: got %+v, want ErrRefused and SCHED_OTHER", nobody)
	}
	for _, p := range nobody.Threads {
		if p != "SCHED_OTHER" {
			t.Errorf("as uid 65534 a thread runs %s after the refusal: %v", p, nobody.Threads)
		}
	}
}

// threadPolicies is the policy of every thread of this process.
func threadPolicies(t *testing.T) []string {
	tids, err := threadIDs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tid := range tids {
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // ended meanwhile
		}
		out = append(out, policyName(a.Policy))
	}
	return out
}

// hasCapSysNice reads CAP_SYS_NICE (capability 23, capabilities(7)) from
// this process's effective set in /proc/self/status.
func hasCapSysNice(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", v, err)
			}
			return caps&(1<<unix.CAP_SYS_NICE) != 0
		}
	}
	t.Fatal("/proc/self/status has no CapEff line")
	return false
}
