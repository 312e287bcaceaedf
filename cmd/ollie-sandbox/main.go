// Command ollie-sandbox is ollie's sandbox helper: the daemon starts it,
// and it confines and starts every program a stage runs. It is not for
// people to run; see docs/execute.md.
//
// It is a binary of its own, installed next to ollie, so that it links
// nothing but the sandbox: a resident helper of ollie's full size would
// spend some 10 ms and several megabytes initialising the backends and
// the web front-end it never uses. Without it, ollie is its own helper.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/trim"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != sandbox.HelperCommand {
		fmt.Fprintf(os.Stderr, "%s is ollie's sandbox helper: ollie starts it, people do not (see docs/execute.md)\n", sandbox.HelperName)
		os.Exit(2)
	}
	if sandbox.Resident(os.Args[2:]) {
		trim.Executable() // it lives as long as the daemon
		// And again once the daemon's start-up is over: its warming
		// (threads made ready for the default profile's stages) brought
		// back some 2.5 MB of this executable that a stage may not need
		// (trim.WhenIdle would give them back 10 to 20 s later).
		time.AfterFunc(time.Second, trim.Executable)
		go trim.WhenIdle(context.Background(), sandbox.Served)
	}
	os.Exit(sandbox.HelperMain(os.Args[2:]))
}
