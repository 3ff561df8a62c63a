package samlocal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/samlocal"
)

// intrinsics is a template whose function's variable X is each case's
// value: its parameters, conditions and resources are what the values
// refer to.
const intrinsics = `Parameters:
  Stage: {Type: String, Default: prod}
  Names: {Type: CommaDelimitedList, Default: "a, b,c"}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Equals [!Ref Stage, dev]
  NotDev: !Not [!Condition IsDev]
  Both: !And [!Condition IsProd, !Condition NotDev]
  Either: !Or [!Condition IsDev, !Condition IsProd]
  Neither: !Or [!Condition IsDev, !Not [!Condition IsProd]]
  Broken: !Equals [one]
  Unknown: {Fn::Nope: [a]}
Resources:
  Queue: {Type: AWS::SQS::Queue}
  Topic: {Type: AWS::SNS::Topic}
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: t1
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Runtime: provided.al2023
      Environment:
        Variables:
          X: `

// TestIntrinsics: each intrinsic function, short form and scalar resolves
// to its local value, in the us-east-1 stack "local"; one that cannot is
// refused with the reason.
func TestIntrinsics(t *testing.T) {
	const arn = ":us-east-1:123456789012:"
	for _, tc := range []struct {
		value, want string
		err         bool // want: what the error says
	}{
		// Scalars: CloudFormation's numbers are strings.
		{value: "42", want: "42"},
		{value: "1.50", want: "1.50"},
		{value: "true", want: "true"},
		{value: "~", want: ""},
		{value: `!Join ["-", [&word hi, *word]]`, want: "hi-hi"},
		// Ref: parameters, pseudo parameters, resources.
		{value: "!Ref Stage", want: "prod"},
		{value: `!Join ["|", !Ref Names]`, want: "a|b|c"},
		{value: "!Ref AWS::Region", want: "us-east-1"},
		{value: "!Ref AWS::AccountId", want: samlocal.AccountID},
		{value: "!Ref AWS::StackName", want: "local"},
		{value: "!Ref AWS::StackId", want: "arn:aws:cloudformation" + arn + "stack/local/local"},
		{value: "!Ref AWS::Partition", want: "aws"},
		{value: "!Ref AWS::URLSuffix", want: "amazonaws.com"},
		{value: `!Join [",", [a, !Ref AWS::NoValue, b]]`, want: "a,b"},
		{value: "!Ref Table", want: "t1"},
		{value: "!Ref Queue", want: ""},
		{value: "!Ref Topic", want: "Topic"},
		{value: "!Ref Nope", want: "Ref Nope: no such parameter or resource", err: true},
		// Fn::GetAtt, short and long forms.
		{value: "!GetAtt Queue.QueueUrl", want: ""},
		{value: "!GetAtt Queue.QueueName", want: "Queue"},
		{value: "!GetAtt Queue.Arn", want: "arn:aws:sqs" + arn + "Queue"},
		{value: "!GetAtt Table.Arn", want: "arn:aws:dynamodb" + arn + "table/t1"},
		{value: "!GetAtt [Table, StreamArn]", want: "arn:aws:dynamodb" + arn + "table/t1/stream/local"},
		{value: "{Fn::GetAtt: [Fn, Arn]}", want: "arn:aws:lambda" + arn + "function:Fn"},
		{value: "!GetAtt Topic.Arn", want: "arn:aws:sns" + arn + "Topic"},
		{value: "!GetAtt Topic.TopicName", want: "Topic"},
		{value: "!GetAtt Nope.Arn", want: "GetAtt Nope.Arn: no such resource", err: true},
		{value: "!GetAtt [Table]", want: "want [resource, attribute]", err: true},
		// Fn::Sub: names, attributes, lists, variables, literals.
		{value: `!Sub "${Stage}-${Table}-${Queue.QueueName}-${!Literal}"`, want: "prod-t1-Queue-${Literal}"},
		{value: `!Sub "${Names}"`, want: "a,b,c"},
		{value: `!Sub ["${A}-${Stage}", {A: !Ref Table, Stage: dev}]`, want: "t1-dev"},
		{value: `!Sub "${Stage"`, want: "unclosed ${", err: true},
		{value: "!Sub [a]", want: "Fn::Sub", err: true},
		// Fn::Join, Fn::Select, Fn::Split.
		{value: `!Join [","]`, want: "Fn::Join", err: true},
		{value: "!Select [1, !Ref Names]", want: "b"},
		{value: "!Select [3, !Ref Names]", want: "index out of range", err: true},
		{value: `!Select [2, !Split ["/", x/y/z]]`, want: "z"},
		{value: `!Split ["/"]`, want: "Fn::Split", err: true},
		// Conditions: Fn::If and the conditions as values.
		{value: "!If [IsProd, yes, no]", want: "yes"},
		{value: "!If [IsDev, yes, no]", want: "no"},
		{value: "!If [Both, yes, no]", want: "yes"},
		{value: "!If [Either, yes, no]", want: "yes"},
		{value: "!If [Neither, yes, no]", want: "no"},
		{value: "!If [IsProd, yes]", want: "Fn::If", err: true},
		{value: "!If [Nope, yes, no]", want: "no condition Nope", err: true},
		{value: "!If [Broken, yes, no]", want: "Fn::Equals", err: true},
		{value: "!If [Unknown, yes, no]", want: "condition", err: true},
		{value: "!Equals [a, a]", want: "true"},
		{value: "!Not [!Equals [a, b]]", want: "true"},
		{value: "!Not [!Equals [a, b], !Equals [a, b]]", want: "false"},
		{value: "!And [!Equals [a, a], !Equals [a, b]]", want: "false"},
		{value: "!Or [!Equals [a, a], !Equals [a, b]]", want: "true"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			p, err := newPlan(intrinsics+tc.value+"\n", samlocal.PlanConfig{})
			if tc.err {
				if !errors.Is(err, samlocal.ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want ErrTemplate saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Function("Fn").Env["X"]; got != tc.want {
				t.Fatalf("X=%q, want %q", got, tc.want)
			}
		})
	}
}

// newPlan parses a template's text and resolves it.
func newPlan(text string, cfg samlocal.PlanConfig) (*samlocal.Plan, error) {
	tpl, err := samlocal.ParseTemplate([]byte(text))
	if err != nil {
		return nil, err
	}
	return samlocal.NewPlan(tpl, cfg)
}
