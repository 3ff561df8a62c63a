package dynalite

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ModulePath is the module whose root holds package.json and node_modules.
const ModulePath = "github.com/idemkit/idemkit"

// Environment variables read by this package.
const (
	// EnvDir names the directory holding node_modules/dynalite, overriding
	// the search for the module root.
	EnvDir = "IDEMKIT_DYNALITE_DIR"
	// EnvEndpoint, when set, is used by Endpoint and Client instead of
	// starting a server: any running DynamoDB-compatible server will do.
	EnvEndpoint = "IDEMKIT_DYNAMODB_ENDPOINT"
	// EnvSkip, when "1", makes tests skip instead of fail when no server
	// can be had (node, node_modules/dynalite or Docker missing).
	EnvSkip = "IDEMKIT_SKIP_DYNAMODB"
)

// StartupTimeout bounds how long Start waits for the server to report its
// port when the context has no earlier deadline.
const StartupTimeout = 20 * time.Second

// stopTimeout bounds how long Stop waits for the server to exit after its
// stdin is closed before it is killed.
const stopTimeout = 5 * time.Second

// ErrUnavailable is wrapped by errors saying that a prerequisite of the
// server (node, node_modules/dynalite, a Docker engine) is missing, as
// opposed to a server that was found but failed.
var ErrUnavailable = errors.New("DynamoDB test server unavailable")

// unavailable is an error whose message is one line and that matches
// ErrUnavailable.
type unavailable struct{ msg string }

func (e *unavailable) Error() string        { return e.msg }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

func unavailablef(format string, args ...any) error {
	return &unavailable{msg: oneLine(fmt.Sprintf(format, args...))}
}

//go:embed server.js
var serverJS string

// Server is a running dynalite process holding its tables in memory.
type Server struct {
	endpoint string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *syncBuffer
	exited   chan struct{} // closed once the process has been waited for
	waitErr  error         // valid once exited is closed

	stopOnce sync.Once
	stopErr  error
}

// Start starts a dynalite server from the node_modules found by Dir and
// returns once it accepts connections on 127.0.0.1. The context bounds
// the startup only, never the server's life: the server runs until Stop,
// or until this process exits (the server watches its stdin, a pipe from
// this process, and quits when it closes, so it does not outlive even a
// killed parent).
//
// Errors wrap ErrUnavailable when node or node_modules/dynalite is
// missing; their messages are one line and say what to do.
func Start(ctx context.Context) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dynalite: start: %w", err)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, unavailablef("dynalite: node is not on PATH (install Node.js 20 or later): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "dynalite", "package.json")); err != nil {
		return nil, unavailablef("dynalite: %s is missing: run `make deps` (or `npm ci`) in %s",
			filepath.Join(dir, "node_modules", "dynalite"), dir)
	}

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, StartupTimeout)
		defer cancel()
	}

	// The script is embedded and run with node's --eval so that require()
	// resolves node_modules from the working directory, wherever the test
	// binary runs.
	cmd := exec.Command(node, "--eval", serverJS)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	setProcessGroup(cmd)

	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("dynalite: stdin pipe: %w", err)
	}
	// stdout is a pipe of our own rather than cmd.StdoutPipe, whose read end
	// Wait closes: the port line must be readable even if the process
	// exits right after printing it.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("dynalite: stdout pipe: %w", err)
	}
	cmd.Stdout = stdoutW
	s := &Server{cmd: cmd, stdin: stdin, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	cmd.WaitDelay = stopTimeout

	err = cmd.Start()
	_ = stdoutW.Close()
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("dynalite: start %s: %w", node, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
			// Keep draining so that the server never blocks on a full pipe.
		}
		if first {
			close(lines)
		}
		_ = stdout.Close()
	}()

	select {
	case line, ok := <-lines:
		if !ok {
			<-s.exited
			return nil, s.startError("exited before reporting its port")
		}
		addr, found := strings.CutPrefix(line, "listening ")
		if !found || addr == "" {
			_ = s.Stop()
			return nil, s.startError(fmt.Sprintf("unexpected first line %q", line))
		}
		s.endpoint = "http://" + addr
		return s, nil
	case <-ctx.Done():
		_ = s.Stop()
		return nil, s.startError(fmt.Sprintf("no port reported: %v", ctx.Err()))
	}
}

func (s *Server) startError(what string) error {
	msg := "dynalite: server " + what
	if s.waitErr != nil && isClosed(s.exited) {
		msg += " (" + s.waitErr.Error() + ")"
	}
	if out := strings.TrimSpace(s.stderr.String()); out != "" {
		msg += "; stderr: " + out
	}
	return errors.New(oneLine(msg))
}

// Endpoint returns the server's URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// Stop stops the server and waits for it to exit. It may be called more
// than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// Closing stdin asks the server to exit; a kill of its process
		// group follows if it has not within stopTimeout.
		_ = s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			killProcessGroup(s.cmd)
			<-s.exited
			s.stopErr = fmt.Errorf("dynalite: server did not exit within %v of stdin closing; killed", stopTimeout)
			return
		}
		// Exit code 0 is a clean stop; anything else after startup is worth
		// reporting.
		var ee *exec.ExitError
		if errors.As(s.waitErr, &ee) && s.endpoint != "" {
			s.stopErr = errors.New(oneLine(fmt.Sprintf("dynalite: server exited: %v; stderr: %s", s.waitErr, s.stderr.String())))
		}
	})
	return s.stopErr
}

// Dir returns the directory whose node_modules holds dynalite: the value
// of IDEMKIT_DYNALITE_DIR if set, else the root of module ModulePath found
// by walking up from the working directory.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("dynalite: working directory: %w", err)
	}
	for d := wd; ; {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(data) == ModulePath {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", unavailablef("dynalite: no go.mod of module %s above %s; set %s to the directory holding node_modules/dynalite",
				ModulePath, wd, EnvDir)
		}
		d = parent
	}
}

// modulePath returns the module path declared in a go.mod file's content.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			rest = strings.TrimSpace(rest)
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = strings.TrimSpace(rest[:i])
			}
			return strings.Trim(rest, "\"`")
		}
	}
	return ""
}

// oneLine folds a message onto one line and bounds its length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 2000
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep memory bounded if the server is chatty on stderr for a long run.
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
