package samlocal

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestOverGlobals: a resource's properties over the Globals', as SAM lays
// them: the resource's primitive replaces the Globals', mappings merge
// key by key at every depth, lists are the Globals' members then the
// resource's, and an intrinsic function is a value, never a mapping to
// merge. Neither side is changed.
func TestOverGlobals(t *testing.T) {
	for _, tc := range []struct {
		name, globals, own, want string
	}{
		{"primitives: the resource's replace", `{"Runtime": "go1.x", "Timeout": 3, "Tracing": true}`, `{"Runtime": "provided.al2023", "Timeout": 9, "Tracing": false}`,
			`{"Runtime": "provided.al2023", "Timeout": 9, "Tracing": false}`},
		{"a key only in Globals", `{"Timeout": 3, "MemorySize": 256}`, `{"Timeout": 9}`, `{"Timeout": 9, "MemorySize": 256}`},
		{"a key only in the resource", `{"Timeout": 3}`, `{"Handler": "bootstrap"}`, `{"Timeout": 3, "Handler": "bootstrap"}`},
		{"no Globals", `null`, `{"Timeout": 9}`, `{"Timeout": 9}`},
		{"no properties", `{"Timeout": 3}`, `null`, `{"Timeout": 3}`},
		{"null replaces", `{"Timeout": 3}`, `{"Timeout": null}`, `{"Timeout": null}`},
		{"mappings merged", `{"Tags": {"team": "pay", "env": "dev"}}`, `{"Tags": {"env": "prod", "svc": "orders"}}`,
			`{"Tags": {"team": "pay", "env": "prod", "svc": "orders"}}`},
		{"nested mappings merged", `{"Auth": {"DefaultAuthorizer": "J", "Authorizers": {"J": {"JwtConfiguration": {"issuer": "i", "audience": ["a"]}}}}}`,
			`{"Auth": {"Authorizers": {"J": {"JwtConfiguration": {"issuer": "i2"}}, "K": {"JwtConfiguration": {"issuer": "k"}}}}}`,
			`{"Auth": {"DefaultAuthorizer": "J", "Authorizers": {"J": {"JwtConfiguration": {"issuer": "i2", "audience": ["a"]}}, "K": {"JwtConfiguration": {"issuer": "k"}}}}}`},
		{"lists: the Globals' first, duplicates kept", `{"Layers": ["l1", "l2"]}`, `{"Layers": ["l2", "l3"]}`, `{"Layers": ["l1", "l2", "l2", "l3"]}`},
		{"lists inside mappings", `{"VpcConfig": {"SecurityGroupIds": ["sg-1"], "SubnetIds": ["s-1"]}}`, `{"VpcConfig": {"SecurityGroupIds": ["sg-2"]}}`,
			`{"VpcConfig": {"SecurityGroupIds": ["sg-1", "sg-2"], "SubnetIds": ["s-1"]}}`},
		{"a list of mappings, not merged member by member", `{"Policies": [{"S3ReadPolicy": {"BucketName": "a"}}]}`, `{"Policies": [{"S3ReadPolicy": {"BucketName": "b"}}, "AWSLambdaExecute"]}`,
			`{"Policies": [{"S3ReadPolicy": {"BucketName": "a"}}, {"S3ReadPolicy": {"BucketName": "b"}}, "AWSLambdaExecute"]}`},
		{"another kind replaces: a mapping over a string", `{"CodeUri": "s3://b/k"}`, `{"CodeUri": {"Bucket": "b", "Key": "k"}}`, `{"CodeUri": {"Bucket": "b", "Key": "k"}}`},
		{"another kind replaces: a string over a list", `{"Layers": ["l1"]}`, `{"Layers": "l2"}`, `{"Layers": "l2"}`},
		{"Ref replaces Fn::Sub", `{"KmsKeyArn": {"Fn::Sub": "arn:${AWS::Region}"}}`, `{"KmsKeyArn": {"Ref": "Key"}}`, `{"KmsKeyArn": {"Ref": "Key"}}`},
		{"Ref over Globals, kept where the resource has none", `{"Environment": {"Variables": {"T": {"Ref": "Table"}, "U": "u"}}}`, `{"Environment": {"Variables": {"U": {"Fn::Sub": "${AWS::Region}"}}}}`,
			`{"Environment": {"Variables": {"T": {"Ref": "Table"}, "U": {"Fn::Sub": "${AWS::Region}"}}}}`},
		{"an intrinsic replaces a mapping", `{"Tags": {"team": "pay"}}`, `{"Tags": {"Fn::If": ["Prod", {"env": "prod"}, {"env": "dev"}]}}`,
			`{"Tags": {"Fn::If": ["Prod", {"env": "prod"}, {"env": "dev"}]}}`},
		{"a mapping replaces an intrinsic", `{"Environment": {"Fn::If": ["Prod", {"Variables": {"A": "1"}}, {"Ref": "AWS::NoValue"}]}}`, `{"Environment": {"Variables": {"B": "2"}}}`,
			`{"Environment": {"Variables": {"B": "2"}}}`},
		{"a Condition is an intrinsic", `{"Tags": {"Condition": "Prod"}}`, `{"Tags": {"env": "dev"}}`, `{"Tags": {"env": "dev"}}`},
		{"an intrinsic replaces a mapping that holds its key", `{"M": {"Ref": "A", "x": 1}}`, `{"M": {"Ref": "B"}}`, `{"M": {"Ref": "B"}}`},
		{"a mapping of two keys, one Ref, merged", `{"M": {"Ref": "A", "x": 1}}`, `{"M": {"y": 2, "Ref": "B"}}`, `{"M": {"Ref": "B", "x": 1, "y": 2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			globals, own, want := decode(t, tc.globals), decode(t, tc.own), decode(t, tc.want)
			got := overGlobals(globals, own)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !reflect.DeepEqual(globals, decode(t, tc.globals)) || !reflect.DeepEqual(own, decode(t, tc.own)) {
				t.Errorf("changed: Globals %v, resource %v", globals, own)
			}
		})
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}
