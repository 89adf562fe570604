//go:build unix

package plugins

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the plugin in a process group of its own, so the
// signals a terminal sends to the node's group (Ctrl-C, Ctrl-\, hangup)
// reach the node only, which then stops its plugins in order. Canceling
// the command kills the whole group, the plugin and anything it started.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
}

// killGroup kills what is left of the process group led by pid; a group
// that is already gone is not an error.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
