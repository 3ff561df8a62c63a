// Package batch makes Lambda functions fed by batches (SQS standard and
// FIFO queues, Kinesis streams, DynamoDB Streams, Amazon MSK and
// self-managed Kafka) run each record at most once per key and consumer.
// It answers the event source with a partial batch response, which names
// the records that failed in batchItemFailures, so that only they are
// delivered again. The event source mapping must list
// ReportBatchItemFailures in its FunctionResponseTypes. Without it the
// response is ignored, and the failed records are taken as done.
//
// What a user must choose:
//
//   - The tenant. Config.Tenant has no default, and the constructors
//     panic without one, as every idemkit adapter does: name whom a
//     record belongs to, [TenantFromSource] to scope records by their
//     event source (the queue, stream or cluster), or
//     tenant.Single.
//   - The consumer. Records are scoped by Config.Operation, which names
//     the consumer: two functions reading one source and sharing a store
//     must never share records. Empty, it is the function's name
//     (AWS_LAMBDA_FUNCTION_NAME) and the record's Go type; with neither a
//     name nor an Operation the constructors panic.
//   - The key. A business key from the body (an order id) has no age: its
//     UUIDv7 time is not checked (event.Config.CheckKeyAge).
//   - Text bodies. A body that starts with "{" or "[" but is not JSON
//     ("[INFO] started") is compared byte for byte, never refused (under
//     the default fingerprint.ModeAuto).
//
// [SQS], [Kinesis], [DynamoDB] and [Kafka] wrap a function of one record
// and return the handler lambda.Start runs. Each record is guarded on its
// own, in the batch's order, one at a time:
//
//   - A record that runs and returns nil is done; its key stays stored.
//   - A completed duplicate (a redelivery, or the same business key in
//     another message) is done without running the function.
//   - A record whose key is held by a running call (idemkit.ErrInFlight),
//     or that the store could not guard (idemkit.ErrStoreUnavailable), is
//     reported failed, for the source to deliver again later.
//   - A function error frees the key and fails the record. An error that
//     wraps idemkit.ErrOutcomeUnknown keeps the key (indeterminate, for an
//     operator) and fails the record, which is then never run again.
//   - An invalid record (no key, a key over the limit, a payload that
//     cannot be read or fingerprinted) fails with an error that is
//     [ErrInvalidRecord] under errors.Is, and runs nothing. So does a
//     record whose Key or Payload function panicked ([*PanicError]; a
//     panicking Tenant is idemkit.ErrTenantMissing): the panic fails that
//     record alone.
//   - The other refusals of idemkit.Guard.Do (a reused key with another
//     payload, an indeterminate record, no tenant) fail the record.
//
// Ordered sources keep their order. After the first failure of a Kinesis
// or DynamoDB Streams batch, or of an SQS FIFO batch, every later record is
// reported failed without running ([ErrEarlierFailure]). With
// Config.ByGroup, a FIFO batch stops only the failed record's message
// group. A Kafka batch stops only the failed record's topic-partition. A
// record is started only while more than Config.Margin is left before the
// function's deadline, so that its outcome can be stored in time. The
// records not reached are reported failed ([ErrDeadline]) and never
// started.
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/internal/eventreq"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/lambda/event"
)

// DefaultMargin is the time kept before the function's deadline when
// Config.Margin is zero.
const DefaultMargin = 2 * time.Second

// Reasons a record is reported failed without running.
var (
	// ErrEarlierFailure: an earlier record of the ordered batch (or, with
	// Config.ByGroup, of its FIFO message group) failed, so this one was
	// not run. The source delivers both again, in order.
	ErrEarlierFailure = errors.New("batch: not run: an earlier record of the ordered batch failed")
	// ErrDeadline: no more than Config.Margin was left before the
	// function's deadline when the record's turn came.
	ErrDeadline = errors.New("batch: not run: too little time left before the function's deadline")
	// ErrInvalidRecord is wrapped by the error of a record whose key or
	// payload cannot be had. Key or Payload failed or panicked, the key is
	// empty or too long (the error is then also idemkey.ErrInvalid), or
	// the payload cannot be fingerprinted (under fingerprint.ModeJSON, a
	// body that is not JSON).
	ErrInvalidRecord = errors.New("batch: invalid record")
)

