// Starts an in-memory dynalite server for idemkit's tests.
//
// It listens on 127.0.0.1 on a port the kernel picks, prints one line
// "listening 127.0.0.1:PORT" on stdout, and exits when its stdin closes
// (so it never outlives the process that started it) or on SIGTERM/SIGINT.
//
// Usage: node internal/testing/dynalite/server.js   (run with node_modules resolvable,
// i.e. from the repository root, or with NODE_PATH pointing at it).
'use strict'

var dynalite
try {
  dynalite = require('dynalite')
} catch (err) {
  process.stderr.write('cannot load dynalite (run `make deps` or `npm ci` in the repository root): ' + String(err.message).split('\n')[0] + '\n')
  process.exit(3)
}

var server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })

function quit (code) {
  // The store is in memory: nothing to flush, so there is no reason to wait
  // for keep-alive connections to drain.
  process.exit(code)
}

server.on('error', function (err) {
  process.stderr.write('dynalite: ' + (err && err.stack || err) + '\n')
  quit(1)
})

server.listen(0, '127.0.0.1', function () {
  var addr = server.address()
  process.stdout.write('listening ' + addr.address + ':' + addr.port + '\n')
})

process.stdin.on('end', function () { quit(0) })
process.stdin.on('close', function () { quit(0) })
process.stdin.on('error', function () { quit(0) })
process.stdin.resume()

process.on('SIGTERM', function () { quit(0) })
process.on('SIGINT', function () { quit(0) })
