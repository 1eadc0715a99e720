// Command hiro supervises local LLM inference servers, qualifies candidate
// backends against production with evidence, extracts grounded claims, and
// publishes a journal. See README.md and docs/design.md for the vocabulary.
package main

import (
	"os"

	"github.com/hiro-dev/hiro/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
