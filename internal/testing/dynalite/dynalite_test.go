package dynalite_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func put(t *testing.T, c *dynamodb.Client, table, pk, v string) {
	t.Helper()
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": str(pk), "v": str(v)},
	})
	if err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// get returns attribute v of item pk, or "" if there is no such item.
func get(t *testing.T, c *dynamodb.Client, table, pk string) string {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": str(pk)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if out.Item == nil {
		return ""
	}
	return out.Item["v"].(*types.AttributeValueMemberS).Value
}

func TestSharedServerTablePutGet(t *testing.T) {
	t.Parallel()
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))

	put(t, c, table, "a", "1")
	if got := get(t, c, table, "a"); got != "1" {
		t.Fatalf("GetItem after PutItem: v = %q, want %q", got, "1")
	}
	if got := get(t, c, table, "missing"); got != "" {
		t.Fatalf("GetItem of a missing item: v = %q, want none", got)
	}
	if ep := dynalite.Endpoint(t); ep != dynalite.Endpoint(t) {
		t.Fatalf("Endpoint changed between calls")
	}
}

func TestCreateTableUniqueNamesAndCleanup(t *testing.T) {
	t.Parallel()
	c := dynalite.Client(t)
	tmpl := dynalite.KeyTable("")
	tmpl.TableName = aws.String("jobs")
	var first string
	t.Run("sub/test with spaces", func(t *testing.T) {
		a := dynalite.CreateTable(t, c, tmpl)
		b := dynalite.CreateTable(t, c, tmpl)
		if a == b {
			t.Fatalf("two tables named %q", a)
		}
		if !strings.HasPrefix(a, "jobs-") {
			t.Errorf("table name %q does not start with the template's name", a)
		}
		first = a
	})
	if aws.ToString(tmpl.TableName) != "jobs" {
		t.Fatalf("template modified: TableName = %q", aws.ToString(tmpl.TableName))
	}
	// The subtest's cleanup has deleted its tables. Deletion ends after
	// DeleteTable answers (DELETING), on dynalite too: poll until it has.
	deadline := time.Now().Add(dynalite.Scale(10 * time.Second))
	for {
		_, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(first)})
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeTable of a cleaned-up table: err = %v, want ResourceNotFoundException", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTableNameValid(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)
	for _, name := range []string{"x", strings.Repeat("é/ ", 200), strings.Repeat("a", 300)} {
		t.Run(name, func(t *testing.T) {
			got := dynalite.TableName(t)
			if !valid.MatchString(got) {
				t.Fatalf("TableName = %q (len %d), not a valid DynamoDB table name", got, len(got))
			}
			if again := dynalite.TableName(t); again == got {
				t.Fatalf("TableName returned %q twice", got)
			}
		})
	}
}

func TestTwoServersAreIndependent(t *testing.T) {
	t.Parallel()
	s1, s2 := dynalite.NewServer(t), dynalite.NewServer(t)
	if s1.Endpoint() == s2.Endpoint() {
		t.Fatalf("both servers at %s", s1.Endpoint())
	}
	c1, err := dynalite.NewClient(t.Context(), s1.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := dynalite.NewClient(t.Context(), s2.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	// The same table name on both servers holds different data.
	in := dynalite.KeyTable("")
	in.TableName = aws.String("same")
	for _, c := range []*dynamodb.Client{c1, c2} {
		if _, err := c.CreateTable(t.Context(), in); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		if err := dynalite.WaitActive(t.Context(), c, "same"); err != nil {
			t.Fatal(err)
		}
	}
	put(t, c1, "same", "k", "one")
	put(t, c2, "same", "k", "two")
	if got := get(t, c1, "same", "k"); got != "one" {
		t.Errorf("server 1: v = %q, want one", got)
	}
	if got := get(t, c2, "same", "k"); got != "two" {
		t.Errorf("server 2: v = %q, want two", got)
	}
}

func TestStopEndsServer(t *testing.T) {
	t.Parallel()
	dynalite.SkipIfDisabled(t)
	s, err := dynalite.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	if resp, err := hc.Get(s.Endpoint()); err == nil {
		resp.Body.Close()
		t.Fatalf("server at %s still answers after Stop", s.Endpoint())
	}
}

func TestStartTimesOutWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if s, err := dynalite.Start(ctx); err == nil {
		s.Stop()
		t.Fatal("Start with a cancelled context succeeded")
	} else if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

// checkUnavailable fails t unless err, start's, wraps ErrUnavailable and
// is one line that says what to do: says says.
func checkUnavailable(t *testing.T, start string, err error, says string) {
	t.Helper()
	if !errors.Is(err, dynalite.ErrUnavailable) {
		t.Fatalf("%s: err = %v, want one wrapping ErrUnavailable", start, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, says) {
		t.Fatalf("error is not one line saying %q: %q", says, msg)
	}
}

func TestStartWithoutNodeModules(t *testing.T) {
	t.Setenv(dynalite.EnvDir, t.TempDir())
	_, err := dynalite.Start(context.Background())
	checkUnavailable(t, "Start", err, "make deps")
}

func TestStartWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := dynalite.Start(context.Background())
	checkUnavailable(t, "Start", err, "node")
}

func TestDirFindsModuleRoot(t *testing.T) {
	t.Setenv(dynalite.EnvDir, "")
	dir, err := dynalite.Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("Dir = %s, which holds no go.mod", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "internal", "testing", "dynalite", "server.js")); err != nil {
		t.Fatalf("Dir = %s, not the module root: %v", dir, err)
	}
}

func TestStartReportsServerStderr(t *testing.T) {
	dynalite.SkipIfDisabled(t)
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "dynalite")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"dynalite","main":"index.js"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte("throw new Error('broken install')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dynalite.EnvDir, dir)
	s, err := dynalite.Start(t.Context())
	if err == nil {
		s.Stop()
		t.Fatal("Start with a broken dynalite succeeded")
	}
	if errors.Is(err, dynalite.ErrUnavailable) {
		t.Errorf("a server that fails is not unavailable: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "broken install") {
		t.Fatalf("error is not one line quoting the server's stderr: %q", msg)
	}
	t.Log(err)
}
