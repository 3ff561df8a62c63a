package bench

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
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
type Meter struct {
	*dynamodb.Client
	Table string // the table the refused items are read from

	mu    sync.Mutex
	units Units
	// refused are the keys of refused writes whose item did not come
	// with the refusal, to be read by Settle.
	refused []map[string]types.AttributeValue
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
		out, err := m.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(m.Table), Key: k, ConsistentRead: aws.Bool(true)})
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

// counted returns optFns with an option that counts the call's request
// body: its length once the SDK has serialized and signed it.
func (m *Meter) counted(optFns []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	return append(optFns, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("idembenchRequestBytes",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					if r, ok := in.Request.(*smithyhttp.Request); ok {
						if n, ok, err := r.StreamLength(); err == nil && ok {
							m.mu.Lock()
							m.units.Bytes += int(n)
							m.mu.Unlock()
						}
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	})
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

func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	m.call()
	out, err := m.Client.PutItem(ctx, in, m.counted(optFns)...)
	if err != nil {
		m.refusedWrite(err, keyOf(in.Item))
		return out, err
	}
	m.consumed(out.ConsumedCapacity, true)
	return out, nil
}

func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	m.call()
	out, err := m.Client.UpdateItem(ctx, in, m.counted(optFns)...)
	if err != nil {
		m.refusedWrite(err, in.Key)
		return out, err
	}
	m.consumed(out.ConsumedCapacity, true)
	return out, nil
}

func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.call()
	out, err := m.Client.GetItem(ctx, in, m.counted(optFns)...)
	if err == nil {
		m.consumed(out.ConsumedCapacity, false)
	}
	return out, err
}

func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	m.call()
	out, err := m.Client.Query(ctx, in, m.counted(optFns)...)
	if err == nil {
		m.consumed(out.ConsumedCapacity, false)
	}
	return out, err
}
