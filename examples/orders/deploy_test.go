package orders_test

import (
	"os"
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

// TestSAMBuildIsMakeBuild: sam build (BuildMethod makefile) runs
// build-OrdersFunction (build-ShippingFunction) in the function's CodeUri,
// which is make build-api (build-shipping) with the bootstrap written to
// SAM's ARTIFACTS_DIR: the same go build command,
// so what make build tests is what SAM deploys. samconfig.toml builds in
// the source tree, where the Makefile finds the repository.
func TestSAMBuildIsMakeBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not on PATH")
	}
	art := t.TempDir()
	goBuild := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("make", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, " go build ") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatalf("make %v runs no go build:\n%s", args, out)
		return ""
	}
	for _, fn := range []struct{ dir, samTarget, target, output, pkg string }{
		{"cmd/lambda", "build-OrdersFunction", "build-api", "BOOTSTRAP", "./orders/cmd/lambda"},
		{"cmd/shipping", "build-ShippingFunction", "build-shipping", "SHIPPING_BOOTSTRAP", "./orders/cmd/shipping"},
	} {
		sam := goBuild("-s", "-n", "-C", fn.dir, fn.samTarget, "ARTIFACTS_DIR="+art)
		mk := goBuild("-s", "-n", "-C", "../..", fn.target, fn.output+"="+art+"/bootstrap")
		if sam != mk || !strings.Contains(sam, "-o "+art+"/bootstrap "+fn.pkg) {
			t.Errorf("sam build of %s runs\n  %s\nmake %s runs\n  %s", fn.pkg, sam, fn.target, mk)
		}
	}
	cfg, err := os.ReadFile("../../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"default", "prod"} {
		_, sect, _ := strings.Cut(string(cfg), "["+env+".build.parameters]\n")
		sect, _, _ = strings.Cut(sect, "\n[")
		if !strings.Contains(sect, "build_in_source = true") {
			t.Errorf("samconfig.toml [%s.build.parameters] lacks build_in_source = true", env)
		}
	}
}
