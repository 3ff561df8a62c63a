package dynalite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerSummary: each server's pass of make test (here moto's) ends
// with one line per capability the server lacks and a closing count, read
// from Require's own skip message; failures are shown as they are.
func TestServerSummary(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	atomic := skipMessage("moto", AtomicConditionalWrites, "trial 1 of 10: 3 of 20 concurrent conditional UpdateItems on one item succeeded, want 1")
	capacity := skipMessage("moto", FaithfulCapacity, "a 64 KiB PutItem reported 1 write units, DynamoDB 65")
	for _, tc := range []struct {
		name   string
		log    string
		want   []string
		failed bool
	}{
		{"passed", strings.Join([]string{
			"=== RUN   TestRace",
			"    race_test.go:12: " + atomic,
			"--- SKIP: TestRace (0.01s)",
			"=== RUN   TestRace2/sub",
			"    race_test.go:40: " + atomic,
			"    capacity_test.go:9: " + capacity,
			"ok  \tgithub.com/idemkit/idemkit/dynamo\t12.0s",
			"ok  \tgithub.com/idemkit/idemkit\t3.1s",
		}, "\n"), []string{
			`moto lacks atomic conditional writes: 2 tests skipped (trial 1 of 10: 3 of 20 concurrent conditional UpdateItems on one item succeeded, want 1)`,
			`moto lacks faithful consumed capacity: 1 test skipped (a 64 KiB PutItem reported 1 write units, DynamoDB 65)`,
			`moto: 2 packages passed, 2 capabilities skipped: atomic conditional writes (2 tests), faithful consumed capacity (1 test) (full output: `,
		}, false},
		{"failed", strings.Join([]string{
			"--- FAIL: TestX (0.01s)",
			"FAIL\tgithub.com/idemkit/idemkit/dynamo\t1.0s",
			"ok  \tgithub.com/idemkit/idemkit\t3.1s",
		}, "\n"), []string{
			"--- FAIL: TestX (0.01s)",
			"FAIL\tgithub.com/idemkit/idemkit/dynamo\t1.0s",
			"moto: 1 packages passed, 0 capabilities skipped, 1 packages FAILED (full output: ",
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "test-moto.log")
			if err := os.WriteFile(log, []byte(tc.log+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "../../../.ci/server-summary.sh", "moto", log).CombinedOutput()
			if (err != nil) != tc.failed {
				t.Errorf("exit: %v, want failure %v", err, tc.failed)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("output:\n%s\nwant %d lines", out, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d: %q, want %q", i+1, lines[i], w)
				}
			}
		})
	}
}
