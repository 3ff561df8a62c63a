package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// The contexts of the calls a two-region world's store makes. A process's
// call (a request's, in its context, or an operator's) comes from the
// region of its instance and crosses the network: it fails when its
// region or the one it calls is cut off. The checks' reads (any other
// context) read the data, never cut off: by default the region the call
// is routed to, or the region a view names.
type (
	opKey   struct{}
	viewKey struct{}
)

// latestView reads each item from the region holding its latest write.
const latestView = "latest"

// operatorCtx returns the context of an operator's calls on inst.
func (w *World) operatorCtx(inst *instance) context.Context {
	if w.reg == nil {
		return context.Background()
	}
	return context.WithValue(context.Background(), opKey{}, inst)
}

// listedCtx returns the context that reads what an operator on inst
// lists: its region's table, which a listing across tenants reads.
func (w *World) listedCtx(inst *instance) context.Context {
	if w.reg == nil {
		return context.Background()
	}
	return viewCtx(regionOf(inst))
}

// latestCtx returns the context that reads every record as it is where
// its latest write is: the records as replication will leave them.
func (w *World) latestCtx() context.Context {
	if w.reg == nil {
		return context.Background()
	}
	return viewCtx(latestView)
}

func viewCtx(view string) context.Context {
	return context.WithValue(context.Background(), viewKey{}, view)
}

// regionOf returns the region of an instance: they alternate.
func regionOf(inst *instance) string { return regionNames[inst.n%2] }

// errCut is a call that cannot reach its region.
var errCut = errors.New("sim: region unreachable")

// regionClient is the dynamo.Client of one region (or, local, of the
// caller's own) in a two-region world: the network between a process and
// the region's server, and the replication's record of every write.
type regionClient struct {
	g    *regions
	name string
}

var _ dynamo.Client = (*regionClient)(nil)

// call is where one call goes: the region, and the request it is for
// (nil: an operator's, or a check's read when view).
type call struct {
	region string
	r      *request
	view   bool
}

func (c *regionClient) route(ctx context.Context) (call, error) {
	if v, ok := ctx.Value(viewKey{}).(string); ok {
		return call{region: v, view: true}, nil
	}
	from := ""
	r := reqOf(ctx)
	switch inst, _ := ctx.Value(opKey{}).(*instance); {
	case r != nil:
		from = regionOf(c.g.w.insts[r.inst])
	case inst != nil:
		from = regionOf(inst)
	default:
		// A check's read: the data where the call is routed.
		to := c.name
		if to == local {
			to = east
		}
		return call{region: to, view: true}, nil
	}
	to := c.name
	if to == local {
		to = from
	}
	if c.g.unreachable(from, to) {
		if r != nil {
			c.g.mu.Lock()
			c.g.factsOf(r).cut = true
			c.g.mu.Unlock()
		}
		return call{}, fmt.Errorf("%w: %s from %s", errCut, to, from)
	}
	return call{region: to, r: r}, nil
}

// server returns the client of the server a call reads: for the latest
// view, the region holding the latest write of id.
func (c *regionClient) server(cl call, id string) dynamo.Client {
	if cl.region != latestView {
		return c.g.raw[cl.region]
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	e, w := c.g.items[east][id], c.g.items[west][id]
	if w != nil && (e == nil || w.seq > e.seq) {
		return c.g.raw[west]
	}
	return c.g.raw[east]
}

func (c *regionClient) failed(cl call, err error) {
	var cf *types.ConditionalCheckFailedException
	if cl.r == nil || err == nil || errors.As(err, &cf) {
		return
	}
	c.g.mu.Lock()
	c.g.factsOf(cl.r).failed = true
	c.g.mu.Unlock()
}

func (c *regionClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cl, err := c.route(ctx)
	if err != nil {
		return nil, err
	}
	id := attrS(in.Item, attrID)
	srv := c.server(cl, id)
	if cl.view {
		return srv.PutItem(ctx, in, optFns...)
	}
	out, err := srv.PutItem(ctx, in, optFns...)
	c.failed(cl, err)
	if err != nil {
		return out, err
	}
	c.g.wrote(cl.region, id, in.Item)
	return out, nil
}

func (c *regionClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cl, err := c.route(ctx)
	if err != nil {
		return nil, err
	}
	id := attrS(in.Key, attrID)
	srv := c.server(cl, id)
	out, err := srv.UpdateItem(ctx, in, optFns...)
	c.failed(cl, err)
	if err != nil || cl.view {
		return out, err
	}
	// The item as the update left it, for the replication's record.
	item, gerr := rawGet(ctx, srv, c.g.w, id)
	if gerr != nil {
		c.g.mu.Lock()
		if c.g.err == nil {
			c.g.err = fmt.Errorf("sim: reading %s back in %s: %w", id, cl.region, gerr)
		}
		c.g.mu.Unlock()
	}
	c.g.wrote(cl.region, id, item)
	return out, nil
}

func (c *regionClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	cl, err := c.route(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.server(cl, attrS(in.Key, attrID)).GetItem(ctx, in, optFns...)
	c.failed(cl, err)
	return out, err
}

func (c *regionClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	cl, err := c.route(ctx)
	if err != nil {
		return nil, err
	}
	if cl.region == latestView {
		cl.region = east
	}
	out, err := c.g.raw[cl.region].Query(ctx, in, optFns...)
	c.failed(cl, err)
	return out, err
}

// wrote records a write a process made in region: the item it left
// (nil: unknown) gets the next version.
func (g *regions) wrote(region, id string, item map[string]types.AttributeValue) {
	now := g.w.tl.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	v := &version{seq: g.seq, at: now, region: region, vc: map[string]uint64{}, base: map[string]uint64{}}
	if prev := g.items[region][id]; prev != nil {
		v.base = prev.vc
		for r, n := range prev.vc {
			v.vc[r] = n
		}
	}
	v.vc[region] = g.seq
	g.items[region][id] = v
	g.pending[region][id] = true
	if attrS(item, attrState) == string(idemkit.StateCompleted) {
		exp, _ := strconv.ParseInt(attrN(item, attrExpiresAt), 10, 64)
		exp -= int64(dynamo.KeptPast / time.Second) // the record's ExpiresAt
		g.completions[id] = append(g.completions[id], completion{owner: attrS(item, attrOwner), region: region, exp: exp, at: now})
	}
}

// rawGet reads an item from a server, consistently (nil: none).
func rawGet(ctx context.Context, srv dynamo.Client, w *World, id string) (map[string]types.AttributeValue, error) {
	out, err := srv.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: aws.String(w.reg.table),
		Key: map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// rawPut writes an item to a server as it is: a replica's write.
func rawPut(ctx context.Context, srv dynamo.Client, w *World, item map[string]types.AttributeValue) error {
	_, err := srv.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.reg.table), Item: item})
	return err
}

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func describeItem(item map[string]types.AttributeValue) string {
	if len(item) == 0 {
		return "no item"
	}
	return fmt.Sprintf("a %s item of owner %s", attrS(item, attrState), attrS(item, attrOwner))
}

// The attributes of the DynamoDB store's items that replication reads
// (the item layout package dynamo documents).
const (
	attrID        = dynamo.DefaultKeyAttr
	attrState     = "st"
	attrOwner     = "ow"
	attrExpiresAt = dynamo.TTLAttr
)