// EnvFunctionName is the variable Lambda sets to the function's name. The
// default Operation of a record names the consumer by it.
const EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// PanicError is the failure of a record whose Key, Tenant or Payload
// function panicked. The panic fails that record alone; the batch goes on
// as after any other failure of the record. The default OnFailure logs it
// at error level with its stack.
type PanicError struct {
	Func  string // "Key", "Tenant" or "Payload"
	Value any    // the value the function panicked with
	Stack []byte // the stack of the panic, as debug.Stack formats it
}

func (e *PanicError) Error() string { return fmt.Sprintf("batch: %s panicked: %v", e.Func, e.Value) }

// ErrNoIdentifier is returned by a wrapped handler, with nothing run, for
// a batch with a record that has no identifier (an SQS message id, a
// sequence number). Such a record cannot be named in batchItemFailures,
// and the event source takes an empty identifier for the failure of the
// whole batch.
var ErrNoIdentifier = errors.New("batch: a record has no identifier to report it by")

// Config configures a batch wrapper for records of type R. Its Tenant is
// required: the constructors panic without one. With Tenant set to
// [TenantFromSource], the other fields may be zero in a Lambda function:
// every record is then keyed by its own identifier and scoped by its
// event source and the function (see the defaults of Config's fields).
type Config[R any] struct {
	// Config says how each record is guarded, as for event.Wrap: its Key,
	// Tenant, Operation, Payload, Fingerprint and CheckKeyAge. Tenant is
	// required (TenantFromSource names the record's event source). Other
	// zero fields take the source's defaults:
	//
	//   - the key is the record's id (the SQS message id, the eventID of a
	//     Kinesis or DynamoDB Streams record, a Kafka record's
	//     "topic-partition@offset");
	//   - the operation names the consumer: the function's name (the
	//     AWS_LAMBDA_FUNCTION_NAME variable, read when the handler is made),
	//     "/" and the Go type of the record
	//     ("shipper/events.SQSMessage"). Two functions reading one source
	//     and sharing a store thus never share a record. Without the
	//     variable (outside Lambda) an empty Operation is refused: the
	//     constructors panic. A set Operation is used as it is: give each
	//     consumer its own;
	//   - the payload is the record's body (the SQS body, the Kinesis data,
	//     the DynamoDB Streams record's "dynamodb" member, the Kafka value
	//     decoded from base64), fingerprinted as JSON when it starts with
	//     "{" or "[" and parses, and as its bytes otherwise;
	//   - the key's age is not checked (CheckKeyAge false).
	//
	// A key from the body (an order id) makes a second message about the
	// same thing a duplicate. The payload must then be equal too, or the
	// record fails with idemkit.ErrFingerprintMismatch.
	event.Config[R]
	// Margin is the time kept before the function's deadline for storing
	// a record's outcome. A record is started only while more than Margin
	// is left, and its function's context ends Margin before the
	// deadline. Zero: DefaultMargin.
	Margin time.Duration
	// ByGroup (SQS FIFO queues only) stops only the failed record's
	// message group: after a failure, the later records of the same
	// MessageGroupId are reported failed without running, and the records
	// of other groups run. False: the first failure stops the rest of the
	// batch, as AWS advises for FIFO queues.
	ByGroup bool
	// OnFailure is called for each record reported failed, with the
	// reason. Nil: one slog.Default warning line per failed record.
	OnFailure func(ctx context.Context, f Failure)
	// Clock is the time against which the deadline is read. Nil: the
	// system clock.
	Clock clock.Clock
}

// Failure is a record reported failed, and why.
type Failure struct {
	// ID is the identifier reported in batchItemFailures: the message id,
	// the sequence number, or a Kafka record's "topic-partition@offset".
	ID    string
	Index int   // the record's position in the batch, from 0 (Kafka: in the order run)
	Err   error // why; see the package documentation
}

// source is what differs between event sources.
type source[R any] struct {
	id      func(R) string                       // the identifier batchItemFailures names
	key     func(R) string                       // the default key
	payload func(R) ([]byte, error)              // the default payload
	group   func(R) (group string, ordered bool) // the order the record keeps: ordered records of one group stop at a failure
	// perGroup: an ordered record stops only its own group, whatever
	// Config.ByGroup says (a Kafka topic-partition).
	perGroup bool
	// typeName names the record's type in the default operation. Empty:
	// R's Go type.
	typeName string
}

