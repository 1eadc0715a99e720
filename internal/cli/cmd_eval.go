package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() { registerCommand(newEvalCmd) }

// evalOpts are the flags of 'hiro eval'.
type evalOpts struct {
	Corpus    string
	Claims    string
	Threshold float64
	// ScoreMissing scores documents with no extraction record as empty.
	ScoreMissing bool
}

func newEvalCmd(g *Globals) *cobra.Command {
	o := &evalOpts{}
	cmd := &cobra.Command{
		Use:   "eval --corpus DIR --claims FILE [--json]",
		Short: "Score extracted claims against a frozen corpus's gold claims",
		Long: `Score the claims in FILE (claims.jsonl of 'hiro extract') against the gold
claims of the frozen corpus DIR, overall (counts summed over documents) and
per document. Deterministic: the same inputs give byte-identical JSON.

Similarity: ` + eval.Normalization + `.
A predicted claim matches a gold claim of the same document when the
similarity is at least the threshold (default 0.5); matching is ` + eval.Matching + `.

Measures: precision = matched/predicted; coverage = matched/gold; F1;
grounding rate = claims whose quote is in their sentence (exact, or up to
white space and case) / predicted; duplicate rate = claims repeating an
earlier claim of the document (normalised text) / predicted; schema-valid
rate = replies that validated against the claims schema / replies, from
stats.json beside FILE (null without it, and null with a warning when its
claim, checkpoint or byte counts disagree with FILE and progress.jsonl: an
extract run killed after the one that wrote it). A rate with a zero
denominator is 0.

Missing documents: when progress.jsonl (extract's per-document records) is
beside FILE, a corpus document with no finished record there (another shard's,
or not yet extracted) is listed as missing, with a warning on stderr, and left
out of the scores; --score-missing scores it as extracted with no claims.
Claim lines after the last checkpoint (a document written in part by a
killed run) are not scored, with a warning.
Score a sharded run after 'hiro extract merge': the merged folder has every
shard's records and scores as the unsharded run. Without progress.jsonl every
document of the corpus is scored.

Each line of FILE must be ` + eval.ClaimLineShape + `.
A line that is not (not JSON, not an object, a missing doc_id or text, a
field of the wrong type, a span outside its document) stops the scoring
with the file, the line and what is wrong.

Exit status: 0 scored; 1 the claims could not be read (a malformed line) or
name documents the corpus does not have; 2 bad usage (a missing file, a
directory given as --claims or a file as --corpus, a threshold outside
(0, 1], a corpus that does not match its manifest).`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runEval(c.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Corpus, "corpus", "", "frozen corpus directory (required)")
	f.StringVar(&o.Claims, "claims", "", "claims.jsonl to score (required)")
	f.Float64Var(&o.Threshold, "threshold", eval.DefaultThreshold, "minimum token-F1 similarity for a match, in (0, 1]")
	f.BoolVar(&o.ScoreMissing, "score-missing", false, "score documents with no extraction record as extracted with no claims (default: list them as missing, score the rest)")
	f.BoolVar(&g.JSON, "json", false, "print the report as JSON (errors too)")
	return cmd
}

func runEval(_ context.Context, g *Globals, o *evalOpts) error {
	if o.Corpus == "" || o.Claims == "" {
		return UsageErrorf("eval: --corpus DIR and --claims FILE are both required, e.g. hiro eval --corpus corpora/hiro-mini --claims out/claims.jsonl")
	}
	if !(o.Threshold > 0 && o.Threshold <= 1) { // NaN too
		return UsageErrorf("eval: --threshold %v: must be a number in (0, 1], e.g. 0.5", o.Threshold)
	}
	if err := evalPathKinds(o); err != nil {
		return err
	}
	r, err := eval.EvaluateRun(o.Corpus, o.Claims, eval.Options{Threshold: o.Threshold, ScoreMissing: o.ScoreMissing})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, corpus.ErrNotFrozen) || errors.Is(err, syscall.ENOTDIR) {
			return UsageError(fmt.Errorf("eval: %w", err))
		}
		return FailedError(fmt.Errorf("eval: %w", err))
	}
	if len(r.Missing) > 0 {
		what := "left out of the scores"
		if o.ScoreMissing {
			what = "scored as extracted with no claims (--score-missing)"
		}
		fmt.Fprintf(g.Stderr, "hiro: eval: warning: %d of %d documents have no extraction record beside %s (a shard or an unfinished run?), %s: %s; merge the shards with 'hiro extract merge' to score the whole corpus\n",
			len(r.Missing), len(r.Missing)+len(r.Documents)-boolInt(o.ScoreMissing)*len(r.Missing), o.Claims, what, strings.Join(r.Missing, ", "))
	}
	if r.StatsIgnored != "" {
		fmt.Fprintf(g.Stderr, "hiro: eval: warning: %s does not describe %s (%s): a later extract run was killed before rewriting it, or the files come from different runs; the schema-valid rate is left out (null); rerun the same hiro extract command to finish the run and rewrite it\n",
			filepath.Join(filepath.Dir(o.Claims), "stats.json"), o.Claims, r.StatsIgnored)
	}
	if r.UncommittedClaims > 0 {
		fmt.Fprintf(g.Stderr, "hiro: eval: warning: %d line(s) of %s come after the last checkpoint of %s (a document written in part by a killed run): not scored; rerun the same hiro extract command to redo that document\n",
			r.UncommittedClaims, o.Claims, filepath.Join(filepath.Dir(o.Claims), eval.ProgressFile))
	}
	if g.JSON {
		b, err := eval.Marshal(r)
		if err != nil {
			return err
		}
		_, err = g.Stdout.Write(b)
		return err
	}
	fmt.Fprint(g.Stdout, eval.Text(r))
	return nil
}

// evalPathKinds checks that --corpus is a directory and --claims a
// regular file (bad usage, exit 2, otherwise), so that a swapped or
// mistyped path is named as such rather than failing as unreadable claims.
func evalPathKinds(o *evalOpts) error {
	if st, err := os.Stat(o.Corpus); err == nil && !st.IsDir() {
		return UsageErrorf("eval: --corpus %s is a file, not a directory: give the frozen corpus folder (the one with manifest.json, made by 'hiro corpus freeze' or 'hiro corpus import')", o.Corpus)
	}
	st, err := os.Stat(o.Claims)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return UsageErrorf("eval: --claims %s: a folder above it is a file: give the path of the claims.jsonl that 'hiro extract' wrote in its --out directory", o.Claims)
	case err != nil:
		return nil // EvaluateRun names a missing path
	case st.IsDir():
		hint := filepath.Join(o.Claims, "claims.jsonl")
		if _, err := os.Stat(hint); err == nil {
			return UsageErrorf("eval: --claims %s is a directory, not a claims file: give the claims.jsonl inside it: --claims %s", o.Claims, shellquote.Quote(hint))
		}
		return UsageErrorf("eval: --claims %s is a directory, not a claims file: give the claims.jsonl that 'hiro extract' wrote in its --out directory", o.Claims)
	case !st.Mode().IsRegular():
		return UsageErrorf("eval: --claims %s is not a regular file: give the claims.jsonl that 'hiro extract' wrote in its --out directory", o.Claims)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
