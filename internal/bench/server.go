package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReturnsItemOnConditionFailure reports whether the server behind client
// returns the item with a failed conditional write when asked to
// (ReturnValuesOnConditionCheckFailure ALL_OLD), as DynamoDB does: then a
// replay or a conflict is one call instead of two.
func ReturnsItemOnConditionFailure(ctx context.Context, client *dynamodb.Client, table string) (bool, error) {
	pk := &types.AttributeValueMemberS{Value: fmt.Sprintf("probe-%d", time.Now().UnixNano())}
	item := map[string]types.AttributeValue{"pk": pk, "st": &types.AttributeValueMemberS{Value: "completed"}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		return false, err
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		return false, fmt.Errorf("probe: conditional PutItem of an existing key: %v, want a condition failure", err)
	}
	_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": pk}})
	return len(cf.Item) > 0, err
}

// Moto is a moto_server process serving DynamoDB on a loopback port.
type Moto struct {
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

// StartMoto starts moto_server (from PATH) on a free loopback port and
// waits until it answers, at most 30 s.
func StartMoto(ctx context.Context) (*Moto, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &Moto{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(m.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(m.Endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return m, nil
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("moto_server exited before it answered: %v", cmd.ProcessState)
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("moto_server on %s: no answer in 30 s: %v", m.Endpoint, err)
		}
	}
}

// Stop ends the process and waits for it.
func (m *Moto) Stop() {
	m.cmd.Process.Kill()
	<-m.done
}

// MotoVersion returns moto's version, or "" when it cannot be read.
func MotoVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "python3", "-c", "import moto; print(moto.__version__)").Output()
	if err != nil {
		return ""
	}
	return string(trimSpace(out))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
