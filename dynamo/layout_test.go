package dynamo_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/storetest"
)

// singleTable is a single-table layout: records beside other items,
// under PK "IDEM#<id>" and SK "idem".
var singleTable = dynamo.Options{KeyAttr: "PK", SortKeyAttr: "SK", SortKeyValue: "idem", KeyPrefix: "IDEM#"}

// newSingleTableStore returns a store of opts (keyed as singleTable) on
// a fresh table of that layout.
func newSingleTableStore(t testing.TB, opts dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	opts.KeyAttr, opts.SortKeyAttr, opts.SortKeyValue, opts.KeyPrefix = singleTable.KeyAttr, singleTable.SortKeyAttr, singleTable.SortKeyValue, singleTable.KeyPrefix
	return newLaidOutStore(t, opts)
}

// newLaidOutStore returns a store of opts on a fresh table laid out as
// TableDefinition says for them.
func newLaidOutStore(t testing.TB, opts dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	return storeOnNewTable(t, opts, opts)
}

// The contract holds in a single-table layout too. Kept cheap: the
// layout changes keys and names, not the conditions the bulk and race
// tests of TestConformance exercise.
func TestConformanceSingleTable(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) idemkit.OperatorStore {
		s, _, _ := newSingleTableStore(t, dynamo.Options{IndexInFlight: true})
		return s
	}, conformanceOptions(t, storetest.Options{DistinctKeys: 100, Racers: 10}))
}

