package bench

import (
	"github.com/idemkit/idemkit/internal/testing/testpayload"

	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Variants are the cold-start programs, in lab/bench/coldstart.
var Variants = []string{"bare", "memory", "dynamodb"}

// BuildFlags are the flags of a Lambda bootstrap build.
var BuildFlags = []string{"-trimpath", "-ldflags=-s -w", "-tags", "lambda.norpc"}

// Cold is the cold start of one variant.
type Cold struct {
	Variant string
	// Times are from process start to the first invocation's response,
	// one per fresh process.
	Times []time.Duration
	// Size is the linux/arm64 binary's size in bytes.
	Size int64
}

// Median returns the median of Times.
func (c Cold) Median() time.Duration { return quantile(c.Times, 0.5) }

// Build builds each variant into dir, for goos/goarch, and returns the
// paths by variant.
func Build(ctx context.Context, dir, goos, goarch string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range Variants {
		bin := filepath.Join(dir, goos+"-"+goarch, v, "bootstrap")
		args := append([]string{"build"}, BuildFlags...)
		args = append(args, "-o", bin, "./bench/coldstart/"+v)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s for %s/%s: %v: %s", v, goos, goarch, err, b)
		}
		out[v] = bin
	}
	return out, nil
}

// ColdStarts runs each binary runs times, interleaved, each run a fresh
// process served one invocation by a local Lambda Runtime API, and
// returns the times from process start to the invocation's response.
// env is added to each process's environment.
func ColdStarts(ctx context.Context, bins map[string]string, runs int, env []string) (map[string][]time.Duration, error) {
	rt, err := newRuntimeAPI()
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	times := map[string][]time.Duration{}
	for i := 0; i < runs; i++ {
		for _, v := range Variants {
			d, err := rt.coldStart(ctx, bins[v], env, fmt.Sprintf("cold-%s-%d-%d", v, i, time.Now().UnixNano()))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v, err)
			}
			times[v] = append(times[v], d)
		}
	}
	return times, nil
}

// runtimeAPI serves the Lambda Runtime API to one process at a time: one
// invocation, then it holds the next poll until the process is killed.
type runtimeAPI struct {
	srv  *http.Server
	addr string

	mu    sync.Mutex
	event []byte
	id    string
	done  chan struct{}
	resp  []byte
	got   bool
	sent  bool
	stop  chan struct{}
}

func newRuntimeAPI() (*runtimeAPI, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &runtimeAPI{addr: l.Addr().String(), stop: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.response)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", rt.response)
	rt.srv = &http.Server{Handler: mux}
	go rt.srv.Serve(l)
	return rt, nil
}

func (rt *runtimeAPI) Close() {
	close(rt.stop)
	rt.srv.Close()
}

func (rt *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	rt.mu.Lock()
	if rt.sent || rt.event == nil {
		rt.mu.Unlock()
		// The process asks for its next invocation: hold it until killed.
		select {
		case <-r.Context().Done():
		case <-rt.stop:
		}
		return
	}
	rt.sent = true
	ev, id := rt.event, rt.id
	rt.mu.Unlock()
	w.Header().Set("Lambda-Runtime-Aws-Request-Id", id)
	w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
	w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:bench")
	w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")
	w.Header().Set("Content-Type", "application/json")
	w.Write(ev)
}

func (rt *runtimeAPI) response(w http.ResponseWriter, r *http.Request) {
	var buf strings.Builder
	_, _ = fmt.Fprint(&buf, r.URL.Path, " ")
	b := make([]byte, 64<<10)
	n, _ := r.Body.Read(b)
	buf.Write(b[:n])
	rt.mu.Lock()
	if !rt.got {
		rt.got = true
		rt.resp = []byte(buf.String())
		close(rt.done)
	}
	rt.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// coldStart starts bin and returns the time until its first response.
func (rt *runtimeAPI) coldStart(ctx context.Context, bin string, env []string, key string) (time.Duration, error) {
	ev, err := json.Marshal(testpayload.Event(key))
	if err != nil {
		return 0, err
	}
	rt.mu.Lock()
	rt.event, rt.id, rt.done, rt.resp, rt.got, rt.sent = ev, key, make(chan struct{}), nil, false, false
	done := rt.done
	rt.mu.Unlock()

	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), env...), "AWS_LAMBDA_RUNTIME_API="+rt.addr,
		"AWS_LAMBDA_FUNCTION_NAME=bench", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024", "_HANDLER=bootstrap")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var d time.Duration
	select {
	case <-done:
		d = time.Since(start)
	case err := <-exited:
		return 0, fmt.Errorf("exited before answering: %v: %s", err, stderr.String())
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("no response within 30s: %s", stderr.String())
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = cmd.Process.Kill()
	<-exited
	if err != nil {
		return 0, err
	}
	rt.mu.Lock()
	resp := string(rt.resp)
	rt.mu.Unlock()
	if !strings.Contains(resp, "/response ") || !strings.Contains(resp, `"statusCode":201`) {
		return 0, fmt.Errorf("first invocation answered %s", resp)
	}
	return d, nil
}

// SortedTimes returns a sorted copy of d.
func SortedTimes(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}