// consumer returns the operation of cfg: its Operation, or else the
// function's name and typeName. It panics when neither can be had.
func consumer(op, typeName string) string {
	if op != "" {
		return op
	}
	fn := os.Getenv(EnvFunctionName)
	if fn == "" {
		panic("batch: Config.Operation is empty and " + EnvFunctionName + " is not set: name the consumer in Config.Operation, " +
			"so that two consumers of one source sharing a store never share a record")
	}
	return fn + "/" + typeName
}

// recovered turns a panic of the user's function which into *err.
func recovered(which string, err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Func: which, Value: v, Stack: debug.Stack()}
	}
}

// wrap returns the function that runs a batch of records, and the
// indexes of the failures to report, each identifier once, in batch
// order.
func wrap[R any](g *idemkit.Guard, cfg Config[R], src source[R], fn func(context.Context, R) error) func(context.Context, []R) ([]int, error) {
	if g == nil {
		panic("batch: nil *idemkit.Guard")
	}
	if fn == nil {
		panic("batch: nil function")
	}
	b := &batcher[R]{g: g, spec: recordSpec(cfg, src), src: src, fn: fn, byGroup: cfg.ByGroup,
		margin: setting.Or(cfg.Margin, DefaultMargin), now: time.Now, report: cfg.OnFailure}
	if cfg.Clock != nil {
		b.now = cfg.Clock.Now
	}
	if b.report == nil {
		b.report = logFailure
	}
	return b.handle
}

// respond returns the handler of an event whose records run returns the
// failures of: its response (made by resp) lists one failure (made by
// failure) per record reported failed, in batch order, and is an empty
// list, not null, when none failed.
func respond[E, R, Resp, F any](run func(context.Context, []R) ([]int, error), records func(E) []R, resp func([]F) Resp, failure func(R) F) func(context.Context, E) (Resp, error) {
	return func(ctx context.Context, e E) (Resp, error) {
		rs := records(e)
		failed, err := run(ctx, rs)
		if err != nil {
			var none Resp
			return none, err
		}
		out := make([]F, 0, len(failed))
		for _, i := range failed {
			out = append(out, failure(rs[i]))
		}
		return resp(out), nil
	}
}

// recordSpec returns how each record of cfg and src becomes a request:
// the user's Key, Tenant and Payload, each failing its record alone when
// it panics, or else the source's default key and payload. It panics when
// cfg has no Tenant, or its Fingerprint or consumer is invalid.
func recordSpec[R any](cfg Config[R], src source[R]) *eventreq.Spec[R] {
	fp := eventreq.MustPrint("batch", cfg.Tenant != nil, "name whom a record belongs to, "+
		"batch.TenantFromSource for its event source (the queue, stream or cluster), or tenant.Single", cfg.Fingerprint)
	typeName := src.typeName
	if typeName == "" {
		typeName = reflect.TypeFor[R]().String()
	}
	return &eventreq.Spec[R]{MaxKeyLen: cfg.MaxKeyLen, Operation: consumer(cfg.Operation, typeName), Print: fp,
		Raw: eventreq.RawFallback(cfg.Fingerprint), CheckKeyAge: cfg.CheckKeyAge, Prefix: "batch",
		Key: recordKey(cfg.Key, src.key), Tenant: recordTenant(cfg.Tenant), Payload: recordPayload(cfg.Payload, src.payload)}
}

// recordKey returns key, whose panic becomes the record's *PanicError, or
// else the source's default key, which never fails.
func recordKey[R any](key func(R) (string, error), def func(R) string) func(R) (string, error) {
	if key == nil {
		return func(r R) (string, error) { return def(r), nil }
	}
	return func(r R) (k string, err error) {
		defer recovered("Key", &err)
		return key(r)
	}
}

// recordTenant returns tenant, whose panic becomes the record's
// *PanicError.
func recordTenant[R any](tenant func(context.Context, R) (string, error)) func(context.Context, R) (string, error) {
	return func(ctx context.Context, r R) (t string, err error) {
		defer recovered("Tenant", &err)
		return tenant(ctx, r)
	}
}

// recordPayload returns payload, whose panic becomes the record's
// *PanicError, or else the source's default payload.
func recordPayload[R any](payload func(R) ([]byte, error), def func(R) ([]byte, error)) func(R) ([]byte, error) {
	if payload == nil {
		return def
	}
	return func(r R) (b []byte, err error) {
		defer recovered("Payload", &err)
		return payload(r)
	}
}

