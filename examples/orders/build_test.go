package orders_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// make build's command produces what provided.al2023 on arm64 runs: a
// static ELF aarch64 executable named bootstrap, for the orders function
// and for the shipping worker.
func TestLambdaBootstrapIsLinuxARM64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the bootstrap; skipped with -short")
	}
	for _, pkg := range []string{"./cmd/lambda", "./cmd/shipping"} {
		t.Run(pkg, func(t *testing.T) { checkBootstrap(t, pkg) })
	}
}

func checkBootstrap(t *testing.T, pkg string) {
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command(goTool(), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
		t.Errorf("bootstrap is %v %v %v, want an ELFCLASS64 EM_AARCH64 executable", f.Class, f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("bootstrap is dynamically linked; provided.al2023 needs CGO_ENABLED=0")
		}
	}
}
