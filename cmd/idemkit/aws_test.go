package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// regionRecorder forwards to the test server and records the region each
// request was signed for (the SigV4 credential scope).
type regionRecorder struct {
	mu      sync.Mutex
	regions []string // guarded by mu
}

var scopeRegion = regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]+)/dynamodb/`)

func (r *regionRecorder) server(t *testing.T) *httptest.Server {
	target, err := url.Parse(dynalite.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		region := "unsigned"
		if m := scopeRegion.FindStringSubmatch(req.Header.Get("Authorization")); m != nil {
			region = m[1]
		}
		r.mu.Lock()
		r.regions = append(r.regions, region)
		r.mu.Unlock()
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// take returns the regions recorded since the last call.
func (r *regionRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.regions
	r.regions = nil
	return out
}

const stsARN = "arn:aws:sts::123456789012:assumed-role/oncall/alice"

// fakeSTS answers GetCallerIdentity.
func fakeSTS(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil || req.Form.Get("Action") != "GetCallerIdentity" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		w.Write([]byte(`<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>` +
			`<Arn>` + stsARN + `</Arn><UserId>AROAEXAMPLE:alice</UserId><Account>123456789012</Account>` +
			`</GetCallerIdentityResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// awsEnv points the SDK's standard configuration at the test servers.
func awsEnv(t *testing.T, dynamodb, sts string) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":   dynamodb,
		"AWS_ENDPOINT_URL_STS":        sts,
		"AWS_REGION":                  "us-east-1",
		"AWS_DEFAULT_REGION":          "",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}

// With the real environment the commands reach the store through the
// SDK's standard configuration, send every call to --home-region when it
// is given (else to AWS_REGION), and take the operator from STS.
func TestRealEnvironment(t *testing.T) {
	f := newFixture(t)
	var rec regionRecorder
	awsEnv(t, rec.server(t).URL, fakeSTS(t).URL)
	env := Env{Getenv: func(k string) string {
		if k == EnvTable {
			return f.table
		}
		return ""
	}}
	s := scopeOf("real-1")
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	// home holds the table the --home-region commands reach. Where tables
	// are regional, as on DynamoDB, that is a table of its own in
	// eu-west-1 (a global table's replica), holding the record too.
	home := f
	if dynalite.Has(t, dynalite.RegionScopedTables) {
		home = regionFixture(t, "eu-west-1", f.table)
		home.seedIndeterminate(s, time.Now().Add(-time.Hour))
	}

	cases := []struct {
		name   string
		args   []string
		region string
		want   string
	}{
		{"inspect", append([]string{"inspect"}, scopeArgs(s)...), "us-east-1", "State         indeterminate"},
		{"inspect in the home region", append([]string{"inspect", "--home-region", "eu-west-1"}, scopeArgs(s)...), "eu-west-1", "State         indeterminate"},
		{"list in the home region", []string{"list", "--tenant", "acme", "--home-region", "eu-west-1"}, "eu-west-1", "real-1"},
		{"resolve in the home region", append([]string{"resolve", "--home-region", "eu-west-1", "--as", "failed", "--reason", "no charge"}, scopeArgs(s)...), "eu-west-1", "Resolved by   " + stsARN},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.take()
			code, stdout, stderr := runWith(t, env, tc.args...)
			wantCode(t, code, exitOK, stdout, stderr)
			if !strings.Contains(stdout, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, stdout)
			}
			got := rec.take()
			if len(got) == 0 {
				t.Fatal("no request reached the endpoint")
			}
			for _, r := range got {
				if r != tc.region {
					t.Fatalf("requests signed for %v, want all %s", got, tc.region)
				}
			}
		})
	}
	if got := home.get(s).Resolution; got == nil || got.Operator != stsARN {
		t.Fatalf("resolution %+v, want operator %s", got, stsARN)
	}
}

