package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newJournalCmd) }

// journalOpts holds the flags shared by every journal subcommand.
type journalOpts struct {
	// Dir is the journal directory (--journal); empty means
	// <state directory>/journal (see journalDefaults).
	Dir string
	// TrustUnsigned is journal add's --trust-unsigned.
	TrustUnsigned bool
}

// Default names of the journal and its site inside the state directory.
const (
	journalDirName  = journal.DefaultDir
	journalSiteName = "journal-site"
)

// journalStateDir is the state directory the journal commands default to:
// the configuration's state_dir when a configuration is found, else
// config.DefaultStateDir (.hiro) in the current directory. A configuration
// that exists but does not load is bad usage.
func journalStateDir(g *Globals) (string, error) {
	cfg, err := config.Load(g.ConfigPath)
	var ce *config.Error
	switch {
	case err == nil:
		return cfg.StateDir, nil
	case errors.As(err, &ce) && ce.Key == "" && !fileExists(g.ConfigPath):
		return config.DefaultStateDir, nil
	default:
		return "", UsageError(fmt.Errorf("journal: %w (or pass --journal DIR)", err))
	}
}

// resolve fills Dir with <state directory>/journal when --journal was not
// given.
func (jo *journalOpts) resolve(g *Globals) error {
	if jo.Dir != "" {
		return nil
	}
	sd, err := journalStateDir(g)
	if err != nil {
		return err
	}
	jo.Dir = filepath.Join(sd, journalDirName)
	return nil
}

func newJournalCmd(g *Globals) *cobra.Command {
	opts := &journalOpts{}
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Keep the development journal and publish it as a static site",
		Long: `The journal is a directory of timestamped entries, one JSON file each under
entries/, valid against schemas/journal-entry.schema.json. 'build' renders it
as a static site and records each published entry's hash in published.json;
'check' reports what is wrong, including published entries changed without a
revision note.

Where: without --journal the journal is journal/ in the state directory
(state_dir of the configuration, default .hiro), and 'build' writes the site
to journal-site/ beside it unless --out says otherwise; both are ignored by
git (.gitignore lists .hiro/).`,
		Args: needArgs(0, 0, "", ""),
	}
	cmd.PersistentFlags().StringVar(&opts.Dir, "journal", "", "journal directory (default: journal/ in the state directory, .hiro/journal without a configuration)")
	cmd.AddCommand(newJournalNewCmd(g, opts), newJournalAddCmd(g, opts), newJournalBuildCmd(g, opts), newJournalCheckCmd(g, opts))
	return cmd
}

// journalNewOpts are the flags of 'hiro journal new'.
type journalNewOpts struct {
	Title, Subtitle, Summary, Slug, BodyFile, Time string
}

