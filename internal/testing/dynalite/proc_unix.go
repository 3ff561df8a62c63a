//go:build unix

package dynalite

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in its own process group so that a
// terminal's Ctrl-C reaches the test binary only (the server follows via
// its stdin) and so that killProcessGroup reaches anything it spawned.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