// regionFixture is a fixture on a table named table created by a client of
// region, on the shared test server.
func regionFixture(t *testing.T, region, table string) *fixture {
	t.Helper()
	c, err := dynalite.NewClientIn(t.Context(), dynalite.Endpoint(t), region)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), dynalite.Scale(time.Minute))
	defer cancel()
	if err := dynamo.CreateTable(ctx, c, table, dynamo.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &awsdynamodb.DeleteTableInput{TableName: &table})
	})
	s, err := dynamo.New(c, table, dynamo.Options{CallTimeout: dynalite.Scale(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, table: table, store: s}
}

func TestRealEnvironmentFailures(t *testing.T) {
	f := newFixture(t)
	var rec regionRecorder
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	awsEnv(t, rec.server(t).URL, dead.URL)
	s := scopeOf("real-2")
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	env := Env{Getenv: func(string) string { return "" }}

	// No identity from STS and no --operator: refused before any write.
	code, stdout, stderr := runWith(t, env, append([]string{"resolve", "--table", f.table, "--as", "failed", "--reason", "r"}, scopeArgs(s)...)...)
	wantCode(t, code, exitError, stdout, stderr)
	if !strings.Contains(stderr, "pass --operator NAME") {
		t.Errorf("stderr %q", stderr)
	}
	if got := f.get(s).State; got != idemkit.StateIndeterminate {
		t.Fatalf("record %s after a refused resolve", got)
	}

	// No region anywhere: a usage error.
	t.Setenv("AWS_REGION", "")
	code, stdout, stderr = runWith(t, env, "list", "--table", f.table)
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "no region") {
		t.Errorf("stderr %q", stderr)
	}
}

// Without credentials a command says which to set, rather than pass on
// the SDK's "no EC2 IMDS role found"; it sends nothing.
func TestNoCredentials(t *testing.T) {
	var rec regionRecorder
	awsEnv(t, rec.server(t).URL, fakeSTS(t).URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	env := Env{Getenv: func(k string) string {
		if k == EnvTable {
			return "records"
		}
		return ""
	}}
	code, stdout, stderr := runWith(t, env, "list", "--timeout", "5s")
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") {
		t.Errorf("stderr: %s", stderr)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("calls sent without credentials: %v", got)
	}
}

// The layout flags point the commands at records kept in a shared table
// as the application's dynamo.Options keep them; without them the
// commands fail (never a false all-clear), and invalid ones are usage
// errors.
func TestSingleTableFlags(t *testing.T) {
	opts := dynamo.Options{IndexInFlight: true, KeyAttr: "PK", SortKeyAttr: "SK", SortKeyValue: "idem", KeyPrefix: "IDEM#"}
	f := newFixtureWith(t, opts)
	awsEnv(t, dynalite.Endpoint(t), fakeSTS(t).URL)
	env := Env{Getenv: func(string) string { return "" }}
	s := scopeOf("single-1")
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	layout := []string{"--table", f.table, "--key-attr", "PK", "--sort-key-attr", "SK", "--sort-key-value", "idem", "--key-prefix", "IDEM#"}
	with := func(cmd string, args ...string) []string { return append(append([]string{cmd}, layout...), args...) }

	cases := []struct {
		name string
		args []string
		code int
		want string // in stdout, or in stderr when code is not exitOK
	}{
		{"list", with("list", "--tenant", "acme"), exitOK, "single-1"},
		{"list stale", with("list", "--state", "stale"), exitOK, "No stale records"},
		{"inspect", with("inspect", scopeArgs(s)...), exitOK, "State         indeterminate"},
		{"inspect without the layout", append([]string{"inspect", "--table", f.table}, scopeArgs(s)...), exitError, "key"},
		{"list without the layout", []string{"list", "--table", f.table, "--tenant", "acme"}, exitError, "--key-attr"},
		{"empty sort key value", with("inspect", append(scopeArgs(s), "--sort-key-value", "")...), exitUsage, "without Options.SortKeyValue"},
		{"key attr of a record attribute", with("inspect", append(scopeArgs(s), "--key-attr", "st")...), exitUsage, `Options.KeyAttr "st" is the name of a record attribute`},
		{"resolve", with("resolve", append(scopeArgs(s), "--as", "failed", "--reason", "no charge")...), exitOK, "Resolved by   " + stsARN},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, env, tc.args...)
			wantCode(t, code, tc.code, stdout, stderr)
			out := stdout
			if tc.code != exitOK {
				out = stderr
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\nstdout: %s\nstderr: %s", tc.want, stdout, stderr)
			}
		})
	}
	if got := f.get(s).Resolution; got == nil || got.Operator != stsARN {
		t.Fatalf("resolution %+v, want operator %s", got, stsARN)
	}
}
