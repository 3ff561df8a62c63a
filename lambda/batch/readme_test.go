package batch_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExample: README.md's lambda/batch snippet is ExampleSQS's
// lambda.Start call, so that it compiles.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "\n```go\nlambda.Start(batch.SQS(")
	if !ok {
		t.Fatal("README.md has no Go block starting with lambda.Start(batch.SQS(")
	}
	block, _, _ = strings.Cut("lambda.Start(batch.SQS("+block, "\n```\n")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var indented []string
	for _, l := range strings.Split(block, "\n") {
		indented = append(indented, "\t"+l)
	}
	if !strings.Contains(string(src), strings.Join(indented, "\n")+"\n") {
		t.Errorf("README.md's batch snippet is not ExampleSQS's lambda.Start call:\n%s", block)
	}
}
