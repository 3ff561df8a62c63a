// Package testkit holds the test helpers that the tests of several
// packages share, written once.
package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Load decodes the JSON file testdata/name of the package under test (a
// captured event, say) into a T, failing t when it cannot.
func Load[T any](t testing.TB, name string) T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes: a slog
// handler's, a server's ErrorLog, a child process's output.
type SyncBuffer struct {
	// Max, when positive, bounds what is kept: once the buffer holds more
	// than Max bytes, later writes are dropped (and reported written), so
	// that a process chatty for a long run keeps its first words only.
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.b.Len() > s.Max {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
