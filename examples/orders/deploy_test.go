package orders_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMakeDeployKeepsSamconfigOverrides: `make deploy JWT_ISSUER=...`
// passes the JWT settings without losing the environment's
// parameter_overrides from samconfig.toml (a command-line
// --parameter-overrides replaces that list). Checked with make -n, which
// prints the commands without running them.
func TestMakeDeployKeepsSamconfigOverrides(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not on PATH")
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // the sam deploy command
	}{
		{"default without JWT settings", nil,
			"sam deploy --config-env default"},
		{"default", []string{"JWT_ISSUER=https://issuer.example/pool", "JWT_AUDIENCE=client-a,client-b"},
			"sam deploy --config-env default --parameter-overrides 'ReplayWindowHours=24 RecordRetentionHours=168 DeletionProtection=false JwtIssuer=https://issuer.example/pool JwtAudience=client-a,client-b'"},
		{"prod", []string{"SAM_ENV=prod", "JWT_ISSUER=https://issuer.example/pool"},
			"sam deploy --config-env prod --parameter-overrides 'ReplayWindowHours=24 RecordRetentionHours=168 DeletionProtection=true JwtIssuer=https://issuer.example/pool'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("make", append([]string{"-s", "-n", "-C", "../..", "deploy"}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n deploy: %v\n%s", err, out)
			}
			var got string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "sam deploy") {
					got = strings.TrimSpace(line)
				}
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
