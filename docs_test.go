package idemkit_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/memstore"
)

// docSection returns the text of the doc file name from the end of the
// first start to the next blank line (a paragraph, a table's rows),
// failing t when name has no start.
func docSection(t *testing.T, name, start string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), start)
	if !ok {
		t.Fatalf("%s has no %q", name, start)
	}
	section, _, _ := strings.Cut(after, "\n\n")
	return section
}

// TestNeverStoredListMatchesDefaultCacheable: docs/DESIGN.md is the one
// place that lists the statuses never stored; it must name exactly those
// DefaultCacheable refuses.
func TestNeverStoredListMatchesDefaultCacheable(t *testing.T) {
	para := docSection(t, "docs/DESIGN.md", "**Never stored:**")
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

// TestTranscriptContentLengths: every HTTP response a document shows (a
// "HTTP/1.1" status line in a code block, its headers, a blank line, its
// body) has the Content-Length of the body it shows, so a body edited
// without its header, or a header copied from another run, is caught.
func TestTranscriptContentLengths(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range append(files, "README.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range transcriptResponses(string(b)) {
			cl := r.header.Get("Content-Length")
			if cl == "" {
				continue
			}
			checked++
			if n, err := strconv.Atoi(cl); err != nil || n != len(r.body) {
				t.Errorf("%s:%d: %s with Content-Length %s shows a body of %d bytes", name, r.line, r.status, cl, len(r.body))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no response with a Content-Length found in docs/*.md or README.md")
	}
}

type transcriptResponse struct {
	line   int // of the status line, 1-based
	status string
	header http.Header
	body   string
}

// transcriptResponses returns the HTTP responses shown in the code blocks
// of a Markdown document: a status line, header lines, a blank line and
// the body, which runs to the next status line or the end of the block.
func transcriptResponses(doc string) []transcriptResponse {
	var (
		out     []transcriptResponse
		cur     *transcriptResponse
		inBlock bool
		inBody  bool
		body    []string
	)
	flush := func() {
		if cur != nil {
			cur.body = strings.Join(body, "\n")
			out = append(out, *cur)
		}
		cur, inBody, body = nil, false, nil
	}
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			inBlock = !inBlock
		case !inBlock:
		case strings.HasPrefix(line, "HTTP/1.1 "):
			flush()
			cur = &transcriptResponse{line: i + 1, status: line, header: http.Header{}}
		case cur == nil:
		case inBody:
			body = append(body, line)
		case line == "":
			inBody = true
		default:
			if k, v, ok := strings.Cut(line, ": "); ok {
				cur.header.Add(k, v)
			}
		}
	}
	flush()
	return out
}

// TestReadmeNamesEveryProblemType: README.md's table of what clients get
// names every problem type the adapters answer with, with its status.
func TestReadmeNamesEveryProblemType(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## What clients get\n")
	if !ok {
		t.Fatal(`README.md has no "## What clients get" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, e := range httpproblem.Types() {
		name := "`" + strings.TrimPrefix(e.Type, httpproblem.Base) + "`"
		found := false
		for _, line := range strings.Split(section, "\n") {
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if n := len(cells); n >= 2 && strings.Contains(cells[n-1], name) && strings.HasPrefix(cells[n-2], strconv.Itoa(e.Status)) {
				found = true
			}
		}
		if !found {
			t.Errorf("README.md's problem table does not name %s with its status %d", name, e.Status)
		}
	}
}

// TestStorageCostTable: docs/OPERATIONS.md's storage costs per million
// requests are what its stated assumptions give: $0.25 per GB-month, a
// month of 30.4 days, GB = 2^30 bytes, KB = 1024 bytes, each item kept
// for the column's retention; every figure rounded as printed.
func TestStorageCostTable(t *testing.T) {
	table := docSection(t, "docs/OPERATIONS.md", "| Body size | Item | 24 h | 7 days (default) | 30 days |\n")
	days := []float64{1, 7, 30}
	rows := 0
	for _, line := range strings.Split(table, "\n")[1:] {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 5 {
			t.Fatalf("row %q: want 5 cells", line)
		}
		rows++
		kb, err := strconv.ParseFloat(strings.TrimSuffix(cells[1], " KB"), 64)
		if err != nil {
			t.Fatalf("row %q: item %q", line, cells[1])
		}
		perMonth := kb * 1024 * 1e6 / (1 << 30) * 0.25
		for i, d := range days {
			shown := strings.TrimPrefix(cells[2+i], "$")
			decimals := 0
			if _, frac, ok := strings.Cut(shown, "."); ok {
				decimals = len(frac)
			}
			want := strconv.FormatFloat(perMonth*d/30.4, 'f', decimals, 64)
			if shown != want {
				t.Errorf("%s item, %v days: $%s, want $%s", cells[1], d, shown, want)
			}
		}
	}
	if rows < 5 {
		t.Fatalf("storage cost table has %d rows", rows)
	}
}

// TestPolicyDefaultsDocumented: the tables of Policy defaults in
// docs/DESIGN.md and docs/OPERATIONS.md give the defaults New applies.
func TestPolicyDefaultsDocumented(t *testing.T) {
	g, err := idemkit.New(idemkit.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	p := g.Policy("POST /orders")
	human := func(d time.Duration) string {
		switch {
		case d%(24*time.Hour) == 0 && d > 24*time.Hour:
			return fmt.Sprintf("%d days", d/(24*time.Hour))
		case d%time.Hour == 0:
			return fmt.Sprintf("%d h", d/time.Hour)
		case d%time.Minute == 0:
			return fmt.Sprintf("%d min", d/time.Minute)
		}
		return fmt.Sprintf("%d s", d/time.Second)
	}
	if p.OnStaleLease != idemkit.FailClosed {
		t.Fatalf("default OnStaleLease %v", p.OnStaleLease)
	}
	rows := map[string][]string{
		"docs/DESIGN.md": {
			"| `ReplayWindow` | " + human(p.ReplayWindow) + " |",
			"| `RecordRetention` | " + human(p.RecordRetention) + " |",
			"| `Lease` | the Lambda deadline + " + human(p.LeaseMargin) + " (" + human(policydefault.Lease) + " without a deadline) |",
			"| `OnStaleLease` | `FailClosed` |",
			"| `KeyClockSkew` | " + human(p.KeyClockSkew) + " |",
		},
		"docs/OPERATIONS.md": {
			"| `ReplayWindow` | " + human(p.ReplayWindow) + " |",
			"| `RecordRetention` | " + human(p.RecordRetention) + " |",
		},
	}
	for name, want := range rows {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range want {
			if !strings.Contains(string(b), row) {
				t.Errorf("%s lacks the row %q", name, row)
			}
		}
	}
}

// TestDesignListsEveryPackage: docs/DESIGN.md's package table names every
// public package of the module (not internal/, not the nested modules,
// each a folder with a go.mod).
func TestDesignListsEveryPackage(t *testing.T) {
	table := docSection(t, "docs/DESIGN.md", "| Package | For |\n")
	nested := map[string]bool{}
	for _, m := range []string{"integration", "examples", "internal", "node_modules", "testdata", "bin"} {
		nested[m] = true
	}
	pkgs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (nested[d.Name()] || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); d.IsDir() && path != "." && err == nil {
			return filepath.SkipDir // a nested module (lab, samlocal...)
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			pkgs[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages: %v", len(pkgs), pkgs)
	}
	for p := range pkgs {
		name := p
		if p == "." {
			name = "idemkit"
		}
		if !strings.Contains(table, "| `"+name+"` |") {
			t.Errorf("docs/DESIGN.md's package table does not list %s", name)
		}
	}
}
