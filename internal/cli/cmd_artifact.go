package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newArtifactCmd) }

func newArtifactCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Pin a model directory to an immutable revision and verify it later",
		Long: `A manifest (schemas/artifact-manifest.schema.json) records the repository id,
the 40-hex commit, and every file's path, bytes and SHA-256, with one digest
over them. 'pin' writes it; 'verify' reports missing, changed and extra files.

Both accept a plain directory or the Hugging Face cache layout
(.../hub/models--ORG--NAME or .../models--ORG--NAME/snapshots/REV), whose files
are symlinks into blobs/.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newArtifactPinCmd(g), newArtifactVerifyCmd(g))
	return cmd
}

// artifactPinOpts are the flags of 'hiro artifact pin'.
type artifactPinOpts struct {
	Dir, Repo, Revision, Out string
	Workers                  int
	Force                    bool
}

func newArtifactPinCmd(g *Globals) *cobra.Command {
	o := &artifactPinOpts{}
	cmd := &cobra.Command{
		Use:   "pin --dir DIR --repo ID --revision REV [--out FILE]",
		Short: "Hash every file of a model directory and write its manifest",
		Long: `Walk DIR, hash every file in parallel (one file per core), and write the
manifest of repository ID at revision REV to FILE (atomically; nothing is
written on error), or to stdout without --out. An existing FILE is not
replaced unless --force is given: re-pinning would bless whatever the
directory holds now (verify it first). REV must be the full 40-hex
commit: a branch or tag such as 'main' can move and is refused. A progress
bar is drawn on stderr when it is a terminal.

Exit status: 0 pinned; 1 a file could not be hashed (unreadable, changed while
hashed, symlink loop or escape, corrupt cache blob); 2 bad usage (bad revision,
repository id or directory); 3 interrupted.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runArtifactPin(c.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "model directory, or Hugging Face cache models--ORG--NAME[/snapshots/REV] (required)")
	f.StringVar(&o.Repo, "repo", "", "upstream repository id: ORG/NAME, or NAME for the hub's legacy ids such as gpt2 (required)")
	f.StringVar(&o.Revision, "revision", "", "upstream commit, 40 hex digits (required)")
	f.StringVar(&o.Out, "out", "", "manifest file to write (default: stdout)")
	f.IntVar(&o.Workers, "workers", 0, "files hashed at once (default: number of CPUs)")
	f.BoolVar(&o.Force, "force", false, "replace an existing manifest at --out")
	return cmd
}

// runArtifactPin pins o.Dir and writes the manifest to o.Out or stdout.
func runArtifactPin(ctx context.Context, g *Globals, o *artifactPinOpts) error {
	if o.Dir == "" {
		return UsageErrorf("artifact pin: --dir is required: the directory holding the model files")
	}
	if o.Repo == "" {
		return UsageErrorf("artifact pin: --repo is required: the upstream repository id, e.g. mistralai/Mistral-Small-3.2-24B-Instruct-2506")
	}
	if o.Workers < 0 {
		return UsageErrorf("artifact pin: --workers %d: must be 0 (one per CPU) or more", o.Workers)
	}
	if o.Out != "" && !o.Force {
		if _, err := os.Stat(o.Out); err == nil {
			return UsageErrorf("artifact pin: %s exists: re-pinning would bless the directory as it is now; run hiro artifact verify %s first, then pin again with --force to replace it", o.Out, shellquote.Quote(o.Out))
		}
	}
	opts := artifact.PinOptions{Workers: o.Workers, Progress: artifact.TerminalProgress(g.Stderr, "hashing")}
	if o.Out != "" {
		opts.Exclude = []string{o.Out}
	}
	m, err := artifact.Pin(ctx, o.Dir, o.Repo, o.Revision, opts)
	if err != nil {
		return artifactError("artifact pin", err)
	}
	if o.Out == "" {
		b, err := artifact.Marshal(m)
		if err != nil {
			return err
		}
		_, err = g.Stdout.Write(b)
		return err
	}
	if err := artifact.Write(o.Out, m); err != nil {
		return FailedError(fmt.Errorf("artifact pin: %w", err))
	}
	fmt.Fprintf(g.Stdout, "pinned %s@%s: %s, %s, %s -> %s\n",
		m.Repo, m.Revision, termtext.Plural(len(m.Files), "file", "files"), artifact.HumanBytes(m.TotalBytes), m.Digest, o.Out)
	return nil
}

