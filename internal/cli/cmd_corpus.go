package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newCorpusCmd) }

func newCorpusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "corpus",
		Short: "Freeze, import and verify corpora (documents with gold claims)",
		Long: `A frozen corpus is a directory: docs/<id>.txt (or .md), one document each;
gold.jsonl, one gold claim per line ({"doc_id","sentence_index","text"}); and
manifest.json with the size and SHA-256 of every other file and a digest over
them. Extraction, evaluation and the semantic gate refuse a corpus that does
not match its manifest. The format and the digest's formula: docs/corpus.md.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newCorpusFreezeCmd(g), newCorpusImportCmd(g), newCorpusVerifyCmd(g))
	return cmd
}

// corpusImportOpts are the flags of 'hiro corpus import'.
type corpusImportOpts struct {
	Take int
	Out  string
}

func newCorpusImportCmd(g *Globals) *cobra.Command {
	o := &corpusImportOpts{}
	cmd := &cobra.Command{
		Use:   "import factcheck-gpt FILE --take N --out DIR",
		Short: "Import N sources of the Factcheck-GPT benchmark as a frozen corpus",
		Long: `Read the Factcheck-GPT benchmark JSONL FILE and write a frozen corpus of N
sources to DIR (which must not exist or be empty). Selection is deterministic:
` + corpus.FactcheckSelection + `; the same file and N give the same corpus,
byte for byte, and a smaller N gives a subset of a larger one. Each document
is docs/fcgpt-<12 hex of SHA-256(prompt)>.txt holding the source's response
exactly (rows that share a prompt add -<8 hex of SHA-256(response)>; a row
repeating another's prompt and response is read once); gold.jsonl holds every
human-written claim of its "claims" lists with the annotators' sentence
number (from 0). The corpus is written beside DIR and moved into place when
complete: a failed import leaves nothing behind.

Exit status: 0 imported; 1 the file could not be read or parsed, or DIR
could not be written (a DIR that is not empty included); 2 bad usage (a
missing file, unknown format, --take or --out missing, --out an existing
file or under one).`,
		Args: func(c *cobra.Command, args []string) error {
			if err := needArgs(2, 2, "the format and the file", "hiro corpus import factcheck-gpt factcheck-GPT-benchmark.jsonl --take 6 --out corpora/fc6")(c, args); err != nil {
				return err
			}
			if args[0] != "factcheck-gpt" {
				return UsageErrorf("corpus import: unknown format %q; the one known format is factcheck-gpt", args[0])
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runCorpusImport(c.Context(), g, o, args[1])
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Take, "take", 0, "number of sources to select (required)")
	f.StringVar(&o.Out, "out", "", "corpus directory to write; must not exist or be empty (required)")
	f.BoolVar(&g.JSON, "json", false, "print the manifest as JSON (errors too)")
	return cmd
}

func runCorpusImport(_ context.Context, g *Globals, o *corpusImportOpts, file string) error {
	if o.Take == 0 {
		return UsageErrorf("corpus import: --take is required: the number of sources to select, at least 1")
	}
	if o.Take < 0 {
		return UsageErrorf("corpus import: --take %d: give the number of sources to select, at least 1", o.Take)
	}
	if o.Out == "" {
		return UsageErrorf("corpus import: --out is required: the directory to write the corpus to")
	}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		// A missing input is bad usage (exit 2), as for every command.
		return UsageErrorf("corpus import: %s: file not found; download factcheck-GPT-benchmark.jsonl from the root of github.com/yuxiaw/Factcheck-GPT (the copy the project's tests use has SHA-256 8bbf41a58ee1b7431fecd2a23f231f764e378e04edeb4d2a7a83949a7f40cf4b; docs/commands.md) and give its path", file)
	}
	m, err := corpus.ImportFactcheckGPT(file, o.Take, o.Out)
	if errors.Is(err, atomicfile.ErrNotDir) {
		return UsageError(fmt.Errorf("corpus import: --out %w", err))
	}
	if err != nil {
		return FailedError(fmt.Errorf("corpus import: %w", err))
	}
	if g.JSON {
		return claimsPrintJSON(g, m)
	}
	fmt.Fprintf(g.Stdout, "imported %d of %s, %s -> %s (digest %s)\n",
		m.Documents, termtext.Plural(m.Source.Available, "source", "sources"), termtext.Plural(m.GoldClaims, "gold claim", "gold claims"), o.Out, m.Digest)
	return nil
}

func newCorpusVerifyCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify DIR [--json]",
		Short: "Check that a corpus matches its manifest exactly",
		Long: `Hash every file of the corpus DIR and compare with manifest.json: a changed,
missing or extra file fails.

Exit status: 0 the corpus matches; 1 it does not (each problem is listed);
2 bad usage (no such directory, no or unreadable manifest).`,
		Args: needArgs(1, 1, "exactly one corpus directory", "hiro corpus verify corpora/fc6"),
		RunE: func(c *cobra.Command, args []string) error {
			return runCorpusVerify(c.Context(), g, args[0])
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the report as one JSON object (errors too)")
	return cmd
}

func runCorpusVerify(_ context.Context, g *Globals, dir string) error {
	r, err := corpus.Verify(dir)
	if err != nil {
		return UsageError(fmt.Errorf("corpus verify: %w", err))
	}
	if g.JSON {
		if err := claimsPrintJSON(g, r); err != nil {
			return err
		}
	} else {
		for _, p := range r.Problems() {
			fmt.Fprintln(g.Stdout, p)
		}
		if r.OK {
			fmt.Fprintf(g.Stdout, "corpus %s matches its manifest (digest %s)\n", dir, r.Digest)
		} else {
			n := len(r.Problems())
			fmt.Fprintf(g.Stdout, "corpus %s does NOT match its manifest: %s\n", dir, account.Plural(n, "problem", "problems"))
			fmt.Fprintf(g.Stdout, "expected digest %s (manifest.json)\nactual digest   %s (the files now)\n", r.Digest, r.ActualDigest)
		}
	}
	if !r.OK {
		return Silent(ExitFailed)
	}
	return nil
}

// corpusFreezeOpts are the flags of 'hiro corpus freeze'.
type corpusFreezeOpts struct {
	Name string
}

func newCorpusFreezeCmd(g *Globals) *cobra.Command {
	o := &corpusFreezeOpts{}
	cmd := &cobra.Command{
		Use:   "freeze DIR [--name NAME]",
		Short: "Freeze your documents and gold claims (writes DIR/manifest.json)",
		Long: `Make DIR a frozen corpus: DIR/docs/ holds one document per file (<id>.txt,
.md or .markdown; the id is the path under docs/ without its extension, the
id 'hiro extract PATHS' gives the same file), and DIR/gold.jsonl, when
present, one gold claim per line: {"doc_id":"<id>","sentence_index":N,
"text":"..."} (sentence_index counts your own sentences from 0; scoring
matches claims within a document). Every claim is checked (its doc_id must
be a document); then manifest.json is written with the size and SHA-256 of
every file and the corpus digest (docs/corpus.md gives the formula).
Freezing again after an edit prints the old digest and the new one.

Exit status: 0 frozen; 1 a check failed (each problem is listed; nothing is
written); 2 bad usage (DIR missing or not a directory).`,
		Args: needArgs(1, 1, "exactly one corpus directory", "hiro corpus freeze corpora/mine"),
		RunE: func(c *cobra.Command, args []string) error {
			return runCorpusFreeze(c.Context(), g, o, args[0])
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "the corpus's name in its manifest (default: the manifest's, else DIR's base name)")
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the manifest as JSON (errors too)")
	return cmd
}

func runCorpusFreeze(_ context.Context, g *Globals, o *corpusFreezeOpts, dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return UsageErrorf("corpus freeze: %s: not a directory; give the folder holding docs/ and gold.jsonl, e.g. hiro corpus freeze corpora/mine", dir)
	}
	m, previous, err := corpus.Freeze(dir, o.Name)
	if err != nil {
		return FailedError(fmt.Errorf("corpus freeze: %w", err))
	}
	if g.JSON {
		return claimsPrintJSON(g, m)
	}
	fmt.Fprintf(g.Stdout, "froze %s: %s, %s, digest %s\n", dir, account.Plural(m.Documents, "document", "documents"),
		account.Plural(m.GoldClaims, "gold claim", "gold claims"), m.Digest)
	if previous != "" && previous != m.Digest {
		fmt.Fprintf(g.Stdout, "the manifest it replaced had digest %s\n", previous)
	}
	return nil
}

// claimsPrintJSON writes v as indented JSON to stdout.
func claimsPrintJSON(g *Globals, v any) error {
	enc := json.NewEncoder(g.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
