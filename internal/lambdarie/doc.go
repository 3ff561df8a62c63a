// Package lambdarie runs the deployed artifact locally without Docker:
// the bootstrap `make build` ships (built for the host's architecture)
// under Amazon's Lambda Runtime Interface Emulator (aws-lambda-rie, the
// version this module's go.mod pins), in K sandboxes of one invocation at
// a time, behind Front, which does what template.yaml's HTTP API does
// (routes, JWT authorizer, payload 2.0 events, response mapping, 500 on a
// function error), against a local DynamoDB with the template's tables
// and environment. It is what `sam local start-api` gives with Docker.
//
// `make run-lambda` serves it (cmd/run-lambda); its test, run by `make
// test`, drives the walkthrough's requests through it. It is a module of
// its own so that the emulator's dependencies stay out of every other
// module's graph.
package lambdarie
