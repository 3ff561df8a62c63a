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
)

// Attribute names of a record item. They are short because names count
// toward the item size and so toward capacity units.
const (
	AttrID           = "pk"  // S  record ID (idemkit.Record.ID); the partition key
	AttrState        = "st"  // S  in_flight, completed, indeterminate or failed
	AttrTenant       = "tn"  // S  Scope.Tenant
	AttrOperation    = "op"  // S  Scope.Operation
	AttrKey          = "ik"  // S  Scope.Key
	AttrFingerprint  = "fp"  // S  fingerprint of the first request
	AttrOwner        = "ow"  // S  owner token (the fencing token)
	AttrLeaseUntil   = "lu"  // N  epoch milliseconds, rounded up
	AttrReplayUntil  = "ru"  // N  epoch milliseconds
	AttrExpiresAt    = "exp" // N  epoch seconds, rounded up: the table's TTL attribute
	AttrCreatedAt    = "ca"  // N  epoch milliseconds
	AttrCompletedAt  = "da"  // N  epoch milliseconds
	AttrStatus       = "sc"  // N  snapshot status code
	AttrHeader       = "sh"  // M  snapshot header: canonical name -> L of S (B for a value that is not UTF-8)
	AttrBody         = "sb"  // B  snapshot body, encoded as AttrBodyEncoding says
	AttrBodyEncoding = "se"  // S  the Codec: "zstd" or "s2"; absent: the body is stored as is
	AttrBase64       = "s64" // BOOL snapshot IsBase64Encoded flag; absent: false
	AttrOmitted      = "som" // BOOL snapshot body too large to store; absent: false
	AttrResolvedAs   = "ra"  // S  resolution: completed or failed
	AttrOperator     = "ro"  // S  resolution operator
	AttrReason       = "rr"  // S  resolution reason
	AttrResolvedAt   = "rt"  // N  resolution time, epoch milliseconds
	AttrMark         = "mk"  // S  a random token of the last mark or resolution
	AttrReleased     = "rl"  // SS a tombstone's released owners (at most idemkit.MaxReleasedOwners)

	// AttrIndeterminate is the hash key of IndexIndeterminate. It is set to
	// IndeterminateValue while a record is indeterminate and, when the
	// store has Options.IndexInFlight, to InFlightValue while it is in
	// flight; otherwise it is absent.
	AttrIndeterminate = "ix" // S
	// AttrIndeterminateTenant is the hash key of IndexIndeterminateTenant.
	// It is set (to the tenant) only while a record is indeterminate.
	AttrIndeterminateTenant = "it" // S
)

// The values of AttrIndeterminate.
const (
	IndeterminateValue = "indeterminate"
	InFlightValue      = "in_flight"
)

