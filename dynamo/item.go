package dynamo

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/itemsize"
)

// Attribute names of a record item, as the package documentation lays
// them out. They are short because names count toward the item size and
// so toward capacity units.
const (
	attrID           = DefaultKeyAttr // S  record ID (idemkit.Record.ID); the partition key
	attrState        = "st"           // S  in_flight, completed, indeterminate or failed
	attrTenant       = "tn"           // S  Scope.Tenant
	attrOperation    = "op"           // S  Scope.Operation
	attrKey          = "ik"           // S  Scope.Key
	attrFingerprint  = "fp"           // S  fingerprint of the first request
	attrOwner        = "ow"           // S  owner token (the fencing token)
	attrLeaseUntil   = "lu"           // N  epoch milliseconds, rounded up
	attrReplayUntil  = "ru"           // N  epoch milliseconds
	attrExpiresAt    = TTLAttr        // N  epoch seconds, rounded up: the table's TTL attribute (Options.TTLAttr)
	attrCreatedAt    = "ca"           // N  epoch milliseconds
	attrCompletedAt  = "da"           // N  epoch milliseconds
	attrStatus       = "sc"           // N  snapshot status code
	attrHeader       = "sh"           // M  snapshot header: canonical name -> L of S (B for a value that is not UTF-8)
	attrBody         = "sb"           // B  snapshot body, encoded as attrBodyEncoding says
	attrBodyEncoding = "se"           // S  the Codec: "zstd" or "s2"; absent: the body is stored as is
	attrBase64       = "s64"          // BOOL snapshot IsBase64Encoded flag; absent: false
	attrOmitted      = "som"          // BOOL snapshot body too large to store; absent: false
	attrResolvedAs   = "ra"           // S  resolution: completed or failed
	attrOperator     = "ro"           // S  resolution operator
	attrReason       = "rr"           // S  resolution reason
	attrResolvedAt   = "rt"           // N  resolution time, epoch milliseconds
	attrResReplay    = "rq"           // N  Resolution.ReplayUntil, epoch milliseconds, when set
	attrResExpires   = "rx"           // N  Resolution.ExpiresAt, epoch milliseconds, when set
	attrCause        = "cz"           // S  why the record became indeterminate (idemkit.Cause); absent: never marked, or by a version without it
	attrVersion      = "v"            // S  idemkit.Record.Version: the write that stored the item

	// attrIndeterminate is the hash key of IndexIndeterminate. It is set
	// to indeterminateValue while a record is indeterminate and, when the
	// store has Options.IndexInFlight, to inFlightValue while it is in
	// flight; otherwise it is absent.
	attrIndeterminate = "ix" // S
	// attrIndeterminateTenant is the hash key of IndexIndeterminateTenant.
	// It is set (to the tenant) only while a record is indeterminate.
	attrIndeterminateTenant = "it" // S
)

// The values of attrIndeterminate.
const (
	indeterminateValue = "indeterminate"
	inFlightValue      = "in_flight"
)

// Names of a store's table, for templates and infrastructure code that
// create it themselves.
const (
	// DefaultKeyAttr is the partition key attribute of a table of its own
	// (Options.KeyAttr zero): it holds the record ID.
	DefaultKeyAttr = "pk"
	// TTLAttr is the table's TTL attribute, epoch seconds, when
	// Options.TTLAttr is zero: a template enables TTL on it
	// (TimeToLiveSpecification), as CreateTable does. TableDefinition
	// cannot name it, since TTL is set apart.
	TTLAttr = "exp"
)

// Global secondary indexes. Both are sparse (only indeterminate records
// carry their hash keys ix and it, and in_flight ones carry ix under
// Options.IndexInFlight), ordered by lu (the lease's end), and project
// ALL.
const (
	// IndexIndeterminate lists all indeterminate records, and in_flight
	// ones under Options.IndexInFlight: hash ix, range lu.
	IndexIndeterminate = "ix-lease"
	// IndexIndeterminateTenant lists one tenant's indeterminate records:
	// hash it, range lu.
	IndexIndeterminateTenant = "it-lease"
)