// artifactVerifyOpts are the flags of 'hiro artifact verify'.
type artifactVerifyOpts struct {
	Dir     string
	Fast    bool
	Workers int
}

func newArtifactVerifyCmd(g *Globals) *cobra.Command {
	o := &artifactVerifyOpts{}
	cmd := &cobra.Command{
		Use:   "verify FILE [--dir DIR] [--json] [--fast]",
		Short: "Check a model directory against its manifest",
		Long: `Compare DIR (default: the directory recorded in the manifest FILE) with the
manifest and report missing, changed (size or SHA-256) and extra files. Every
file is hashed unless --fast is given: then a file whose size and modification
time equal the manifest's is trusted without reading it.

Exit status: 0 the directory matches exactly; 1 drift (or a file could not be
hashed); 2 bad usage (bad manifest, missing directory); 3 interrupted.`,
		Args: needArgs(1, 1, "exactly one manifest file", "hiro artifact verify model.manifest.json --dir DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return runArtifactVerify(c.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "directory to check (default: the manifest's dir)")
	f.BoolVar(&g.JSON, "json", false, "print the report as one JSON object (errors too)")
	f.BoolVar(&o.Fast, "fast", false, "trust files whose size and mtime match instead of hashing them")
	f.IntVar(&o.Workers, "workers", 0, "files hashed at once (default: number of CPUs)")
	return cmd
}

// runArtifactVerify verifies the directory against manifestPath and prints
// the report; drift returns Silent(ExitFailed).
func runArtifactVerify(ctx context.Context, g *Globals, o *artifactVerifyOpts, manifestPath string) error {
	if o.Workers < 0 {
		return UsageErrorf("artifact verify: --workers %d: must be 0 (one per CPU) or more", o.Workers)
	}
	var progress artifact.Progress
	if !g.JSON {
		progress = artifact.TerminalProgress(g.Stderr, "verifying")
	}
	r, err := artifact.Verify(ctx, manifestPath, o.Dir, artifact.VerifyOptions{Fast: o.Fast, Workers: o.Workers, Progress: progress})
	if err != nil {
		return artifactError("artifact verify", err)
	}
	if g.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printArtifactReport(g.Stdout, r)
	}
	if !r.OK {
		return Silent(ExitFailed)
	}
	return nil
}

// printArtifactReport writes one line per problem, then the summary.
func printArtifactReport(w io.Writer, r *artifact.Report) {
	for _, m := range r.Mismatch {
		fmt.Fprintf(w, "mismatch  %s\n", m)
	}
	for _, p := range r.Missing {
		fmt.Fprintf(w, "missing   %s\n", p)
	}
	for _, c := range r.Changed {
		switch c.Reason {
		case artifact.ReasonSize:
			fmt.Fprintf(w, "changed   %s  (size %d -> %d bytes)\n", c.Path, c.WantBytes, c.GotBytes)
		case artifact.ReasonBlobName:
			fmt.Fprintf(w, "changed   %s  (content %s, but the cache blob is named %s)\n", c.Path, c.WantSHA256, c.GotSHA256)
		default:
			fmt.Fprintf(w, "changed   %s  (sha256 %s -> %s)\n", c.Path, c.WantSHA256, c.GotSHA256)
		}
	}
	for _, p := range r.Extra {
		fmt.Fprintf(w, "extra     %s\n", p)
	}
	s := r.Summary()
	if r.Fast {
		s += fmt.Sprintf(" (fast: %d trusted on size+mtime, %d hashed)", r.Trusted, r.Hashed)
	}
	fmt.Fprintln(w, s)
}

// artifactError maps the artifact package's errors to exit statuses: bad
// input the user typed → 2, interruption → 3, anything else → 1.
func artifactError(prefix string, err error) error {
	err = fmt.Errorf("%s: %w", prefix, err)
	switch {
	case errors.Is(err, artifact.ErrRevision), errors.Is(err, artifact.ErrRepo),
		errors.Is(err, artifact.ErrDir), errors.Is(err, artifact.ErrManifest):
		return UsageError(err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return AbortedError(err)
	default:
		return FailedError(err)
	}
}