// Global secondary indexes. Both are sparse (only indeterminate records
// carry their hash keys, and in_flight ones carry AttrIndeterminate under
// Options.IndexInFlight), ordered by AttrLeaseUntil, and project ALL.
const (
	// IndexIndeterminate lists all indeterminate records, and in_flight
	// ones under Options.IndexInFlight: hash AttrIndeterminate, range
	// AttrLeaseUntil.
	IndexIndeterminate = "ix-lease"
	// IndexIndeterminateTenant lists one tenant's indeterminate records:
	// hash AttrIndeterminateTenant, range AttrLeaseUntil.
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

// ceilSec returns t in epoch seconds, rounded up.
func ceilSec(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// baseItem returns the attributes of rec other than its snapshot.
// The map is made with room for every attribute the item can get (its
// snapshot's too): filled past its size hint, a map grows and rehashes.
//
// Its string and number values are allocated together (one block of
// strings, one of numbers and one string of all their digits), not one
// by one: an item has about twenty, and a fresh request builds two items.
func baseItem(rec *idemkit.Record) map[string]types.AttributeValue {
	n := 12 // the attributes below, the three times and the index keys
	if rec.Resolution != nil {
		n += 4
	}
	if rec.Snapshot != nil {
		n += 6
	}
	it := make(map[string]types.AttributeValue, n)
	strs := [...]struct{ name, v string }{
		{AttrID, rec.ID}, {AttrState, string(rec.State)}, {AttrTenant, rec.Scope.Tenant},
		{AttrOperation, rec.Scope.Operation}, {AttrKey, rec.Scope.Key},
		{AttrFingerprint, rec.Fingerprint}, {AttrOwner, rec.Owner},
	}
	ss := new([len(strs)]types.AttributeValueMemberS)
	for i, a := range strs {
		ss[i].Value = a.v
		it[a.name] = &ss[i]
	}
	var nums numbers
	nums.add(AttrLeaseUntil, ceilMilli(rec.LeaseUntil))
	nums.add(AttrExpiresAt, ceilSec(rec.ExpiresAt))
	nums.time(AttrReplayUntil, rec.ReplayUntil)
	nums.time(AttrCreatedAt, rec.CreatedAt)
	nums.time(AttrCompletedAt, rec.CompletedAt)
	nums.put(it)
	if rec.State == idemkit.StateIndeterminate {
		it[AttrIndeterminate] = str(IndeterminateValue)
		it[AttrIndeterminateTenant] = str(rec.Scope.Tenant)
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
	it[AttrResolvedAs] = str(string(r.As))
	it[AttrOperator] = str(r.Operator)
	it[AttrReason] = str(r.Reason)
	putTime(it, AttrResolvedAt, at)
}

func putTime(it map[string]types.AttributeValue, name string, t time.Time) {
	if !t.IsZero() {
		it[name] = num(t.UnixMilli())
	}
}

// snapshotAttrs adds snap to it, within max bytes for the whole item. The
// body is compressed with codec when that makes it smaller and it is at
// least compressMin bytes long; for a zero compressMin, when it would take
// it past DefaultCompressAbove bytes as it is. (For a completion it is the
// whole item; for a resolution only the attributes it sets, so there a
// body just over the line may be stored as is.) A body that does not fit, or is longer
// than maxDecodedBody (which decodeItem refuses), is left out and the
// snapshot marked omitted; then, if still needed, every header but
// Location, and the snapshot is marked omitted even when it had no body.
// It reports false when even that does not fit.
func snapshotAttrs(it map[string]types.AttributeValue, snap *idemkit.Snapshot, max, compressMin int, codec Codec) bool {
	it[AttrStatus] = num(int64(snap.Status))
	if snap.Base64 {
		it[AttrBase64] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if h := headerAttr(snap.Header); h != nil {
		it[AttrHeader] = h
	}
	omit := func() {
		delete(it, AttrBody)
		delete(it, AttrBodyEncoding)
		it[AttrOmitted] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if snap.Omitted || len(snap.Body) > maxDecodedBody {
		// A body over maxDecodedBody could fit compressed, but would never
		// be decoded: every replay would find the record corrupt.
		omit()
	} else if len(snap.Body) > 0 {
		body := snap.Body
		if compressMin > 0 && len(body) >= compressMin ||
			compressMin == 0 && itemSize(it)+len(AttrBody)+len(body) > DefaultCompressAbove {
			if z, ok := compressBody(body, codec); ok {
				body = z
				it[AttrBodyEncoding] = str(string(codec))
			}
		}
		it[AttrBody] = &types.AttributeValueMemberB{Value: body}
		if itemSize(it) > max {
			omit()
		}
	}
	if itemSize(it) <= max {
		return true
	}
	// Without its headers the response is not stored either, even when it
	// has no body: a replay must not answer the status alone.
	omit()
	if loc := snap.Header.Values("Location"); len(loc) > 0 {
		it[AttrHeader] = headerAttr(http.Header{"Location": loc})
	} else {
		delete(it, AttrHeader)
	}
	return itemSize(it) <= max
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

// itemSize returns the size of an item as DynamoDB counts it, rounded up
// where DynamoDB documents only an approximation (numbers).
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is one byte per two significant digits plus one, plus one
// for a sign and one for an odd exponent alignment: an upper bound of
// DynamoDB's approximate rule.
func numberSize(s string) int {
	digits := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			digits++
		}
	}
	return 2 + (digits+1)/2 + 1
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
	err error
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
	d.id = d.str(AttrID, true)
	return d.record()
}

// record decodes the record of d's item, whose ID d.id is.
func (d *decoder) record() (*idemkit.Record, error) {
	it := d.it
	rec := &idemkit.Record{
		ID:          d.id,
		State:       idemkit.State(d.str(AttrState, true)),
		Scope:       idemkit.Scope{Tenant: d.str(AttrTenant, true), Operation: d.str(AttrOperation, false), Key: d.str(AttrKey, true)},
		Fingerprint: d.str(AttrFingerprint, false),
		Owner:       d.str(AttrOwner, true),
		LeaseUntil:  d.millis(AttrLeaseUntil, true),
		ReplayUntil: d.millis(AttrReplayUntil, false),
		CreatedAt:   d.millis(AttrCreatedAt, false),
		CompletedAt: d.millis(AttrCompletedAt, false),
	}
	if exp, ok := d.int(AttrExpiresAt, true); ok {
		rec.ExpiresAt = time.Unix(exp, 0).UTC()
	}
	switch rec.State {
	case idemkit.StateInFlight, idemkit.StateCompleted, idemkit.StateIndeterminate, idemkit.StateFailed:
	default:
		d.fail("unknown state %q", rec.State)
	}
	if _, ok := it[AttrStatus]; ok || rec.State == idemkit.StateCompleted {
		rec.Snapshot = d.snapshot()
	}
	if _, ok := it[AttrResolvedAs]; ok {
		r := &idemkit.Resolution{
			As:         idemkit.State(d.str(AttrResolvedAs, true)),
			Operator:   d.str(AttrOperator, false),
			Reason:     d.str(AttrReason, false),
			ResolvedAt: d.millis(AttrResolvedAt, false),
		}
		if r.As != idemkit.StateCompleted && r.As != idemkit.StateFailed {
			d.fail("unknown resolution %q", r.As)
		}
		if r.As == idemkit.StateCompleted {
			r.Snapshot = rec.Snapshot.Clone()
		}
		rec.Resolution = r
	}
	if d.err != nil {
		return nil, d.err
	}
	return rec, nil
}

func (d *decoder) snapshot() *idemkit.Snapshot {
	status, _ := d.int(AttrStatus, true)
	if status < 0 || status > 999 {
		d.fail("status %d out of range", status)
	}
	s := &idemkit.Snapshot{Status: int(status), Base64: d.bool(AttrBase64), Omitted: d.bool(AttrOmitted)}
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
	v, present := d.it[AttrHeader]
	if !present {
		return nil, true
	}
	m, isMap := v.(*types.AttributeValueMemberM)
	if !isMap {
		d.fail("attribute %s is %T, want M", AttrHeader, v)
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
	v, present := d.it[AttrBody]
	if !present {
		if _, enc := d.it[AttrBodyEncoding]; enc {
			d.fail("body encoding without a body")
		}
		return nil, true
	}
	b, isBin := v.(*types.AttributeValueMemberB)
	if !isBin {
		d.fail("attribute %s is %T, want B", AttrBody, v)
		return nil, false
	}
	switch enc := d.str(AttrBodyEncoding, false); enc {
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
