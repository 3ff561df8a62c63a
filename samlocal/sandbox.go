package samlocal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Sandbox is one Lambda execution environment: an aws-lambda-rie process
// running the bootstrap, which serves one invocation at a time.
type Sandbox struct {
	// Invoke is the emulator's invocation URL.
	Invoke string

	cmd    *exec.Cmd
	output *lockedBuffer
	exited chan struct{}

	stopOnce sync.Once
}

// SandboxConfig says how to start a sandbox.
type SandboxConfig struct {
	// RIE is the aws-lambda-rie binary.
	RIE string
	// Bootstrap is the function's bootstrap binary (make build's, for the
	// host's architecture).
	Bootstrap string
	// Env is the whole environment of the function (the emulator passes
	// its own environment on): the template's variables, the AWS
	// configuration, AWS_LAMBDA_FUNCTION_TIMEOUT.
	Env []string
	// Output receives the emulator's and the function's output. Nil: kept
	// for errors only.
	Output io.Writer
}

// StartSandbox starts an emulator on free 127.0.0.1 ports and returns once
// it accepts invocations. The function initialises on the first
// invocation, as Lambda's cold start does.
func StartSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	api, err := freePort()
	if err != nil {
		return nil, err
	}
	rie, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(rie)
	cmd := exec.Command(cfg.RIE,
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(api),
		"--log-level", "error",
		cfg.Bootstrap)
	cmd.Env = cfg.Env
	s := &Sandbox{Invoke: "http://" + addr + "/2015-03-31/functions/function/invocations",
		cmd: cmd, output: &lockedBuffer{}, exited: make(chan struct{})}
	var out io.Writer = s.output
	if cfg.Output != nil {
		out = io.MultiWriter(s.output, cfg.Output)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("samlocal: start %s: %w", cfg.RIE, err)
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("samlocal: emulator exited before listening: %s", s.output.String())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("samlocal: emulator not listening on %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Call invokes the function with event and returns the emulator's answer:
// its HTTP status and body.
func (s *Sandbox) Call(ctx context.Context, event []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Invoke, bytes.NewReader(event))
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("samlocal: invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Output returns what the emulator and the function printed.
func (s *Sandbox) Output() string { return s.output.String() }

// Stop kills the emulator and the function, and waits for them.
func (s *Sandbox) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-s.exited
	})
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
