package dynalite_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// TestProbeDynalite: what the probes measure on dynalite 4.0.0 (the
// package doc lists the same facts).
func TestProbeDynalite(t *testing.T) {
	t.Parallel()
	ep := dynalite.NewServer(t).Endpoint()
	want := map[dynalite.Capability]bool{
		dynalite.AllOldOnConditionFailure: false,
		dynalite.FaithfulCapacity:         true,
		dynalite.AtomicConditionalWrites:  true,
		dynalite.RegionScopedTables:       false,
		dynalite.UpdateTimeToLive:         false,
		dynalite.Transactions:             false,
	}
	probeAll(t, ep, want)
}

// TestProbeMoto: what the probes measure on moto_server 5.2.1.
func TestProbeMoto(t *testing.T) {
	t.Parallel()
	ep := dynalite.NewMoto(t).Endpoint()
	want := map[dynalite.Capability]bool{
		dynalite.AllOldOnConditionFailure: true,
		dynalite.FaithfulCapacity:         false,
		dynalite.AtomicConditionalWrites:  false,
		dynalite.RegionScopedTables:       true,
		dynalite.UpdateTimeToLive:         true,
		dynalite.Transactions:             true,
	}
	probeAll(t, ep, want)
}

func probeAll(t *testing.T, ep string, want map[dynalite.Capability]bool) {
	t.Helper()
	for _, c := range dynalite.Capabilities {
		s, err := dynalite.Probe(t.Context(), ep, c)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		t.Logf("%s", s)
		if s.Capability != c || s.Detail == "" {
			t.Errorf("probe of %s: %+v", c, s)
		}
		if w := want[c]; s.Has != w {
			t.Errorf("%s: has %v, want %v (if the server changed, update the package doc)", c, s.Has, w)
		}
	}
}

// TestRequireSkipsNamingTheCapability: Require skips with the capability
// and the measurement; Has caches per server.
func TestRequireSkipsNamingTheCapability(t *testing.T) {
	if dynalite.Has(t, dynalite.UpdateTimeToLive) {
		t.Skip("the shared test server has UpdateTimeToLive: nothing to skip")
	}
	var sub *testing.T
	t.Run("requires", func(t *testing.T) {
		sub = t
		dynalite.Require(t, dynalite.UpdateTimeToLive)
		t.Error("Require did not skip")
	})
	if !sub.Skipped() {
		t.Fatal("not skipped")
	}
}

func TestSkipDynamoDB(t *testing.T) {
	t.Setenv(dynalite.EnvSkip, "1")
	for name, fn := range map[string]func(t *testing.T){
		"Endpoint":       func(t *testing.T) { dynalite.Endpoint(t) },
		"Client":         func(t *testing.T) { dynalite.Client(t) },
		"NewServer":      func(t *testing.T) { dynalite.NewServer(t) },
		"NewMoto":        func(t *testing.T) { dynalite.NewMoto(t) },
		"Require":        func(t *testing.T) { dynalite.Require(t, dynalite.AtomicConditionalWrites) },
		"SkipIfDisabled": func(t *testing.T) { dynalite.SkipIfDisabled(t) },
	} {
		var sub *testing.T
		t.Run(name, func(t *testing.T) {
			sub = t
			fn(t)
			t.Error("did not skip")
		})
		if !sub.Skipped() {
			t.Errorf("%s did not skip with %s=1", name, dynalite.EnvSkip)
		}
	}
}

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{
		{"", 2 * time.Second},
		{"1", 2 * time.Second},
		{"2.5", 5 * time.Second},
		{"0", 2 * time.Second},
		{"-3", 2 * time.Second},
		{"fast", 2 * time.Second},
		{"NaN", 2 * time.Second},
	} {
		t.Setenv(dynalite.EnvTimeoutScale, tc.env)
		if got := dynalite.Scale(2 * time.Second); got != tc.want {
			t.Errorf("%s=%q: Scale(2s) = %v, want %v", dynalite.EnvTimeoutScale, tc.env, got, tc.want)
		}
	}
}

func TestStartMotoWithoutMoto(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := dynalite.StartMoto(context.Background())
	checkUnavailable(t, "StartMoto", err, "pip install 'moto[server]'")
}

func TestMotoStopEndsServer(t *testing.T) {
	t.Parallel()
	dynalite.SkipIfDisabled(t)
	s, err := dynalite.StartMoto(t.Context())
	if errors.Is(err, dynalite.ErrUnavailable) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// moto answers its first request slowly on a loaded machine.
	hc := &http.Client{Timeout: dynalite.Scale(30 * time.Second)}
	resp, err := hc.Get(s.Endpoint())
	if err != nil {
		t.Fatalf("moto at %s does not answer: %v", s.Endpoint(), err)
	}
	resp.Body.Close()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if resp, err := hc.Get(s.Endpoint()); err == nil {
		resp.Body.Close()
		t.Fatalf("server at %s still answers after Stop", s.Endpoint())
	}
}

// TestProbeDynamoDBLocal: what the probes measure on DynamoDB Local 3.3.1,
// Amazon's own engine: every capability.
func TestProbeDynamoDBLocal(t *testing.T) {
	t.Parallel()
	ep := dynalite.NewDynamoDBLocal(t).Endpoint()
	want := map[dynalite.Capability]bool{}
	for _, c := range dynalite.Capabilities {
		want[c] = true
	}
	probeAll(t, ep, want)
}

func TestStartDynamoDBLocalWithoutJava(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := dynalite.StartDynamoDBLocal(context.Background())
	checkUnavailable(t, "StartDynamoDBLocal", err, "Java 17")
	if !errors.Is(err, dynalite.ErrNoJava) {
		t.Fatalf("StartDynamoDBLocal: err = %v, want one wrapping ErrNoJava too", err)
	}
}

func TestStartDynamoDBLocalWithoutJar(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("skipping: java is not on PATH, which is checked first")
	}
	t.Setenv(dynalite.EnvDir, t.TempDir())
	_, err := dynalite.StartDynamoDBLocal(context.Background())
	checkUnavailable(t, "StartDynamoDBLocal", err, "make deps")
	if errors.Is(err, dynalite.ErrNoJava) {
		t.Fatalf("StartDynamoDBLocal: err = %v, want one not wrapping ErrNoJava", err)
	}
}

func TestDynamoDBLocalStopEndsServer(t *testing.T) {
	t.Parallel()
	s := dynalite.NewDynamoDBLocal(t)
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(s.Endpoint())
	if err != nil {
		t.Fatalf("DynamoDB Local at %s does not answer: %v", s.Endpoint(), err)
	}
	resp.Body.Close()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if resp, err := hc.Get(s.Endpoint()); err == nil {
		resp.Body.Close()
		t.Fatalf("server at %s still answers after Stop", s.Endpoint())
	}
}
