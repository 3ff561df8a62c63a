package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// The worker: this test binary run again as a separate OS process, with
// its own SDK client and Guard, against the parent's server. Its
// environment says what to do; it talks on stdin and stdout.
const (
	envWorker   = "IDEMKIT_TEST_WORKER" // "crash" or "storm"
	envEndpoint = "IDEMKIT_TEST_WORKER_ENDPOINT"
	envTable    = "IDEMKIT_TEST_WORKER_TABLE"
	envEffects  = "IDEMKIT_TEST_WORKER_EFFECTS"
	envKey      = "IDEMKIT_TEST_WORKER_KEY"
	envN        = "IDEMKIT_TEST_WORKER_N"
	envLease    = "IDEMKIT_TEST_WORKER_LEASE"
)

// TestWorkerProcess is the worker's entry point; run directly it skips.
//
//	crash: claims the key, prints "CLAIMED <pid>" once the handler runs,
//	       and blocks there until it is killed.
//	storm: waits for a line on stdin, sends N concurrent requests for the
//	       key, prints "ANSWER <status> <problem> <replayed> <sha256 of body>"
//	       per request, then "RUNS <n>", the handler's executions here.
func TestWorkerProcess(t *testing.T) {
	mode := os.Getenv(envWorker)
	if mode == "" {
		t.Skip("the worker of the subprocess tests")
	}
	ctx := context.Background()
	client := newSDKClient(t, os.Getenv(envEndpoint), nil)
	store, err := dynamo.New(client, os.Getenv(envTable), dynamo.Options{CallTimeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	lease, _ := time.ParseDuration(os.Getenv(envLease))
	g := testguard.New(t, idemkit.Config{Store: store, Policy: idemkit.Policy{Lease: lease}})
	b := newBusiness(&effects{client: client, table: os.Getenv(envEffects)})
	b.worker = strconv.Itoa(os.Getpid())
	key := os.Getenv(envKey)
	ev := event("acme", "/payments", key, `{"amount":1999}`)
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	switch mode {
	case "crash":
		b.block = func(context.Context, idemkit.Scope) {
			say("CLAIMED %d", os.Getpid())
			select {} // until SIGKILL
		}
		call(ctx, wrap(g, b, "POST /payments"), ev)
		t.Fatal("the crash worker's handler returned")
	case "storm":
		n, _ := strconv.Atoi(os.Getenv(envN))
		h := wrap(g, b, "POST /payments")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				a := call(ctx, h, ev)
				sum := sha256.Sum256([]byte(a.Body))
				p := a.Problem
				if p == "" {
					p = "-"
				}
				say("ANSWER %d %s %v %s", a.Status, p, a.Replay, hex.EncodeToString(sum[:]))
			})
		}
		wg.Wait()
		say("RUNS %d", b.runs.Load())
	}
}

// worker is a running worker process.
type worker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// startWorker starts this test binary as a worker process in mode.
func startWorker(t *testing.T, mode string, env map[string]string) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envWorker+"="+mode)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, stdin: stdin, lines: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return w
}

// expect returns the next line starting with prefix, skipping others,
// failing t if the worker ends or ctx is done first.
func (w *worker) expect(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("worker %d ended before printing %q", w.cmd.Process.Pid, prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-ctx.Done():
			t.Fatalf("worker %d: no %q line: %v", w.cmd.Process.Pid, prefix, ctx.Err())
		}
	}
}