func TestSingleTableOptionsRefused(t *testing.T) {
	long := strings.Repeat("p", dynamo.MaxKeyPrefixLen+1)
	for _, tc := range []struct {
		name string
		opts dynamo.Options
		want string
	}{
		{"key attr is a record attribute", dynamo.Options{KeyAttr: dynamo.AttrState}, `Options.KeyAttr "st" is the name of a record attribute`},
		{"sort key attr is an index key", dynamo.Options{SortKeyAttr: dynamo.AttrIndeterminate, SortKeyValue: "x"}, `Options.SortKeyAttr "ix" is the name of a record attribute`},
		{"sort key is the partition key", dynamo.Options{SortKeyAttr: "pk", SortKeyValue: "x"}, "is the partition key attribute too"},
		{"sort key is the named partition key", dynamo.Options{KeyAttr: "PK", SortKeyAttr: "PK", SortKeyValue: "x"}, "is the partition key attribute too"},
		{"sort key without value", dynamo.Options{SortKeyAttr: "SK"}, "without Options.SortKeyValue"},
		{"sort value without key", dynamo.Options{SortKeyValue: "idem"}, "without Options.SortKeyAttr"},
		{"sort value too long", dynamo.Options{SortKeyAttr: "SK", SortKeyValue: strings.Repeat("v", 1025)}, "at most 1024 bytes"},
		{"key attr too long", dynamo.Options{KeyAttr: strings.Repeat("k", 256)}, "at most 255 bytes"},
		{"key attr not UTF-8", dynamo.Options{KeyAttr: "p\xff"}, "UTF-8 name"},
		{"prefix not UTF-8", dynamo.Options{KeyPrefix: "p\xff"}, "not UTF-8"},
		{"prefix too long", dynamo.Options{KeyPrefix: long}, "over DynamoDB's 2048-byte partition key limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dynamo.New(client(t), "idem", tc.opts)
			if !errors.Is(err, idemkit.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrInvalidConfig saying %q", err, tc.want)
			}
			_, err = dynamo.NewRegional(dynamo.Regions{Clients: map[string]dynamo.Client{"us-east-1": client(t)}, Home: func(string) string { return "us-east-1" }}, "idem", tc.opts)
			if !errors.Is(err, idemkit.ErrInvalidConfig) {
				t.Fatalf("NewRegional: %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := dynamo.New(client(t), "idem", dynamo.Options{KeyPrefix: long[1:]}); err != nil {
		t.Errorf("New with a prefix of MaxKeyPrefixLen: %v", err)
	}
}

// A record ID that does not fit DynamoDB's partition key with the prefix
// is refused as invalid before any call, and read as no record.
func TestSingleTableKeyTooLong(t *testing.T) {
	s, _, _ := newSingleTableStore(t, dynamo.Options{})
	now := time.Now()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: strings.Repeat("k", recordid.MaxLen-31)}
	id := sc.ID(false)
	if len(id) > recordid.MaxLen || len(id)+len(singleTable.KeyPrefix) <= recordid.MaxLen {
		t.Fatalf("ID of %d bytes: want one that fits alone but not with the prefix", len(id))
	}
	rec := &idemkit.Record{ID: id, Scope: sc, State: idemkit.StateInFlight, Owner: "o1", Version: "v1", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if _, err := s.Create(t.Context(), rec); !errors.Is(err, idemkit.ErrRecordInvalid) || !strings.Contains(err.Error(), "partition key") {
		t.Fatalf("Create: %v, want ErrRecordInvalid naming the partition key", err)
	}
	if _, err := s.Get(t.Context(), id); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
	tomb := rec.Clone()
	releasedAt(now)(tomb)
	tomb.Version = "v2"
	if _, err := s.Replace(t.Context(), tomb, rec); !errors.Is(err, idemkit.ErrRecordInvalid) || !strings.Contains(err.Error(), "partition key") {
		t.Fatalf("Replace: %v, want ErrRecordInvalid naming the partition key", err)
	}
}

// Items of other types in the table (the same partition key with
// another sort key, another partition key with the same sort key, both
// carrying the index attributes of indeterminate and in_flight records)
// are never read, listed, resolved or overwritten by the writes of claims,
// completions, releases, marks and resolutions of the records beside them,
// nor by listings.
func TestSingleTableForeignItemsUntouched(t *testing.T) {
	s, c, table := newSingleTableStore(t, dynamo.Options{IndexInFlight: true})
	ctx := t.Context()
	now := time.Now()
	const n = 12
	recs := make([]*idemkit.Record, n)
	var foreign []map[string]types.AttributeValue
	for i := range recs {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: fmt.Sprintf("k%d", i)}
		id := sc.ID(false)
		recs[i] = &idemkit.Record{ID: id, Scope: sc, State: idemkit.StateInFlight, Fingerprint: "fp", Owner: fmt.Sprintf("o%d", i),
			LeaseUntil: now.Add(time.Second), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
		lu := &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli() - int64(i))}
		exp := &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(time.Hour).Unix())}
		for _, k := range [][2]string{{"IDEM#" + id, "order"}, {id, "idem"}, {"IDEM#" + id + "x", "IDEM"}} {
			for _, st := range []string{dynamo.IndeterminateValue, dynamo.InFlightValue} {
				it := map[string]types.AttributeValue{"PK": S(k[0]), "SK": S(k[1] + "#" + st), "st": S(st), "ow": S("other"), "tn": S("acme"),
					"ix": S(st), "it": S("acme"), "lu": lu, "exp": exp, "data": S("keep me")}
				if k[1] == "idem" && st == dynamo.InFlightValue {
					it["SK"] = S("idem") // another partition key, the records' own sort key
				}
				foreign = append(foreign, it)
			}
		}
	}
	for _, it := range foreign {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}

	// The storm: claim all; complete a third, release a third and mark
	// the rest unknown; list every listing page by page; resolve what is
	// listed; claim the released keys again and read every record.
	for i, r := range recs {
		recs[i] = create(t, s, r)
	}
	stale := listAll(t, func(page string) ([]*idemkit.Record, string, error) {
		return s.ListStale(ctx, "", page, 2, now.Add(2*time.Second))
	})
	if len(stale) != n {
		t.Fatalf("ListStale listed %d records, want the %d claimed: %v", len(stale), n, stale)
	}
	for i, r := range recs {
		switch i % 3 {
		case 0:
			recs[i] = change(t, s, r, completedAt(now, &idemkit.Snapshot{Status: 201, Body: []byte("ok")}))
		case 1:
			recs[i] = change(t, s, r, releasedAt(now))
		case 2:
			recs[i] = change(t, s, r, markedUnknown(now))
		}
	}
	for _, tenant := range []string{"", "acme"} {
		listed := listAll(t, func(page string) ([]*idemkit.Record, string, error) {
			return s.ListIndeterminate(ctx, tenant, page, 2, now)
		})
		if len(listed) != n/3 {
			t.Fatalf("ListIndeterminate(%q) listed %d records, want %d: %v", tenant, len(listed), n/3, listed)
		}
		for _, r := range listed {
			if r.Owner == "other" || r.State != idemkit.StateIndeterminate {
				t.Fatalf("ListIndeterminate(%q) listed %+v", tenant, r)
			}
		}
	}
	for i, r := range recs {
		switch i % 3 {
		case 1:
			again := r.Clone()
			again.State, again.Owner, again.Version, again.LeaseUntil, again.ExpiresAt = idemkit.StateInFlight, "again", "v-again", now.Add(time.Minute), now.Add(time.Hour)
			met, err := s.Create(ctx, again)
			if err != nil || met == nil || met.State != idemkit.StateReleased {
				t.Fatalf("Create after release: %+v, %v; want met by the tombstone", met, err)
			}
			if met, err := s.Replace(ctx, again, met); err != nil || met != nil {
				t.Fatalf("Replace of the tombstone: %+v, %v", met, err)
			}
		case 2:
			at := now.Add(time.Minute + idemkit.MaxWriteDelay + time.Second)
			if _, _, err := idemkit.Resolve(ctx, s, r.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "op", Reason: "test"}, at); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
		}
		got, err := s.Get(ctx, r.ID)
		if err != nil || got.ID != r.ID || got.Owner == "other" {
			t.Fatalf("Get %s: %+v, %v", r.Scope.Key, got, err)
		}
	}

	for _, want := range foreign {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": want["PK"], "SK": want["SK"]}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out.Item, want) {
			t.Errorf("foreign item %v changed:\n got %v\nwant %v", want["PK"], out.Item, want)
		}
	}
	// The records are where the layout says, and only there.
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(out.Items), len(foreign)+n; got != want {
		t.Errorf("table holds %d items, want %d foreign and %d records", got, len(foreign), n)
	}
	for _, it := range out.Items {
		if _, ok := it[dynamo.AttrID]; ok {
			t.Errorf("item %v has attribute %s", it["PK"], dynamo.AttrID)
		}
	}
}

