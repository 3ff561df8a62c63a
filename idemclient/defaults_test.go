package idemclient

import (
	"testing"

	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/internal/policydefault"
)

// TestDefaultsMatchServer: the client's defaults are the server's.
func TestDefaultsMatchServer(t *testing.T) {
	if DefaultRetention != policydefault.RecordRetention {
		t.Errorf("DefaultRetention %s, the server's %s", DefaultRetention, policydefault.RecordRetention)
	}
	if DefaultMargin != policydefault.KeyClockSkew {
		t.Errorf("DefaultMargin %s, the server's KeyClockSkew %s", DefaultMargin, policydefault.KeyClockSkew)
	}
	if ReplayedHeader != adapter.ReplayedHeader {
		t.Errorf("replayed header %q, the server's %q", ReplayedHeader, adapter.ReplayedHeader)
	}
}
