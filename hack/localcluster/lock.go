package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// errAlreadyRunning means another localcluster owns the output directory.
var errAlreadyRunning = errors.New("a local cluster is already running")

// acquireLock writes this process's pid to path, failing with
// errAlreadyRunning while the pid already recorded there is alive. A lock
// left behind by a process that died is taken over.
func acquireLock(path string) error {
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_, werr := fmt.Fprintf(f, "%d\n", os.Getpid())
			cerr := f.Close()
			return errors.Join(werr, cerr)
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating lock %s: %w", path, err)
		}
		if pid, alive := lockOwner(path); alive {
			return fmt.Errorf("%w (pid %d, lock %s)", errAlreadyRunning, pid, path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing stale lock %s: %w", path, err)
		}
	}
	return fmt.Errorf("could not take lock %s", path)
}

// lockOwner reads the pid in a lock file and reports whether it is running.
func lockOwner(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}

// releaseLock removes the lock if this process still owns it.
func releaseLock(path string) {
	if pid, _ := lockOwner(path); pid == os.Getpid() {
		_ = os.Remove(path)
	}
}
