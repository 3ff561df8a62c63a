#!/usr/bin/env bash
# test-moto.sh: the tests that use a DynamoDB-compatible server
# (internal/testing/dynalite), run against moto_server, module by module.
# Usage: .ci/test-moto.sh MODULE... ; output in bin/test-moto.log.
set -uo pipefail
if ! command -v moto_server >/dev/null 2>&1; then
	echo "test-moto: moto_server is not on PATH; it is optional (make test needs only dynalite): pip install 'moto[server]'" >&2
	exit 1
fi
exec "$(dirname "$0")/test-server.sh" moto "$@"