// maxDecodedBody bounds a decompressed body: the largest response a Lambda
// behind API Gateway can return is 6 MB (10 MB for a Function URL stream),
// so anything larger is not a body we stored.
const maxDecodedBody = 16 << 20

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// ceilMilli returns t in epoch milliseconds, rounded up.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// KeptPast is how long an item outlives its record's ExpiresAt: the TTL
// attribute holds ExpiresAt plus KeptPast, so that TTL deletes no item
// that a late copy of a Create may still meet (idemkit.MaxWriteDelay, plus
// five minutes for the SDK's clock-skew correction, which dates a
// signature by DynamoDB's clock where the instance's runs behind it, so
// that a late copy may stay valid that much longer than the instance's own
// clock says). The listings compare the attribute with now plus
// KeptPast. A tool that reads the items itself subtracts it.
const KeptPast = idemkit.MaxWriteDelay + 5*time.Minute

// keptPastSec is KeptPast in seconds.
const keptPastSec = int64(KeptPast / time.Second)

// expSec returns the TTL attribute of a record that expires at t: t in
// epoch seconds, rounded up, plus KeptPast.
func expSec(t time.Time) int64 { return ceilSec(t) + keptPastSec }

// ceilSec returns t in epoch seconds, rounded up.
func ceilSec(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// baseItem returns the attributes of rec other than its snapshot, every
// one derived from rec: its fields, the TTL attribute (ExpiresAt plus
// KeptPast), and the index keys of its state (ix and it while
// indeterminate; ix while in_flight when indexInFlight).
// The map is made with room for every attribute the item can get (its
// snapshot's too): filled past its size hint, a map grows and rehashes.
//
// Its string and number values are allocated together (one block of
// strings, one of numbers and one string of all their digits), not one
// by one: an item has about twenty, and a fresh request builds two items.
func baseItem(rec *idemkit.Record, indexInFlight bool) map[string]types.AttributeValue {
	n := 13 // the attributes below, the three times, the version and the index keys
	if rec.Resolution != nil {
		n += 6
	}
	if rec.Snapshot != nil {
		n += 6
	}
	it := make(map[string]types.AttributeValue, n)
	strs := [...]struct{ name, v string }{
		{attrID, rec.ID}, {attrState, string(rec.State)}, {attrTenant, rec.Scope.Tenant},
		{attrOperation, rec.Scope.Operation}, {attrKey, rec.Scope.Key},
		{attrFingerprint, rec.Fingerprint}, {attrOwner, rec.Owner},
	}
	ss := new([len(strs)]types.AttributeValueMemberS)
	for i, a := range strs {
		ss[i].Value = a.v
		it[a.name] = &ss[i]
	}
	if rec.Cause != "" {
		it[attrCause] = str(string(rec.Cause))
	}
	if rec.Version != "" {
		it[attrVersion] = str(rec.Version)
	}
	var nums numbers
	nums.add(attrLeaseUntil, ceilMilli(rec.LeaseUntil))
	nums.add(attrExpiresAt, expSec(rec.ExpiresAt))
	nums.time(attrReplayUntil, rec.ReplayUntil)
	nums.time(attrCreatedAt, rec.CreatedAt)
	nums.time(attrCompletedAt, rec.CompletedAt)
	nums.put(it)
	switch {
	case rec.State == idemkit.StateIndeterminate:
		it[attrIndeterminate] = str(indeterminateValue)
		it[attrIndeterminateTenant] = str(rec.Scope.Tenant)
	case rec.State == idemkit.StateInFlight && indexInFlight:
		it[attrIndeterminate] = str(inFlightValue)
	}
	if r := rec.Resolution; r != nil {
		resolutionAttrs(it, r, r.ResolvedAt)
	}
	return it
}

// numbers gathers an item's number attributes, to be allocated together.
type numbers struct {
	names  [5]string
	vs     [5]int64
	n      int
	digits [5 * 20]byte
}

func (ns *numbers) add(name string, v int64) {
	ns.names[ns.n], ns.vs[ns.n] = name, v
	ns.n++
}

// time adds t in epoch milliseconds, unless it is zero.
func (ns *numbers) time(name string, t time.Time) {
	if !t.IsZero() {
		ns.add(name, t.UnixMilli())
	}
}

// put adds the numbers to it: one allocation for their values and one
// for their digits.
func (ns *numbers) put(it map[string]types.AttributeValue) {
	var ends [len(ns.vs)]int
	d := ns.digits[:0]
	for i := range ns.n {
		d = strconv.AppendInt(d, ns.vs[i], 10)
		ends[i] = len(d)
	}
	all := string(d)
	vs := make([]types.AttributeValueMemberN, ns.n)
	start := 0
	for i := range ns.n {
		vs[i].Value = all[start:ends[i]]
		it[ns.names[i]] = &vs[i]
		start = ends[i]
	}
}

func resolutionAttrs(it map[string]types.AttributeValue, r *idemkit.Resolution, at time.Time) {
	it[attrResolvedAs] = str(string(r.As))
	it[attrOperator] = str(r.Operator)
	it[attrReason] = str(r.Reason)
	putTime(it, attrResolvedAt, at)
	putTime(it, attrResReplay, r.ReplayUntil)
	putTime(it, attrResExpires, r.ExpiresAt)
}

func putTime(it map[string]types.AttributeValue, name string, t time.Time) {
	if !t.IsZero() {
		it[name] = num(t.UnixMilli())
	}
}

// snapshotAttrs adds snap to it, within max bytes for the whole item. The
// body is compressed with codec when that makes it smaller and it is at
// least compressMin bytes long; for a zero compressMin, when it would take
// it past DefaultCompressAbove bytes as it is (it is the whole item of the
// record). A body that does not fit, or is longer
// than maxDecodedBody (which decodeItem refuses), is left out and the
// snapshot marked omitted; then, if still needed, every header but
// Location, and the snapshot is marked omitted even when it had no body.
// It reports false when even that does not fit.
func snapshotAttrs(it map[string]types.AttributeValue, snap *idemkit.Snapshot, max, compressMin int, codec Codec) bool {
	it[attrStatus] = num(int64(snap.Status))
	if snap.Base64 {
		it[attrBase64] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if h := headerAttr(snap.Header); h != nil {
		it[attrHeader] = h
	}
	omit := func() {
		delete(it, attrBody)
		delete(it, attrBodyEncoding)
		it[attrOmitted] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if snap.Omitted || len(snap.Body) > maxDecodedBody {
		// A body over maxDecodedBody could fit compressed, but would never
		// be decoded: every replay would find the record corrupt.
		omit()
	} else if len(snap.Body) > 0 {
		body := snap.Body
		if compressMin > 0 && len(body) >= compressMin ||
			compressMin == 0 && itemsize.Of(it)+len(attrBody)+len(body) > DefaultCompressAbove {
			if z, ok := compressBody(body, codec); ok {
				body = z
				it[attrBodyEncoding] = str(string(codec))
			}
		}
		it[attrBody] = &types.AttributeValueMemberB{Value: body}
		if itemsize.Of(it) > max {
			omit()
		}
	}
	if itemsize.Of(it) <= max {
		return true
	}
	// Without its headers the response is not stored either, even when it
	// has no body: a replay must not answer the status alone.
	omit()
	if loc := snap.Header.Values("Location"); len(loc) > 0 {
		it[attrHeader] = headerAttr(http.Header{"Location": loc})
	} else {
		delete(it, attrHeader)
	}
	return itemsize.Of(it) <= max
}

// headerAttr returns h as a map of lists of strings, its values
// allocated together, or nil for no header. A value that is not UTF-8
// (HTTP allows bytes 0x80-0xFF) is stored as binary: as a string, the SDK
// would send each such byte as U+FFFD, and the replay would differ.
func headerAttr(h http.Header) types.AttributeValue {
	if len(h) == 0 {
		return nil
	}
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	m := make(map[string]types.AttributeValue, len(h))
	lists := make([]types.AttributeValueMemberL, 0, len(h))
	strs := make([]types.AttributeValueMemberS, n)
	elems := make([]types.AttributeValue, n)
	for k, vs := range h {
		l := elems[:len(vs):len(vs)]
		elems = elems[len(vs):]
		for i, v := range vs {
			if !utf8.ValidString(v) {
				l[i] = &types.AttributeValueMemberB{Value: []byte(v)}
				continue
			}
			strs[i].Value = v
			l[i] = &strs[i]
		}
		strs = strs[len(vs):]
		lists = append(lists, types.AttributeValueMemberL{Value: l})
		m[k] = &lists[len(lists)-1]
	}
	return &types.AttributeValueMemberM{Value: m}
}

// invalid reports whether DynamoDB refused a request as invalid
// (ValidationException: a key or value over one of its limits). Sent again
// it is refused again, so it is idemkit.ErrRecordInvalid, never a
// transient idemkit.ErrStoreUnavailable.
func invalid(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

// corrupt returns an error wrapping idemkit.ErrCorruptRecord.
func corrupt(id, format string, args ...any) error {
	return fmt.Errorf("%w: dynamo item %q: %s", idemkit.ErrCorruptRecord, id, fmt.Sprintf(format, args...))
}

// decoder reads typed attributes of one item, remembering the first error.
type decoder struct {
	it  map[string]types.AttributeValue
	id  string
	ttl string // the TTL attribute; "": attrExpiresAt
	err error
}

// expiresAt decodes the record's ExpiresAt from the TTL attribute, which
// holds it plus KeptPast.
func (d *decoder) expiresAt() time.Time {
	attr := d.ttl
	if attr == "" {
		attr = attrExpiresAt
	}
	if exp, ok := d.int(attr, true); ok {
		return time.Unix(exp-keptPastSec, 0).UTC()
	}
	return time.Time{}
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corrupt(d.id, format, args...)
	}
}

func (d *decoder) str(name string, required bool) string {
	v, ok := d.it[name]
	if !ok {
		if required {
			d.fail("attribute %s missing", name)
		}
		return ""
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		d.fail("attribute %s is %T, want S", name, v)
		return ""
	}
	if !utf8.ValidString(s.Value) {
		d.fail("attribute %s is not UTF-8", name)
	}
	return s.Value
}

func (d *decoder) int(name string, required bool) (int64, bool) {
	v, ok := d.it[name]
	if !ok {
		if required {
			d.fail("attribute %s missing", name)
		}
		return 0, false
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		d.fail("attribute %s is %T, want N", name, v)
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		d.fail("attribute %s: %v", name, err)
		return 0, false
	}
	return i, true
}

func (d *decoder) millis(name string, required bool) time.Time {
	ms, ok := d.int(name, required)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (d *decoder) bool(name string) bool {
	v, ok := d.it[name]
	if !ok {
		return false
	}
	b, ok := v.(*types.AttributeValueMemberBOOL)
	if !ok {
		d.fail("attribute %s is %T, want BOOL", name, v)
		return false
	}
	return b.Value
}

// decodeItem returns the record an item holds. Any missing or mistyped
// attribute, unknown state or undecodable body is an error wrapping
// idemkit.ErrCorruptRecord; no partly decoded record is returned.
func decodeItem(it map[string]types.AttributeValue) (*idemkit.Record, error) {
	d := &decoder{it: it}
	d.id = d.str(attrID, true)
	return d.record()
}

// record decodes the record of d's item, whose ID d.id is.
func (d *decoder) record() (*idemkit.Record, error) {
	it := d.it
	rec := &idemkit.Record{
		ID:          d.id,
		State:       idemkit.State(d.str(attrState, true)),
		Scope:       idemkit.Scope{Tenant: d.str(attrTenant, true), Operation: d.str(attrOperation, false), Key: d.str(attrKey, true)},
		Fingerprint: d.str(attrFingerprint, false),
		Owner:       d.str(attrOwner, true),
		Version:     d.str(attrVersion, false),
		LeaseUntil:  d.millis(attrLeaseUntil, true),
		ReplayUntil: d.millis(attrReplayUntil, false),
		CreatedAt:   d.millis(attrCreatedAt, false),
		CompletedAt: d.millis(attrCompletedAt, false),
		Cause:       idemkit.Cause(d.str(attrCause, false)),
	}
	rec.ExpiresAt = d.expiresAt()
	switch rec.State {
	case idemkit.StateInFlight, idemkit.StateCompleted, idemkit.StateIndeterminate, idemkit.StateFailed, idemkit.StateReleased:
	default:
		d.fail("unknown state %q", rec.State)
	}
	if _, ok := it[attrStatus]; ok || rec.State == idemkit.StateCompleted {
		rec.Snapshot = d.snapshot()
	}
	if _, ok := it[attrResolvedAs]; ok {
		// A completed resolution's answer is the record's Snapshot; the
		// Resolution does not hold it twice.
		r := &idemkit.Resolution{
			As:          idemkit.State(d.str(attrResolvedAs, true)),
			Operator:    d.str(attrOperator, false),
			Reason:      d.str(attrReason, false),
			ResolvedAt:  d.millis(attrResolvedAt, false),
			ReplayUntil: d.millis(attrResReplay, false),
			ExpiresAt:   d.millis(attrResExpires, false),
		}
		if r.As != idemkit.StateCompleted && r.As != idemkit.StateFailed {
			d.fail("unknown resolution %q", r.As)
		}
		rec.Resolution = r
	}
	if d.err != nil {
		return nil, d.err
	}
	return rec, nil
}

func (d *decoder) snapshot() *idemkit.Snapshot {
	status, _ := d.int(attrStatus, true)
	if status < 0 || status > 999 {
		d.fail("status %d out of range", status)
	}
	s := &idemkit.Snapshot{Status: int(status), Base64: d.bool(attrBase64), Omitted: d.bool(attrOmitted)}
	var ok bool
	if s.Header, ok = d.header(); !ok {
		return nil
	}
	if s.Body, ok = d.body(); !ok {
		return nil
	}
	if s.Omitted && len(s.Body) > 0 {
		d.fail("omitted snapshot with a body")
	}
	return s
}

// header decodes the snapshot's header map (nil when absent); ok is false
// when it is malformed.
func (d *decoder) header() (h http.Header, ok bool) {
	v, present := d.it[attrHeader]
	if !present {
		return nil, true
	}
	m, isMap := v.(*types.AttributeValueMemberM)
	if !isMap {
		d.fail("attribute %s is %T, want M", attrHeader, v)
		return nil, false
	}
	h = make(http.Header, len(m.Value))
	for k, v := range m.Value {
		l, isList := v.(*types.AttributeValueMemberL)
		if !isList {
			d.fail("header %q is %T, want L", k, v)
			return nil, false
		}
		vs := make([]string, len(l.Value))
		for i, e := range l.Value {
			switch e := e.(type) {
			case *types.AttributeValueMemberS:
				vs[i] = e.Value
			case *types.AttributeValueMemberB: // a value that is not UTF-8
				vs[i] = string(e.Value)
			default:
				d.fail("header %q value is %T, want S or B", k, e)
				return nil, false
			}
		}
		h[k] = vs
	}
	return h, true
}

// body decodes the snapshot's body (nil when absent), undoing its
// encoding; ok is false when it is malformed.
func (d *decoder) body() (body []byte, ok bool) {
	v, present := d.it[attrBody]
	if !present {
		if _, enc := d.it[attrBodyEncoding]; enc {
			d.fail("body encoding without a body")
		}
		return nil, true
	}
	b, isBin := v.(*types.AttributeValueMemberB)
	if !isBin {
		d.fail("attribute %s is %T, want B", attrBody, v)
		return nil, false
	}
	switch enc := d.str(attrBodyEncoding, false); enc {
	case "":
		return append([]byte(nil), b.Value...), true
	default:
		body, err := decompressBody(b.Value, Codec(enc))
		if err != nil {
			d.fail("body: %v", err)
			return nil, false
		}
		return body, true
	}
}
