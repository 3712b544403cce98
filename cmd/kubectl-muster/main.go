// Command kubectl-muster is Muster's kubectl plugin: put it on PATH and run
// kubectl muster explain pg NAME, top, queue, or whatif -f FILE.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/muster-dev/muster/pkg/kubectlmuster"
)

func main() {
	cmd := kubectlmuster.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		// As kubectl says it.
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
