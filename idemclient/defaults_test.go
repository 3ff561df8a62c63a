package idemclient

import (
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/adapter"
)

// TestDefaultsMatchServer: the client's defaults are the server's.
func TestDefaultsMatchServer(t *testing.T) {
	if DefaultRetention != idemkit.DefaultRecordRetention {
		t.Errorf("DefaultRetention %s, the server's %s", DefaultRetention, idemkit.DefaultRecordRetention)
	}
	if DefaultMargin != idemkit.DefaultKeyClockSkew {
		t.Errorf("DefaultMargin %s, the server's KeyClockSkew %s", DefaultMargin, idemkit.DefaultKeyClockSkew)
	}
	if ReplayedHeader != adapter.ReplayedHeader {
		t.Errorf("replayed header %q, the server's %q", ReplayedHeader, adapter.ReplayedHeader)
	}
}
