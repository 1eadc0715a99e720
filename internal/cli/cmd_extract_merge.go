package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/extract"
)

// extractMergeOpts are the flags of 'hiro extract merge'.
type extractMergeOpts struct {
	Out string
}

// newExtractMergeCmd is 'hiro extract merge', a subcommand of extract.
func newExtractMergeCmd(g *Globals) *cobra.Command {
	o := &extractMergeOpts{}
	cmd := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Merge the output directories of a sharded extraction into one",
		Long: `Combine the output directories of 'hiro extract --shard I/N' runs (every
shard 0..N-1 of one N, each finished, all with the same backend, model,
prompt and settings) into DIR, which must be new or empty. DIR then holds
exactly what one unsharded run over the same documents writes: documents in
input order, each with the claims and rejects its shard wrote, one
checkpoint per document, run.json and stats.json; 'hiro eval' scores it as
it scores an unsharded run. (A document a shard redid after a failed
request keeps only its last, finished, records.)

Exit status: 0 merged; 2 the shards cannot be merged: a missing, repeated or
unfinished shard, shards of different runs, a directory that cannot be read,
or DIR cannot be written (the message says which).`,
		Args: needArgs(1, -1, "the output directories of every shard", "hiro extract merge --out runs/merged runs/shard-0 runs/shard-1"),
		RunE: func(c *cobra.Command, args []string) error {
			return runExtractMerge(g, o, args)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "directory to write the merged output into (new or empty; required)")
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the summary as JSON (errors too)")
	return cmd
}

func runExtractMerge(g *Globals, o *extractMergeOpts, dirs []string) error {
	if o.Out == "" {
		return UsageErrorf("extract merge: --out DIR is required: the directory for the merged output")
	}
	sum, err := extract.Merge(o.Out, dirs)
	if err != nil {
		return UsageError(err)
	}
	if g.JSON {
		return claimsPrintJSON(g, sum)
	}
	fmt.Fprintln(g.Stdout, mergeSummaryLine(sum))
	return nil
}

// mergeSummaryLine is the line 'extract merge' prints for sum, each count
// with the noun that agrees with it.
func mergeSummaryLine(sum *extract.MergeSummary) string {
	st := sum.Stats
	return fmt.Sprintf("merged %s into %s: %s (%d done, %d failed), %s, %s, schema-valid replies %d of %d",
		account.Plural(sum.Shards, "shard", "shards"), sum.OutDir, account.Plural(sum.Documents, "document", "documents"), st.DocumentsDone, st.DocumentsFailed,
		account.Plural(st.Claims, "claim", "claims"), account.Plural(st.Rejects, "reject", "rejects"), st.SchemaValidReplies, st.Replies)
}
