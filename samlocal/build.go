package samlocal

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Bootstraps returns each function's bootstrap, built for this machine
// into dir: the one given (by function name), else what the function's
// build makes, as `sam build` would but for the host's architecture:
//
//   - Metadata BuildMethod makefile: `make build-<Function>` in CodeUri,
//     with ARTIFACTS_DIR set and GOOS=linux, GOARCH=<host> in its
//     environment;
//   - Metadata BuildMethod go1.x, Runtime go1.x, or a provided runtime
//     whose CodeUri holds Go files: `go build -tags lambda.norpc` of
//     CodeUri.
//
// A bootstrap built for another architecture is refused, with the reason.
func Bootstraps(ctx context.Context, p *Plan, given map[string]string, dir string) (map[string]string, error) {
	out := map[string]string{}
	for name := range given {
		if p.Function(name) == nil {
			return nil, fmt.Errorf("samlocal: -bootstrap %s: the template has no such function", name)
		}
	}
	for _, fn := range p.Functions {
		path := given[fn.Name]
		if path == "" {
			var err error
			if path, err = build(ctx, fn, filepath.Join(dir, fn.Name)); err != nil {
				return nil, err
			}
		}
		if err := checkArch(path); err != nil {
			return nil, fmt.Errorf("samlocal: function %s: %w", fn.Name, err)
		}
		out[fn.Name] = path
	}
	return out, nil
}

func build(ctx context.Context, fn *Function, dir string) (string, error) {
	if fn.CodeDir == "" {
		return "", fmt.Errorf("samlocal: function %s has no local CodeUri: give its bootstrap with -bootstrap %s=PATH", fn.Name, fn.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	env := append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	var cmd *exec.Cmd
	switch {
	case fn.BuildMethod == "makefile":
		cmd = exec.CommandContext(ctx, "make", "-s", "build-"+fn.Name, "ARTIFACTS_DIR="+dir)
		env = append(env, "ARTIFACTS_DIR="+dir)
	case fn.BuildMethod == "go1.x" || fn.Runtime == "go1.x" || (strings.HasPrefix(fn.Runtime, "provided") && hasGo(fn.CodeDir)):
		cmd = exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", filepath.Join(dir, "bootstrap"), ".")
	default:
		return "", fmt.Errorf("samlocal: function %s: no way to build it for this machine (Runtime %q, BuildMethod %q): give its bootstrap with -bootstrap %s=PATH",
			fn.Name, fn.Runtime, fn.BuildMethod, fn.Name)
	}
	cmd.Dir, cmd.Env = fn.CodeDir, env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("samlocal: build %s: %s: %v: %s", fn.Name, strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(b)))
	}
	path := filepath.Join(dir, "bootstrap")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("samlocal: build %s made no %s", fn.Name, path)
	}
	return path, nil
}

func hasGo(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(m) > 0
}

// checkArch refuses an executable of another architecture than this
// machine's: the emulator would fail to start it with a riddle.
func checkArch(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("bootstrap %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if want != elf.EM_NONE && f.Machine != want {
		return fmt.Errorf("bootstrap %s is built for %v, this machine is %s: build it with GOARCH=%s (a makefile build must take GOARCH from its environment) or give one with -bootstrap",
			path, f.Machine, runtime.GOARCH, runtime.GOARCH)
	}
	return nil
}

// BuildRIE builds aws-lambda-rie, at the version this module's go.mod
// pins, into out. It needs this module's source (a clone of idemkit).
func BuildRIE(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
	cmd.Dir = ModuleDir()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("samlocal: build aws-lambda-rie: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// ModuleDir is this module's directory, found from this source file.
func ModuleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// RepoRoot is the repository's root, above this module.
func RepoRoot() string { return filepath.Join(ModuleDir(), "..") }
