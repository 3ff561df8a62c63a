package awswrite_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/awswrite"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// attempts returns c with the SDK making at most n attempts per call.
func attempts(c *dynamodb.Client, n int) *dynamodb.Client {
	return dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = n })
}

// clientFor returns a client for endpoint making n attempts per call.
func clientFor(t *testing.T, endpoint string, n int) *dynamodb.Client {
	t.Helper()
	c, err := dynalite.NewClient(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return attempts(c, n)
}

func putIfAbsent(table, pk string) *dynamodb.PutItemInput {
	return &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                map[string]types.AttributeValue{"pk": str(pk)},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
}

// withTarget sends a call as the operation target instead of its own (the
// X-Amz-Target header), before it is signed.
func withTarget(target string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Build.Add(middleware.BuildMiddlewareFunc("target", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if r, ok := in.Request.(*smithyhttp.Request); ok {
					r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+target)
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
		})
	}
}

// errorAs returns err, failing t unless it is an E; what says what
// returned it.
func errorAs[E error](t *testing.T, err error, what string) error {
	t.Helper()
	var e E
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v, want a %T", what, err, e)
	}
	return err
}

// TestClassifyServerAnswers: what a DynamoDB-compatible server's answers
// say about the call, on the test server.
func TestClassifyServerAnswers(t *testing.T) {
	c := attempts(dynalite.Client(t), 1)
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		call func(t *testing.T) error
		want awswrite.Outcome
	}{
		{"written", func(t *testing.T) error {
			_, err := c.PutItem(ctx, putIfAbsent(table, "a"))
			return err
		}, awswrite.Applied},
		{"condition failed", func(t *testing.T) error {
			_, err := c.PutItem(ctx, putIfAbsent(table, "a"))
			return errorAs[*types.ConditionalCheckFailedException](t, err, "second conditional put")
		}, awswrite.NotApplied},
		{"validation", func(t *testing.T) error {
			in := putIfAbsent(table, "b")
			in.ConditionExpression = aws.String("attribute_not_exists(")
			_, err := c.PutItem(ctx, in)
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
				t.Skipf("the test server (%s) answers an invalid condition with %v, DynamoDB with a ValidationException", dynalite.ServerName(), err)
			}
			return err
		}, awswrite.NotApplied},
		{"table not found", func(t *testing.T) error {
			_, err := c.PutItem(ctx, putIfAbsent(table+"-missing", "b"))
			return errorAs[*types.ResourceNotFoundException](t, err, "put on a missing table")
		}, awswrite.NotApplied},
		{"invalid parameters (not sent)", func(t *testing.T) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"pk": str("b")}})
			return err
		}, awswrite.NotApplied},
		// Not sent, but the SDK's error for it has no type to tell it by.
		{"no credentials", func(t *testing.T) error {
			_, err := c.PutItem(ctx, putIfAbsent(table, "b"), func(o *dynamodb.Options) {
				o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
					return aws.Credentials{}, errors.New("no EC2 IMDS role found")
				})
			})
			return err
		}, awswrite.Unknown},
		{"cancelled before the call", func(t *testing.T) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := c.PutItem(cctx, putIfAbsent(table, "b"))
			return err
		}, awswrite.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t)
			if got := awswrite.Classify(err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
	if out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": str("b")}, ConsistentRead: aws.Bool(true)}); err != nil || out.Item != nil {
		t.Errorf("a call classified not applied stored b: %v, %v", out, err)
	}
}

// TestClassifyUnknownOperation: an operation the server does not support
// is refused with a 400 UnknownOperationException, which the SDK labels
// neither a client nor a server fault: nothing was applied.
func TestClassifyUnknownOperation(t *testing.T) {
	c := attempts(dynalite.Client(t), 1)
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))
	_, err := c.PutItem(t.Context(), putIfAbsent(table, "a"), withTarget("NoSuchOperation"))
	var status interface{ HTTPStatusCode() int }
	if !errors.As(err, &status) || status.HTTPStatusCode()/100 != 4 {
		t.Skipf("the test server (%s) answers an unknown operation with %v, not a 4xx", dynalite.ServerName(), err)
	}
	if got := awswrite.Classify(err); got != awswrite.NotApplied {
		t.Errorf("Classify(%v) = %v, want not applied", err, got)
	}
}

// TestClassifyTransactWriteItemsUnsupported: where the server lacks
// TransactWriteItems (dynalite), the call is refused as an unknown
// operation and classified not applied, not unknown.
func TestClassifyTransactWriteItemsUnsupported(t *testing.T) {
	if dynalite.Has(t, dynalite.Transactions) {
		t.Skipf("the test server (%s) has TransactWriteItems: no unsupported operation to call", dynalite.ServerName())
	}
	c := attempts(dynalite.Client(t), 1)
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))
	_, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": str("a")}}},
	}})
	if got := awswrite.Classify(err); err == nil || got != awswrite.NotApplied {
		t.Errorf("Classify(%v) = %v, want not applied", err, got)
	}
}

