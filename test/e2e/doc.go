// Package e2e checks the dubbo binary as a user runs it: the tests build
// ./dubbo and the example plugins once (TestMain), start `dubbo up` or
// single roles as real processes on free 127.0.0.1 ports with their data in
// a temporary directory, and drive them with `dubbo call`, `dubbo bench`,
// the HTTP gateway, the registry's four-letter words, and hostile clients
// that write bytes and HTTP/2 frames by hand (internal/testkit/h2raw).
// Every process is stopped by its PID, and the tests check that no plugin
// process outlives its node.
//
// It holds tests only; run them with `go test ./test/e2e/`.
package e2e
