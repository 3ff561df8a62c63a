package idemkit_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
)

// TestNeverStoredListMatchesDefaultCacheable: docs/DESIGN.md is the one
// place that lists the statuses never stored; it must name exactly those
// DefaultCacheable refuses.
func TestNeverStoredListMatchesDefaultCacheable(t *testing.T) {
	b, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "**Never stored:**")
	if !ok {
		t.Fatal(`docs/DESIGN.md has no "**Never stored:**" paragraph`)
	}
	para, _, _ := strings.Cut(after, "\n\n")
	var documented []int
	for _, m := range regexp.MustCompile(`\b[1-9][0-9][0-9]\b`).FindAllString(para, -1) {
		n, _ := strconv.Atoi(m)
		documented = append(documented, n)
	}
	var refused []int
	for s := 100; s <= 999; s++ {
		if !idemkit.DefaultCacheable(s) {
			refused = append(refused, s)
		}
	}
	slices.Sort(documented)
	if !slices.Equal(documented, refused) {
		t.Errorf("docs/DESIGN.md never stores %v; DefaultCacheable refuses %v", documented, refused)
	}
}
