package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// stopGrace is how long a process gets to exit after SIGTERM before the
// whole process group is killed.
const stopGrace = 10 * time.Second

// process is one binary the harness started, in a process group of its own
// so that stopping it also stops anything it spawned.
type process struct {
	name    string
	logPath string
	// logStart is the size of the log before this run appended to it.
	logStart int64
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
}

// startProcess runs binary with args, appending its output to
// <logDir>/<name>.log.
func startProcess(name, binary string, args []string, logDir string) (*process, error) {
	return startProcessEnv(name, binary, args, nil, logDir)
}

// startProcessEnv is startProcess with env (KEY=value) added to the
// harness's own environment, for a binary that reads settings only from
// its environment.
func startProcessEnv(name, binary string, args, env []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log for %s: %w", name, err)
	}
	var logStart int64
	if info, err := logFile.Stat(); err == nil {
		logStart = info.Size()
	}
	var envPrefix strings.Builder
	for _, kv := range env {
		envPrefix.WriteString(kv + " ")
	}
	fmt.Fprintf(logFile, "=== %s%s %s\n", envPrefix.String(), binary, strings.Join(args, " "))

	cmd := exec.Command(binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &process{name: name, logPath: logPath, logStart: logStart, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	klog.V(1).InfoS("Started process", "name", name, "pid", cmd.Process.Pid, "log", logPath)
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to stopGrace, then
// kills the group. It is safe to call more than once.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			klog.InfoS("Process ignored SIGTERM, killing it", "name", p.name, "pid", pgid)
		}
	}
	// Also reaps children left behind when the leader already exited.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// tail returns the last n lines of the process log, for error messages.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// log returns what this run of the process has logged so far.
func (p *process) log() ([]byte, error) {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) < p.logStart {
		return nil, nil
	}
	return data[p.logStart:], nil
}

// portClash reports whether the process died because a port it was given
// was taken by someone else after freePorts picked it.
func (p *process) portClash() bool {
	if !p.exited() {
		return false
	}
	data, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(data, []byte("address already in use"))
}

// waitReady polls check until it succeeds, failing early when the process
// exits. The error carries the last log lines and the last check error.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited (%v); last log lines:\n%s", p.name, p.exitErr, p.tail(30))
		}
		lastErr = check(ctx)
		return lastErr == nil, nil
	})
	if err == nil {
		return nil
	}
	if lastErr != nil && !p.exited() {
		return fmt.Errorf("waiting for %s to be ready (log %s): %w (last check: %v)", p.name, p.logPath, err, lastErr)
	}
	return fmt.Errorf("waiting for %s to be ready: %w", p.name, err)
}

// launch starts a process with freshly picked ports and waits until it is
// ready, retrying a few times when a port was stolen in between. start gets
// the ports; ready checks them.
func launch(ctx context.Context, portCount int, start func(ports []int) (*process, error), ready func(ctx context.Context, p *process, ports []int) error) (*process, []int, error) {
	const attempts = 3
	for i := 1; ; i++ {
		ports, err := freePorts(portCount)
		if err != nil {
			return nil, nil, err
		}
		p, err := start(ports)
		if err != nil {
			return nil, nil, err
		}
		err = ready(ctx, p, ports)
		if err == nil {
			return p, ports, nil
		}
		p.stop()
		if i == attempts || !p.portClash() {
			return nil, nil, err
		}
		klog.InfoS("Port was taken, retrying with new ports", "name", p.name, "attempt", i)
	}
}
