package load

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

	"golang.org/x/sys/unix"
)

// priorityChildEnv runs TestPriorityChild's body in a child process: a
// real-time class would otherwise stay with the test binary.
const priorityChildEnv = "ZERODROP_TEST_PRIORITY_CHILD"

type priorityOutcome struct {
	Err      string
	Refused  bool
	Priority Priority
	// Threads is the policy of every thread after RaisePriority and after
	// the runtime started more threads; Policies of threads the kernel
	// would not say are left out.
	Threads []string
}

// TestPriorityChild is the child's side of TestRaisePriority.
func TestPriorityChild(t *testing.T) {
	if os.Getenv(priorityChildEnv) == "" {
		t.Skip("runs as TestRaisePriority's child process")
	}
	var out priorityOutcome
	p, err := RaisePriority()
	out.Priority = p
	if err != nil {
		out.Err = err.Error()
		out.Refused = errors.Is(err, ErrPriorityRefused)
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
	ents, rerr := os.ReadDir("/proc/self/task")
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		a, aerr := unix.SchedGetAttr(tid, 0)
		if aerr != nil {
			continue
		}
		out.Threads = append(out.Threads, policyName(a.Policy))
	}
	close(release)
	b, _ := json.Marshal(out)
	// The parent reads the last line that starts so.
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
	allowed := func() bool {
		if os.Geteuid() == 0 {
			return true
		}
		var rl unix.Rlimit
		return unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl) == nil && rl.Cur >= 1
	}()
	got, err := runPriorityChild(t, os.Args[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if !allowed {
		if !got.Refused || got.Priority.RealTime != 0 {
			t.Fatalf("without the right to a real-time class: got %+v, want ErrPriorityRefused and the process as it was", got)
		}
		t.Skip("not allowed a real-time class here: only the refusal was checked")
	}
	if got.Err != "" {
		t.Fatalf("RaisePriority as root: %s", got.Err)
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
	if err != nil {
		t.Fatal(err)
	}
	if !nobody.Refused || nobody.Priority.Policy != "SCHED_OTHER" {
		t.Errorf("as uid 65534: got %+v, want ErrPriorityRefused and SCHED_OTHER", nobody)
	}
	for _, p := range nobody.Threads {
		if p != "SCHED_OTHER" {
			t.Errorf("as uid 65534 a thread runs %s after the refusal: %v", p, nobody.Threads)
		}
	}
}
