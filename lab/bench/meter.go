package bench

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemkit/idemkit/internal/itemsize"
)

// Meter is a DynamoDB client that counts the request units of the calls
// made through it from what the server answers, not from what the store
// reports: the ConsumedCapacity of each answer, and for a conditional
// write the server refused (whose error carries no capacity), the size
// of the item that refused it, which is how DynamoDB bills a refusal
// (its size in KB, at least one unit). The item comes with the refusal
// where the server returns it; elsewhere Settle reads it afterwards.
// The item operations (PutItem, UpdateItem, DeleteItem, GetItem, Query)
// are counted; others (a DescribeTable) are not.
type Meter struct {
	*dynamodb.Client // the metered client
	table            string
	raw              *dynamodb.Client // reads the refused items, uncounted

	mu    sync.Mutex
	units Units
	// refused are the keys of refused writes whose item did not come
	// with the refusal, to be read by Settle.
	refused []map[string]types.AttributeValue
}

// NewMeter returns a Meter of client's options, whose refused writes are
// of items of table.
func NewMeter(client *dynamodb.Client, table string) *Meter {
	m := &Meter{table: table, raw: client}
	m.Client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, m.count)
	})
	return m
}

// Units are request units and calls.
type Units struct {
	Read, Write float64
	Calls       int
	// Bytes are the request bodies sent, as the SDK serialized them for
	// the wire: what the calls cost in transfer and in the server's
	// parsing.
	Bytes int
	// Unreported counts the answers that carried no consumed capacity:
	// where it is not zero the units are short of the bill.
	Unreported int
}

// Take returns the units counted since the last Take, with the refused
// items read (Settle), and starts again.
func (m *Meter) Take(ctx context.Context) (Units, error) {
	if err := m.Settle(ctx); err != nil {
		return Units{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.units
	m.units = Units{}
	return u, nil
}

// Settle reads the items of the refused writes the server did not return
// with the refusal, with consistent reads that are not counted, and
// counts each refusal by its item's size.
func (m *Meter) Settle(ctx context.Context) error {
	m.mu.Lock()
	keys := m.refused
	m.refused = nil
	m.mu.Unlock()
	for _, k := range keys {
		out, err := m.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(m.table), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		m.add(0, itemsize.WriteUnits(itemsize.Of(out.Item)), false)
	}
	return nil
}

func (m *Meter) add(r, w float64, unreported bool) {
	m.mu.Lock()
	m.units.Read += r
	m.units.Write += w
	if unreported {
		m.units.Unreported++
	}
	m.mu.Unlock()
}

func (m *Meter) call() {
	m.mu.Lock()
	m.units.Calls++
	m.mu.Unlock()
}

// count adds to a client's stack the middleware that counts each call:
// its capacity from the answer (or a refused write's item), and its
// request body, once the SDK has serialized and signed it, on each send.
func (m *Meter) count(stack *middleware.Stack) error {
	err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idembenchUnits",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if !itemOps[awsmiddleware.GetOperationName(ctx)] {
				return next.HandleInitialize(ctx, in)
			}
			var key map[string]types.AttributeValue // set for a write
			switch p := in.Parameters.(type) {
			case *dynamodb.PutItemInput:
				key = keyOf(p.Item)
			case *dynamodb.UpdateItemInput:
				key = p.Key
			case *dynamodb.DeleteItemInput:
				key = p.Key
			}
			m.call()
			out, md, err := next.HandleInitialize(ctx, in)
			switch {
			case err != nil && key != nil:
				m.refusedWrite(err, key)
			case err == nil:
				m.consumed(capacityOf(out.Result), key != nil)
			}
			return out, md, err
		}), middleware.After)
	if err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("idembenchRequestBytes",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if !itemOps[awsmiddleware.GetOperationName(ctx)] {
				return next.HandleFinalize(ctx, in)
			}
			if r, ok := in.Request.(*smithyhttp.Request); ok {
				if n, ok, err := r.StreamLength(); err == nil && ok {
					m.mu.Lock()
					m.units.Bytes += int(n)
					m.mu.Unlock()
				}
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// itemOps are the operations a Meter counts.
var itemOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "GetItem": true, "Query": true}

// capacityOf returns the consumed capacity an operation's output reports.
func capacityOf(out any) *types.ConsumedCapacity {
	switch o := out.(type) {
	case *dynamodb.PutItemOutput:
		return o.ConsumedCapacity
	case *dynamodb.UpdateItemOutput:
		return o.ConsumedCapacity
	case *dynamodb.GetItemOutput:
		return o.ConsumedCapacity
	case *dynamodb.QueryOutput:
		return o.ConsumedCapacity
	case *dynamodb.DeleteItemOutput:
		return o.ConsumedCapacity
	}
	return nil
}

// consumed counts an answer's capacity, as read or write units.
func (m *Meter) consumed(cc *types.ConsumedCapacity, write bool) {
	if cc == nil {
		m.add(0, 0, true)
		return
	}
	u := aws.ToFloat64(cc.CapacityUnits)
	if u == 0 && cc.ReadCapacityUnits == nil && cc.WriteCapacityUnits == nil {
		m.add(0, 0, true)
		return
	}
	if write {
		m.add(0, u, false)
	} else {
		m.add(u, 0, false)
	}
}

// refusedWrite counts a write the server refused on its condition, by
// the item returned with the refusal, or later by Settle from key; any
// other error is returned as it is.
func (m *Meter) refusedWrite(err error, key map[string]types.AttributeValue) {
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		return
	}
	if len(cf.Item) > 0 {
		m.add(0, itemsize.WriteUnits(itemsize.Of(cf.Item)), false)
		return
	}
	m.mu.Lock()
	m.refused = append(m.refused, key)
	m.mu.Unlock()
}

// keyOf returns the table key of item: its pk (the layout the bench's
// tables use).
func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": item["pk"]}
}