// faultServer is a TCP listener that reads each request and then resets
// the connection (reset) or holds it open without answering.
func faultServer(t *testing.T, reset bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				req, err := http.ReadRequest(bufioReader(conn))
				if err == nil {
					_, _ = io.Copy(io.Discard, req.Body)
				}
				if reset {
					_ = conn.(*net.TCPConn).SetLinger(0)
					conn.Close()
					return
				}
				_, _ = io.Copy(io.Discard, conn) // until the client gives up
			})
		}
	})
	return "http://" + ln.Addr().String()
}

// answering is an HTTP server answering every call with status and a
// DynamoDB error of type code.
func answering(t *testing.T, status int, code string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#`+code+`","message":"test"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestClassifyTransport: a connection reset or a timeout after the
// request was sent, a 5xx, a request timeout and a throttle after the
// SDK's retries are unknown; a connection refused and a throttle of a
// single attempt are not applied.
func TestClassifyTransport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name     string
		endpoint func(t *testing.T) string
		attempts int
		timeout  time.Duration
		want     awswrite.Outcome
	}{
		{"connection reset", func(t *testing.T) string { return faultServer(t, true) }, 1, 0, awswrite.Unknown},
		{"connection reset, retried", func(t *testing.T) string { return faultServer(t, true) }, 3, 0, awswrite.Unknown},
		{"no answer before the deadline", func(t *testing.T) string { return faultServer(t, false) }, 1, 200 * time.Millisecond, awswrite.Unknown},
		{"connection refused", func(*testing.T) string { return refused }, 1, 0, awswrite.NotApplied},
		{"connection refused, retried", func(*testing.T) string { return refused }, 3, 0, awswrite.Unknown},
		{"500", func(t *testing.T) string { return answering(t, 500, "InternalServerError") }, 1, 0, awswrite.Unknown},
		{"503", func(t *testing.T) string { return answering(t, 503, "ServiceUnavailable") }, 1, 0, awswrite.Unknown},
		{"408", func(t *testing.T) string { return answering(t, 408, "RequestTimeout") }, 1, 0, awswrite.Unknown},
		{"throttled", func(t *testing.T) string { return answering(t, 400, "ProvisionedThroughputExceededException") }, 1, 0, awswrite.NotApplied},
		{"throttled, retried", func(t *testing.T) string { return answering(t, 400, "ThrottlingException") }, 2, 0, awswrite.Unknown},
		{"transaction in progress", func(t *testing.T) string { return answering(t, 400, "TransactionInProgressException") }, 1, 0, awswrite.Unknown},
		{"access denied", func(t *testing.T) string { return answering(t, 400, "AccessDeniedException") }, 1, 0, awswrite.NotApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clientFor(t, tc.endpoint(t), tc.attempts)
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err := c.PutItem(ctx, putIfAbsent("t", "a"))
			if err == nil {
				t.Fatal("call succeeded")
			}
			if got := awswrite.Classify(err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
}

// TestHandlerError: a guarded handler's error after a call: plain when
// nothing was applied, wrapping idemkit.ErrOutcomeUnknown when it may
// have been.
func TestHandlerError(t *testing.T) {
	c := clientFor(t, faultServer(t, true), 1)
	_, unknown := c.PutItem(t.Context(), putIfAbsent("t", "a"))
	_, invalid := c.PutItem(t.Context(), &dynamodb.PutItemInput{})
	for _, tc := range []struct {
		name     string
		err      error
		wantKept bool
	}{
		{"nil", nil, false},
		{"not applied", invalid, false},
		{"unknown", unknown, true},
		{"not an SDK error", errors.New("something else"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := awswrite.HandlerError(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("HandlerError(nil) = %v", got)
				}
				return
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("HandlerError(%v) = %v, does not wrap it", tc.err, got)
			}
			if kept := errors.Is(got, idemkit.ErrOutcomeUnknown); kept != tc.wantKept {
				t.Errorf("HandlerError(%v) = %v: ErrOutcomeUnknown %v, want %v", tc.err, got, kept, tc.wantKept)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[awswrite.Outcome]string{awswrite.Applied: "applied", awswrite.NotApplied: "not applied", awswrite.Unknown: "unknown"} {
		if o.String() != want {
			t.Errorf("%d: %q, want %q", int(o), o.String(), want)
		}
	}
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
