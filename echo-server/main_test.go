package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests build the real binary and drive it with real signals.

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "echo-server-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "temp dir for the echo-server binary: %v\n", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		binPath = filepath.Join(dir, "echo-server")
		args := []string{"build", "-o", binPath}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building echo-server for the binary tests: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// binPath is set once by TestMain before any test runs.
var binPath string

// proc is one echo-server process with its JSON log lines.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	exit  chan error
}

func startBinary(t *testing.T, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath)
	cmd.Env = append([]string{"ECHO_LISTEN=127.0.0.1:0", "ECHO_ADMIN_LISTEN=127.0.0.1:0"}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binPath, err)
	}
	p := &proc{t: t, cmd: cmd, exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			_ = json.Unmarshal(sc.Bytes(), &m) // non-JSON lines stay in raw only
			p.mu.Lock()
			p.raw = append(p.raw, sc.Text())
			if m != nil {
				p.lines = append(p.lines, m)
			}
			p.mu.Unlock()
		}
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.exit:
		case <-time.After(5 * time.Second):
		}
		if t.Failed() {
			t.Logf("echo-server output:\n%s", strings.Join(p.output(), "\n"))
		}
	})
	return p
}

func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.raw)
}

// waitLog waits for a log line with this message and returns it.
func (p *proc) waitLog(msg string, timeout time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, l := range p.lines {
			if l["msg"] == msg {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("echo-server did not log %q within %s", msg, timeout)
	return nil
}

func (p *proc) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.lines {
		out = append(out, fmt.Sprint(l["msg"]))
	}
	return out
}

// waitExit returns the exit code, failing after timeout.
func (p *proc) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case err := <-p.exit:
		p.exit <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			p.t.Fatalf("waiting for echo-server: %v", err)
		}
		return 0
	case <-time.After(timeout):
		p.t.Fatalf("echo-server did not exit within %s", timeout)
		return -1
	}
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestBinarySIGTERM(t *testing.T) {
	const delay = 700 * time.Millisecond
	p := startBinary(t, "ECHO_SHUTDOWN_DELAY="+delay.String(), "ECHO_UNREADY_ON_TERM=true", "ECHO_DRAIN_TIMEOUT=3s",
		"POD_NAME=bin-pod", "NODE_NAME=bin-node", "POD_NAMESPACE=zd", "POD_IP=10.9.8.7")
	serving := p.waitLog("serving", 30*time.Second)
	traffic, admin := serving["traffic_addr"].(string), serving["admin_addr"].(string)

	code, body := httpGet(t, "http://"+traffic+"/")
	var r struct {
		Pod, Node, Namespace string
		PodIP                string `json:"pod_ip"`
		Ready, Terminating   bool
	}
	if err := json.Unmarshal(body, &r); err != nil || code != 200 || r.Pod != "bin-pod" || r.Node != "bin-node" || r.Namespace != "zd" || r.PodIP != "10.9.8.7" || !r.Ready {
		t.Fatalf("GET /: %d %s (%v)", code, body, err)
	}
	if code, _ := httpGet(t, "http://"+admin+"/admin/stats"); code != 200 {
		t.Fatalf("admin stats: %d", code)
	}
	// An idle keep-alive connection (one request served) must not hold
	// the drain.
	idle, err := net.Dial("tcp", traffic)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET / HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	idleBR := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(idleBR, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("request on the keep-alive connection: %v", err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	t0 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog("termination signal received", 5*time.Second)
	if code, _ := httpGet(t, "http://"+traffic+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after SIGTERM with ECHO_UNREADY_ON_TERM: %d, want 503", code)
	}
	code, body = httpGet(t, "http://"+traffic+"/")
	if err := json.Unmarshal(body, &r); err != nil || code != 200 || r.Ready || !r.Terminating {
		t.Errorf("GET / during the delay: %d %s", code, body)
	}
	if since := time.Since(t0); since >= delay {
		t.Fatalf("delay checks took %s, past the %s delay: machine too loaded to judge", since, delay)
	}

	if code := p.waitExit(10 * time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took := time.Since(t0); took < delay {
		t.Errorf("exited %s after SIGTERM, before the %s shutdown delay", took, delay)
	}
	_ = idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idleBR.Read(make([]byte, 1)); err == nil {
		t.Error("idle connection still readable after exit")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("idle connection left open after the process exited")
	}
	want := []string{"serving", "termination signal received", "readiness switched",
		"draining: asking keep-alive clients to close", "draining: stopped accepting, closing idle connections", "drained: every traffic connection closed", "stopped"}
	if got := p.messages(); !slices.Equal(got, want) {
		t.Errorf("log lines\n got %q\nwant %q", got, want)
	}
}

func TestBinarySecondSignal(t *testing.T) {
	p := startBinary(t, "ECHO_SHUTDOWN_DELAY=60s", "POD_NAME=bin-pod", "NODE_NAME=n")
	p.waitLog("serving", 30*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog("termination signal received", 5*time.Second)
	t0 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.waitExit(5 * time.Second); code != 1 {
		t.Errorf("exit code %d after a second signal, want 1", code)
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("exited %s after the second signal, want at once", took)
	}
	p.waitLog("stopped at once", time.Second)
	if l := p.waitLog("echo-server exiting with an error", time.Second); !strings.Contains(fmt.Sprint(l["err"]), "SIGINT") {
		t.Errorf("exit log does not name the signal: %v", l)
	}
}

func TestBinaryUsageErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct {
		name     string
		args     []string
		env      []string
		wantCode int
		wantOut  string
	}{
		{"help", []string{"-h"}, nil, 0, "ECHO_SHUTDOWN_DELAY"},
		{"unknown flag", []string{"--bogus"}, nil, 2, "bogus"},
		{"bad env", nil, []string{"ECHO_READY=maybe"}, 2, "ECHO_READY"},
		{"port in use", []string{"--listen", taken.Addr().String()}, nil, 1, "--listen"},
		{"sleep without seconds", []string{"sleep"}, nil, 2, "whole seconds"},
		{"sleep in minutes", []string{"sleep", "1m"}, nil, 2, "whole non-negative seconds"},
		{"sleep", []string{"sleep", "0"}, nil, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, tt.args...)
			cmd.Env = append([]string{"POD_NAME=p", "NODE_NAME=n", "ECHO_ADMIN_LISTEN=127.0.0.1:0"}, tt.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || !strings.Contains(string(out), tt.wantOut) {
				t.Errorf("exit %d, output %q; want exit %d mentioning %q", code, out, tt.wantCode, tt.wantOut)
			}
		})
	}
}

// TestBinarySleep: the preStop hook of releases before the kubelet's sleep
// action takes as long as it says.
func TestBinarySleep(t *testing.T) {
	start := time.Now()
	out, err := exec.Command(binPath, "sleep", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("echo-server sleep 1: %v\n%s", err, out)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("echo-server sleep 1 returned after %v", d)
	}
}
