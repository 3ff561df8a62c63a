package dynalite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
)

// motoScript runs moto_server on a free 127.0.0.1 port with its output on
// stdout, and stops it when stdin closes (Stop, or the end of this
// process however it ends): moto_server itself does not watch stdin.
const motoScript = `exec 3<&0
moto_server -H 127.0.0.1 -p 0 </dev/null 3<&- 2>&1 &
pid=$!
(cat <&3 >/dev/null; kill $pid 2>/dev/null) >/dev/null 2>&1 &
exec 3<&-
wait $pid
`

// motoStopCode is the wrapper's exit status when moto_server was stopped
// by the SIGTERM the wrapper sends it (128+15).
const motoStopCode = 143

var motoListening = regexp.MustCompile(`Running on (http://127\.0\.0\.1:[0-9]+)`)

// StartMoto starts moto_server (moto's stand-alone server, `pip install
// 'moto[server]'`), in memory, on a free 127.0.0.1 port, and returns once
// it accepts connections. It is an optional second DynamoDB-compatible
// server: `make test-moto` runs the DynamoDB tests against it
// (IDEMKIT_TEST_SERVER=moto). The context bounds the startup only, as for
// Start; the server stops with Stop or when this process exits.
//
// When moto_server is not on PATH the error wraps ErrUnavailable and is
// one line saying how to install it.
func StartMoto(ctx context.Context) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("moto: start: %w", err)
	}
	if _, err := exec.LookPath("moto_server"); err != nil {
		return nil, unavailablef("%s", MotoMissing)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, unavailablef("moto: sh is not on PATH: %v", err)
	}
	cmd := exec.Command(sh, "-c", motoScript)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	s := &Server{name: "moto", stopCode: motoStopCode}
	// moto_server logs " * Running on http://127.0.0.1:PORT" once it
	// listens, after a warning line or two.
	return s.launch(ctx, cmd, func(line string) (string, error) {
		if m := motoListening.FindStringSubmatch(line); m != nil {
			return m[1], nil
		}
		return "", nil
	})
}

// MotoMissing is the one-line message for a machine without moto_server.
const MotoMissing = "moto: moto_server is not on PATH; it is optional (make test needs only dynalite): pip install 'moto[server]'"