func newJournalNewCmd(g *Globals, jo *journalOpts) *cobra.Command {
	o := &journalNewOpts{}
	cmd := &cobra.Command{
		Use:   "new --title TITLE [--subtitle S] [--summary S] [--body-file F]",
		Short: "Start a hand-written journal entry",
		Long: `Write a new hand-written entry into the journal: entries/<timestamp>_<slug>.json
with the title, an optional subtitle and executive summary, and a Markdown body
read from --body-file. The slug (the page's name) is made from the title
unless --slug gives one; the timestamp is now unless --time gives one. Edit
the JSON afterwards to add sections; 'hiro journal check' validates it.

Exit status: 0 written; 2 bad usage (no title, a bad slug or time, a slug
or timestamp already in the journal): nothing is written, not even the
journal folder.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runJournalNew(c.Context(), g, jo, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Title, "title", "", "entry title (required)")
	f.StringVar(&o.Subtitle, "subtitle", "", "one line under the title")
	f.StringVar(&o.Summary, "summary", "", "executive summary (plain text)")
	f.StringVar(&o.Slug, "slug", "", "page name (default: made from the title)")
	f.StringVar(&o.BodyFile, "body-file", "", "Markdown file holding the body")
	f.StringVar(&o.Time, "time", "", "timestamp, RFC 3339 with zone (default: now)")
	return cmd
}

// runJournalNew writes a new hand-written entry and prints its path.
func runJournalNew(_ context.Context, g *Globals, jo *journalOpts, o *journalNewOpts) error {
	if err := jo.resolve(g); err != nil {
		return err
	}
	if strings.TrimSpace(o.Title) == "" {
		return UsageErrorf("journal new: --title is required")
	}
	e := &journal.Entry{Title: o.Title, Subtitle: o.Subtitle, Summary: o.Summary, Slug: o.Slug}
	if e.Slug == "" {
		e.Slug = journal.Slugify(o.Title)
		if e.Slug == "" {
			return UsageErrorf("journal new: the title %q holds no letter or digit to make a slug from; pass --slug", o.Title)
		}
	} else if !journal.ValidSlug(e.Slug) {
		return UsageErrorf("journal new: --slug %q: use lower-case a-z, 0-9 and single hyphens, at most %d bytes", e.Slug, journal.MaxSlugLen)
	}
	e.Timestamp = time.Now().Truncate(time.Second)
	if o.Time != "" {
		t, err := time.Parse(time.RFC3339, o.Time)
		if err != nil {
			return UsageErrorf("journal new: --time %q: want RFC 3339 with a zone, e.g. 2025-06-12T18:30:00+02:00", o.Time)
		}
		e.Timestamp = t
	}
	if o.BodyFile != "" {
		b, err := os.ReadFile(o.BodyFile)
		if err != nil {
			return UsageErrorf("journal new: --body-file: %w", err)
		}
		e.Body = string(b)
	}
	// Opened, not made: the folder appears with the entry, so a refusal
	// writes nothing.
	j, err := journal.Open(jo.Dir)
	if err != nil {
		return UsageErrorf("journal new: %w", err)
	}
	rel, err := j.Create(e)
	if err != nil {
		if errors.Is(err, journal.ErrExists) || errors.Is(err, journal.ErrInvalid) {
			return UsageErrorf("journal new: %w", err)
		}
		return fmt.Errorf("journal new: %w", err)
	}
	fmt.Fprintf(g.Stdout, "created %s/%s (slug %s)\n", strings.TrimSuffix(jo.Dir, "/"), rel, e.Slug)
	return nil
}

func newJournalAddCmd(g *Globals, jo *journalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add EVIDENCE [--trust-unsigned]",
		Short: "Make a journal entry from a campaign's public evidence JSON",
		Long: `Validates EVIDENCE (the public evidence.json of a 'hiro qualify' campaign, or
the campaign's evidence folder holding it) against the evidence schema, copies it into the journal's evidence/ folder and
writes an entry from it: title and summary from the campaign and its report,
sections from the report, the validation table from the gates, next steps.
The private copy is refused.

The evidence's signature must verify (any edit after hiro wrote it is
refused); the entry records the signer's key, and a key not in your trust
list ('hiro trust') is published with a warning. Evidence without a
signature (from a hiro older than signing) needs --trust-unsigned, and the
entry says it was added so.`,
		Args: needArgs(1, 1, "the public evidence.json of one campaign, or its evidence folder", "hiro journal add .hiro/evidence/demo/<id>/evidence.json"),
		RunE: func(c *cobra.Command, args []string) error {
			return runJournalAdd(c.Context(), g, jo, args)
		},
	}
	cmd.Flags().BoolVar(&jo.TrustUnsigned, "trust-unsigned", false, "publish evidence without a signature (written by a hiro older than signing); the entry records it")
	return cmd
}

// runJournalAdd adds one campaign's evidence as an entry and prints its path.
func runJournalAdd(_ context.Context, g *Globals, jo *journalOpts, args []string) error {
	if err := jo.resolve(g); err != nil {
		return err
	}
	// A campaign's evidence folder stands for its public evidence.json,
	// resolved as activate and evidence verify resolve theirs.
	path, err := evidence.File(args[0], evidence.PublicFile)
	if err != nil {
		return UsageErrorf("journal add: %w", err)
	}
	j, err := journal.Open(jo.Dir)
	if err != nil {
		return UsageErrorf("journal add: %w", err)
	}
	rel, err := j.AddFromEvidence(path, journal.AddOptions{TrustUnsigned: jo.TrustUnsigned,
		Warn: func(w string) { fmt.Fprintf(g.Stderr, "hiro: WARNING: journal add: %s\n", w) }})
	if err != nil {
		// Bad, private, unfinished or already-added evidence: the input is wrong.
		return UsageErrorf("journal add: %w", err)
	}
	fmt.Fprintf(g.Stdout, "created %s/%s from %s\n", strings.TrimSuffix(jo.Dir, "/"), rel, path)
	return nil
}

// journalBuildOpts are the flags of 'hiro journal build'.
type journalBuildOpts struct {
	Out, Title, BaseURL string
	// Force replaces a site another journal built.
	Force bool
}

func newJournalBuildCmd(g *Globals, jo *journalOpts) *cobra.Command {
	o := &journalBuildOpts{}
	cmd := &cobra.Command{
		Use:   "build [--out DIR]",
		Short: "Render the journal as a static site and record what was published",
		Long: `Writes DIR/index.html (newest first), DIR/feed.atom, and for each entry
DIR/entries/<slug>.html with its JSON beside it, plus a redirecting page for each
alias. DIR is replaced as a whole; a non-empty DIR that is not a journal site is
refused, and so is the site of another journal (its .hiro-journal file names
another journal id, from that journal's journal-id file) unless --force is given.
Each entry's hash is then recorded in the journal's published.json.
Without --out, DIR is journal-site/ beside the journal directory
(.hiro/journal-site by default).`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runJournalBuild(c.Context(), g, jo, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "output directory (default: journal-site/ beside the journal directory)")
	f.StringVar(&o.Title, "title", journal.DefaultSiteTitle, "site title")
	f.StringVar(&o.BaseURL, "base-url", "", "absolute URL of the site root, for canonical links and the feed")
	f.BoolVar(&o.Force, "force", false, "replace the site in DIR even when another journal built it")
	return cmd
}

// runJournalBuild builds the site, then records the published entries;
// it refuses (exit 1, nothing built) when a published entry is gone or
// changed without a revision note.
func runJournalBuild(_ context.Context, g *Globals, jo *journalOpts, o *journalBuildOpts) error {
	if err := jo.resolve(g); err != nil {
		return err
	}
	if o.Out == "" {
		o.Out = filepath.Join(filepath.Dir(filepath.Clean(jo.Dir)), journalSiteName)
	}
	if o.BaseURL != "" && !strings.HasPrefix(o.BaseURL, "https://") && !strings.HasPrefix(o.BaseURL, "http://") {
		return UsageErrorf("journal build: --base-url %q: want an absolute http(s) URL", o.BaseURL)
	}
	j, err := journal.Load(jo.Dir)
	if err != nil {
		return UsageErrorf("journal build: %w", err)
	}
	// A published entry gone or changed without a revision note is what
	// 'journal check' fails on: the site is not built over it (it was, with
	// a warning, and the entry's page silently vanished or changed).
	pub, err := journal.ReadPublished(jo.Dir)
	if err != nil {
		return fmt.Errorf("journal build: %w", err)
	}
	if probs := pub.Unrevised(j.Entries); len(probs) > 0 {
		return FailedError(fmt.Errorf("journal build: %w\nnothing was built; fix these and run again", &journal.ProblemsError{Problems: probs}))
	}
	start := time.Now()
	res, err := journal.Build(j, o.Out, journal.BuildOptions{Title: o.Title, BaseURL: o.BaseURL, Force: o.Force})
	var pe *journal.ProblemsError
	switch {
	case errors.As(err, &pe):
		return FailedError(fmt.Errorf("journal build: %w\nnothing was built; fix these and run again", err))
	case errors.Is(err, journal.ErrNotSite), errors.Is(err, journal.ErrOtherJournal):
		return UsageErrorf("journal build: %w", err)
	case err != nil:
		return fmt.Errorf("journal build: %w", err)
	}
	elapsed := time.Since(start)
	if pub.Record(j.Entries) {
		if err := journal.WritePublished(jo.Dir, pub); err != nil {
			return fmt.Errorf("journal build: site built, but: %w", err)
		}
	}
	fmt.Fprintf(g.Stdout, "built %s and %s into %s (%s, %s); %s records %s\n",
		termtext.Plural(res.Entries, "entry", "entries"), termtext.Plural(res.Aliases, "alias", "aliases"), o.Out, termtext.Plural(res.Files, "file", "files"),
		elapsed.Round(time.Millisecond), journal.PublishedFile, termtext.Plural(len(pub.Entries), "published entry", "published entries"))
	return nil
}

// journalCheckOpts are the flags of 'hiro journal check'.
type journalCheckOpts struct {
	Out string
}

func newJournalCheckCmd(g *Globals, jo *journalOpts) *cobra.Command {
	o := &journalCheckOpts{}
	cmd := &cobra.Command{
		Use:   "check [--out DIR]",
		Short: "Check the journal and a built site: exit 1 listing the problems",
		Long: `Checks that timestamps and slugs are unique, that no alias collides with a
slug or another alias, that every entry validates against the entry schema, that
no published entry changed without a revision note, and that every internal link
of the site resolves. With --out the built site in DIR is checked (and must have
every entry's page, JSON and alias pages); without it a site is built into a
temporary directory for the link check.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runJournalCheck(c.Context(), g, jo, o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "built site to check (default: build one in a temporary directory)")
	return cmd
}

// runJournalCheck prints every problem, one per line, and fails (exit 1)
// when there is any.
func runJournalCheck(_ context.Context, g *Globals, jo *journalOpts, o *journalCheckOpts) error {
	if err := jo.resolve(g); err != nil {
		return err
	}
	j, err := journal.Load(jo.Dir)
	if err != nil {
		return UsageErrorf("journal check: %w", err)
	}
	if o.Out != "" {
		if st, err := os.Stat(o.Out); err != nil || !st.IsDir() {
			return UsageErrorf("journal check: --out %s is not a directory; build the site first with: hiro journal build --out %s", o.Out, shellquote.Quote(o.Out))
		}
	}
	r, err := journal.Check(j, o.Out)
	if err != nil {
		return fmt.Errorf("journal check: %w", err)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(g.Stdout, p)
	}
	if len(r.Problems) > 0 {
		return FailedError(fmt.Errorf("journal check: %d problem(s) in %s", len(r.Problems), jo.Dir))
	}
	fmt.Fprintf(g.Stdout, "journal OK: %s, %s; %s and %s checked\n", termtext.Plural(r.Entries, "entry", "entries"),
		termtext.Plural(r.Aliases, "alias", "aliases"), termtext.Plural(r.Pages, "page", "pages"), termtext.Plural(r.Links, "internal link", "internal links"))
	return nil
}
