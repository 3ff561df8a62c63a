// Package samlocal runs a SAM template's functions locally without
// Docker, as they will be deployed: each function's bootstrap, built for
// this machine (Bootstraps), under Amazon's Lambda Runtime Interface
// Emulator (aws-lambda-rie, the version this module's go.mod pins), in K
// sandboxes of one invocation at a time (Pool), behind Front, which does
// what the template's HTTP APIs and REST APIs do: their routes, payload
// format 2.0 or 1.0, JWT authorizers (tokens signed by a key of the stack
// standing for the issuer: Issuer), response mapping, 500 on a function
// error. The template's tables (AWS::DynamoDB::Table,
// AWS::Serverless::SimpleTable) are created on a local DynamoDB, and each
// function gets the template's environment, a table's Ref resolved to its
// local name (Plan). The template's Globals are laid under each function
// and API as SAM lays them: the resource's mappings merged into the
// Globals' key by key, its lists after the Globals' members, its other
// values (an intrinsic function among them) in place of the Globals'; so
// an API with Authorizers of its own keeps the Globals' DefaultAuthorizer.
// A resource's IgnoreGlobals attribute keeps from it every Globals
// property ('*') or those it lists (an API that lists Auth has neither the
// Globals' DefaultAuthorizer nor their Authorizers); a list naming a
// property its Globals section lacks, or a value that is neither '*' nor
// a list of names, is refused.
// Any function can also be invoked with an event (Stack.Invoke), as `sam
// local invoke` does.
//
// Not run locally, and said so when a template asks for them: Lambda,
// IAM, Cognito user pool and API key authorizers (-skip-unsupported-auth
// serves those routes open), queues and streams (a queue's Ref and
// QueueUrl are empty; a worker is invoked with an event file), and
// Fn::ImportValue.
//
// The command is cmd/samlocal (docs/DEPLOY.md, "Your own function"); `make
// run-lambda` runs the repository's template.yaml with it. It is a module
// of its own so that the emulator's dependencies stay out of every other
// module's graph.
package samlocal