func listAll(t *testing.T, list func(page string) ([]*idemkit.Record, string, error)) []*idemkit.Record {
	t.Helper()
	var all []*idemkit.Record
	page := ""
	for range 1000 {
		recs, next, err := list(page)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		all = append(all, recs...)
		if next == "" {
			return all
		}
		page = next
	}
	t.Fatal("listing never ended")
	return nil
}

// Check checks the configured layout: a table made by CreateTable
// passes it (but for TTL on dynalite), and a table of the default layout
// is refused, naming the key schema it wants.
func TestCheckSingleTable(t *testing.T) {
	c := client(t)
	name := createdTable(t, c, singleTable)
	s := storeOn(t, c, name, singleTable)
	var mm *dynamo.TableMismatchError
	if err := s.Check(t.Context()); err != nil && !(errors.As(err, &mm) && len(mm.Problems) == 0) {
		t.Fatalf("Check of the single table: %v", err)
	}
	plain := newTable(t, c)
	s = storeOn(t, c, plain, singleTable)
	err := s.Check(t.Context())
	if !errors.As(err, &mm) || !strings.Contains(err.Error(), "key schema is [pk S HASH], want [PK S HASH, SK S RANGE]") {
		t.Fatalf("Check of a plain table: %v, want a key schema mismatch", err)
	}
	plainStore := storeOn(t, c, name, dynamo.Options{})
	if err := plainStore.Check(t.Context()); !errors.As(err, &mm) || !strings.Contains(err.Error(), "want [pk S HASH]") {
		t.Fatalf("Check of the single table by a plain store: %v, want a key schema mismatch", err)
	}
}

// TestNestedPrefixesStayApart: two stores on one table whose key prefixes
// nest (IDEM# and IDEM#EU#, each a prefix of the other's keys or not)
// list, and so resolve, only their own records: an item of the other
// store whose key only starts like theirs is not theirs.
func TestNestedPrefixesStayApart(t *testing.T) {
	c := client(t)
	opts := singleTable
	opts.IndexInFlight = true
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("idem", opts))
	ctx := t.Context()
	now := time.Now()
	stores := map[string]*dynamo.Store{}
	for _, prefix := range []string{"IDEM#", "IDEM#EU#"} {
		o := opts
		o.KeyPrefix = prefix
		s := storeOn(t, c, table, o)
		stores[prefix] = s
		// Each store holds one indeterminate and one stale record of
		// tenant acme, keyed so that the other's key, read under this
		// prefix, could pass for an ID.
		for i, st := range []string{"indeterminate", "stale"} {
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: fmt.Sprintf("%s-%d", prefix, i)}
			rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "fp", Owner: prefix + st,
				LeaseUntil: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour), CreatedAt: now.Add(-time.Minute)})
			if st == "indeterminate" {
				change(t, s, rec, markedUnknown(now))
			}
		}
	}
	for prefix, s := range stores {
		for _, list := range []struct {
			name string
			fn   func() ([]*idemkit.Record, string, error)
		}{
			{"ListIndeterminate", func() ([]*idemkit.Record, string, error) { return s.ListIndeterminate(ctx, "acme", "", 0, now) }},
			{"ListIndeterminate (every tenant)", func() ([]*idemkit.Record, string, error) { return s.ListIndeterminate(ctx, "", "", 0, now) }},
			{"ListStale", func() ([]*idemkit.Record, string, error) { return s.ListStale(ctx, "acme", "", 0, now) }},
		} {
			recs, _, err := list.fn()
			if err != nil {
				t.Fatalf("%s %s: %v", prefix, list.name, err)
			}
			if len(recs) != 1 {
				t.Errorf("%s %s listed %d records, want its own one: %+v", prefix, list.name, len(recs), recs)
			}
			for _, r := range recs {
				if !strings.HasPrefix(r.Owner, prefix) || strings.HasPrefix(r.Owner, prefix+"EU#") {
					t.Errorf("%s %s listed %q of owner %s: another store's record", prefix, list.name, r.ID, r.Owner)
				}
			}
		}
	}
}