// batcher runs the batches of one wrapped handler.
type batcher[R any] struct {
	g       *idemkit.Guard
	spec    *eventreq.Spec[R]
	src     source[R]
	fn      func(context.Context, R) error
	byGroup bool
	margin  time.Duration
	now     func() time.Time
	report  func(context.Context, Failure)
}

// handle runs records in order and returns the indexes of the failures
// to report, each identifier once, in batch order; it runs nothing when a
// record has no identifier.
func (b *batcher[R]) handle(ctx context.Context, records []R) ([]int, error) {
	for i, r := range records {
		if b.src.id(r) == "" {
			return nil, fmt.Errorf("%w (record %d)", ErrNoIdentifier, i)
		}
	}
	p := &pass[R]{batcher: b, ctx: ctx, seen: map[string]bool{}, stopped: map[string]error{}}
	p.deadline, p.hasDeadline = ctx.Deadline()
	for i, r := range records {
		id := b.src.id(r)
		group, ordered := b.group(r)
		if err := p.notRun(group, ordered); err != nil {
			p.fail(i, id, err)
			continue
		}
		if err := b.run(ctx, r); err != nil {
			p.fail(i, id, err)
			if ordered {
				p.stopped[group] = fmt.Errorf("%w (record %s)", ErrEarlierFailure, id)
			}
		}
	}
	return p.failed, nil
}

// group returns the order r keeps: its group ("" when the first failure
// stops the whole batch) and whether it is ordered.
func (b *batcher[R]) group(r R) (group string, ordered bool) {
	group, ordered = b.src.group(r)
	if ordered && !b.byGroup && !b.src.perGroup {
		group = ""
	}
	return group, ordered
}

// run guards one record: nil when it ran or was a completed duplicate,
// and an error wrapping ErrInvalidRecord when it could not become a
// request (a missing tenant excepted).
func (b *batcher[R]) run(ctx context.Context, r R) error {
	req, err := b.spec.Request(ctx, b.g, r)
	if err != nil {
		if !errors.Is(err, idemkit.ErrTenantMissing) {
			err = fmt.Errorf("%w: %w", ErrInvalidRecord, err)
		}
		return err
	}
	_, _, err = b.g.Do(ctx, req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-b.margin))
			defer cancel()
		}
		if err := b.fn(ctx, r); err != nil {
			return nil, err
		}
		return &idemkit.Snapshot{Status: 200}, nil
	})
	if errors.Is(err, idemkit.ErrReplayWindowPassed) || errors.Is(err, idemkit.ErrSnapshotOmitted) {
		// Completed earlier: a duplicate, whatever was stored of it.
		return nil
	}
	return err
}

// pass is the state of one batch being run: the failures reported so far
// and why the later records of a group do not run.
type pass[R any] struct {
	*batcher[R]
	ctx         context.Context
	deadline    time.Time
	hasDeadline bool
	late        bool             // the deadline came: no later record runs
	stopped     map[string]error // ordered groups that failed: why their later records do not run
	failed      []int
	seen        map[string]bool
}

// notRun returns why a record of group is not run, or nil when it may
// run; once the deadline is near, every later record is late too.
func (p *pass[R]) notRun(group string, ordered bool) error {
	switch {
	case p.late:
		return ErrDeadline
	case ordered && p.stopped[group] != nil:
		return p.stopped[group]
	case p.hasDeadline && p.deadline.Sub(p.now()) <= p.margin:
		p.late = true
		return ErrDeadline
	}
	return nil
}

// fail reports the failure of record i and lists its index unless its
// identifier is listed already.
func (p *pass[R]) fail(i int, id string, err error) {
	p.report(p.ctx, Failure{ID: id, Index: i, Err: err})
	if !p.seen[id] {
		p.seen[id] = true
		p.failed = append(p.failed, i)
	}
}

// logFailure is the default OnFailure: one warning line per failure, or
// an error line with the stack for a panic.
func logFailure(ctx context.Context, f Failure) {
	var p *PanicError
	if errors.As(f.Err, &p) {
		slog.Default().ErrorContext(ctx, "batch: record failed", "id", f.ID, "index", f.Index, "error", f.Err.Error(),
			"panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		return
	}
	slog.Default().WarnContext(ctx, "batch: record failed", "id", f.ID, "index", f.Index, "error", f.Err.Error())
}
