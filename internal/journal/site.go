package journal

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/feeds"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// DefaultSiteTitle is the site title when BuildOptions.Title is empty.
const DefaultSiteTitle = "hiro development journal"

// Site layout, relative to the output directory.
const (
	// SiteMarker marks a directory as a built journal site; Build only
	// empties an existing non-empty output directory that holds it.
	SiteMarker = ".hiro-journal"
	// SiteEntriesDir holds <slug>.html, <slug>.json and <alias>.html.
	SiteEntriesDir = "entries"
	// FeedFile is the Atom feed at the site root.
	FeedFile = "feed.atom"
)

//go:embed templates
var templateFS embed.FS

var (
	tmplOnce sync.Once
	tmpls    *template.Template
	siteCSS  template.CSS
)

func templates() (*template.Template, template.CSS) {
	tmplOnce.Do(func() {
		tmpls = template.Must(template.ParseFS(templateFS, "templates/*.html"))
		css, err := templateFS.ReadFile("templates/style.css")
		if err != nil {
			panic(err)
		}
		// The stylesheet is a constant of this package, not input.
		siteCSS = template.CSS(css)
	})
	return tmpls, siteCSS
}

// BuildOptions configures Build.
type BuildOptions struct {
	// Title is the site title; DefaultSiteTitle when empty.
	Title string
	// BaseURL is the absolute URL of the site root (e.g.
	// https://example.org/journal/). When set, canonical links and the feed
	// use absolute URLs; when empty they are relative.
	BaseURL string
	// Force replaces a site that another journal built (its SiteMarker
	// names another journal id); without it Build refuses with
	// ErrOtherJournal.
	Force bool
}

// BuildResult counts what Build wrote.
type BuildResult struct {
	// Entries is the number of entry pages (each with its JSON beside it).
	Entries int
	// Aliases is the number of alias pages.
	Aliases int
	// Files is every file written, relative to the output directory.
	Files int
}

// ErrNotSite is wrapped when the output directory is not empty and holds no
// SiteMarker: Build refuses to delete what it did not write.
var ErrNotSite = errors.New("not empty and not a journal site")

// ErrOtherJournal is wrapped when the output directory is the site of
// another journal (its SiteMarker records another journal id) and
// BuildOptions.Force is not set: two journals would overwrite one site.
var ErrOtherJournal = errors.New("the site of another journal")

// ProblemsError is returned by Build when the journal has problems that make
// a site impossible or wrong (bad entry files, colliding slugs).
type ProblemsError struct{ Problems []Problem }

func (e *ProblemsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the journal:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Build renders j into out: index.html (newest first), feed.atom,
// entries/<slug>.html with entries/<slug>.json beside it,
// entries/<alias>.html for each alias, and a copy of the journal's
// evidence/ folder. The output is a function of the entries and opts only
// (no clock, sorted everywhere), so two builds are byte-identical.
//
// It fails with *ProblemsError when j has problems (see Structural), and
// wraps ErrNotSite when out is a non-empty directory it did not build.
// An existing site in out is replaced: files written again are overwritten
// in place, and files that are no longer part of the site are removed.
func Build(j *Journal, out string, opts BuildOptions) (*BuildResult, error) {
	if probs := Structural(j); len(probs) > 0 {
		return nil, &ProblemsError{probs}
	}
	if opts.Title == "" {
		opts.Title = DefaultSiteTitle
	}
	if opts.BaseURL != "" && !strings.HasSuffix(opts.BaseURL, "/") {
		opts.BaseURL += "/"
	}
	id, err := ID(j.Dir)
	if err != nil {
		return nil, err
	}
	owner := siteMarker{Generator: "hiro journal build (this directory is replaced on each build)", BaseURL: opts.BaseURL,
		Journal: filepath.Base(filepath.Clean(j.Dir)), JournalID: id}
	old, err := prepareOut(out, owner, opts.Force)
	if err != nil {
		return nil, err
	}
	for _, e := range j.Entries {
		// The site is public: every entry passes through package redact
		// (entries written by hand or by an older hiro too).
		redact.Value(&e.Entry)
	}
	b := &builder{out: out, opts: opts, entries: j.Entries, dir: j.Dir, journalID: id, old: old, written: map[string]bool{}}
	b.tmpl, b.css = templates()
	if err := b.run(j); err != nil {
		return nil, err
	}
	if err := b.removeStale(); err != nil {
		return nil, err
	}
	return &BuildResult{Entries: len(j.Entries), Aliases: b.aliases, Files: b.files}, nil
}

// prepareOut makes sure out is a directory Build may write: missing, empty,
// or a site it built before (it holds SiteMarker) for the same journal
// (the marker's journal id is mk's, or it has none: a site of a hiro
// older than journal ids), or for another one when force is set. It
// writes mk as the new marker and returns the files of
// an earlier site (relative, slash-separated) so that Build can remove those
// it does not write again; files it writes again are overwritten in place,
// which on a slow disk is several times cheaper than deleting and creating.
func prepareOut(out string, mk siteMarker, force bool) (map[string]bool, error) {
	des, err := os.ReadDir(out)
	old := map[string]bool{}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("output directory: %w", err)
	case len(des) > 0:
		b, err := os.ReadFile(filepath.Join(out, SiteMarker))
		if err != nil {
			return nil, fmt.Errorf("output directory %s: %w (no %s file); choose a new or empty directory", out, ErrNotSite, SiteMarker)
		}
		var was siteMarker
		_ = json.Unmarshal(b, &was) // an unreadable marker is an old site's: no journal to protect
		if was.JournalID != "" && was.JournalID != mk.JournalID && !force {
			return nil, fmt.Errorf("output directory %s is %w: journal %q (id %s in its %s file), not this journal %q (id %s); building here would replace its pages: give this journal its own folder with --out, or pass --force to replace that site",
				out, ErrOtherJournal, was.Journal, was.JournalID, IDFile, mk.Journal, mk.JournalID)
		}
		err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(out, p)
				old[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(out, SiteEntriesDir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	mb, _ := json.Marshal(mk)
	if err := os.WriteFile(filepath.Join(out, SiteMarker), append(mb, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	delete(old, SiteMarker)
	return old, nil
}

// removeStale deletes the files of an earlier build that this build did not
// write, then any folder left empty.
func (b *builder) removeStale() error {
	var dirs []string
	for _, rel := range sortedKeys(b.old) {
		if b.written[rel] {
			continue
		}
		if err := os.Remove(filepath.Join(b.out, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale page: %w", err)
		}
		dirs = append(dirs, filepath.Dir(filepath.Join(b.out, filepath.FromSlash(rel))))
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		for d := dirs[i]; d != filepath.Clean(b.out) && len(d) > len(filepath.Clean(b.out)); d = filepath.Dir(d) {
			if os.Remove(d) != nil { // fails unless empty: that is the point
				break
			}
		}
	}
	return nil
}

type builder struct {
	out     string
	dir     string // the journal's directory (evidence for the pictures)
	opts    BuildOptions
	entries []*Stored
	tmpl    *template.Template
	css     template.CSS
	// journalID is the journal's identity (IDFile; "" for a journal
	// without one), in the feed's and entries' Atom ids.
	journalID string

	old     map[string]bool // files of an earlier build
	mu      sync.Mutex
	written map[string]bool // files of this build
	files   int
	aliases int
}

// write writes one site file. A file an earlier build left with the same
// content is not rewritten: that keeps its modification time (so a sync to a
// web server sends only what changed) and spares the disk a truncate.
func (b *builder) write(rel string, data []byte) error {
	data = publicSiteBytes(rel, data)
	path := filepath.Join(b.out, filepath.FromSlash(rel))
	same := false
	if b.old[rel] {
		cur, err := os.ReadFile(path)
		same = err == nil && bytes.Equal(cur, data)
	}
	if !same {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write site: %w", err)
		}
	}
	b.mu.Lock()
	b.files++
	b.written[rel] = true
	b.mu.Unlock()
	return nil
}

func (b *builder) run(j *Journal) error {
	site := siteView{Title: b.opts.Title, CSS: b.css}
	views := make([]*entryView, len(b.entries))

	// Render and write every entry's files in parallel: each worker owns a
	// goldmark instance. Twice as many workers as CPUs, because much of the
	// time is spent blocked in file-system calls.
	workers := min(2*runtime.GOMAXPROCS(0), max(1, len(b.entries)))
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md := newMarkdown()
			var buf bytes.Buffer
			for i := range next {
				v, err := b.entryView(md, i)
				if err == nil {
					views[i] = v
					err = b.entryFiles(&buf, site, v, i)
				}
				if err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	for i := range b.entries {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := b.tmpl.ExecuteTemplate(&buf, "index.html", pageData{
		Site: site, Root: "", PageTitle: site.Title, Canonical: b.abs("index.html"), Entries: views,
	}); err != nil {
		return fmt.Errorf("render index: %w", err)
	}
	if err := b.write("index.html", buf.Bytes()); err != nil {
		return err
	}
	if err := b.feed(views); err != nil {
		return err
	}
	return b.copyEvidence(j.Dir)
}

// abs is the canonical URL of a site path: absolute when BaseURL is set,
// empty otherwise (a page needs no relative canonical link to itself).
func (b *builder) abs(rel string) string {
	if b.opts.BaseURL == "" {
		return ""
	}
	return b.opts.BaseURL + rel
}

func (b *builder) entryFiles(buf *bytes.Buffer, site siteView, v *entryView, i int) error {
	e := b.entries[i]
	buf.Reset()
	if err := b.tmpl.ExecuteTemplate(buf, "entry.html", pageData{
		Site: site, Root: "../", PageTitle: e.Title + " · " + site.Title,
		Canonical: b.abs(SiteEntriesDir + "/" + e.Slug + ".html"), Entry: v,
	}); err != nil {
		return fmt.Errorf("render %s: %w", e.Path, err)
	}
	if err := b.write(SiteEntriesDir+"/"+e.Slug+".html", buf.Bytes()); err != nil {
		return err
	}
	data, err := MarshalEntry(&e.Entry)
	if err != nil {
		return err
	}
	if err := b.write(SiteEntriesDir+"/"+e.Slug+".json", data); err != nil {
		return err
	}
	for _, a := range e.Aliases {
		buf.Reset()
		canon := b.abs(SiteEntriesDir + "/" + e.Slug + ".html")
		if canon == "" {
			canon = e.Slug + ".html"
		}
		if err := b.tmpl.ExecuteTemplate(buf, "alias.html", aliasData{
			Title: e.Title, Target: e.Slug + ".html", Canonical: canon,
		}); err != nil {
			return fmt.Errorf("render alias %s of %s: %w", a, e.Path, err)
		}
		if err := b.write(SiteEntriesDir+"/"+a+".html", buf.Bytes()); err != nil {
			return err
		}
		b.mu.Lock()
		b.aliases++
		b.mu.Unlock()
	}
	return nil
}

// urn is the Atom id of what (an entry's ID, or "feed") in this
// journal: urn:hiro-journal:<journal id>:<what>, without the journal id
// for a journal that has none.
func (b *builder) urn(what string) string {
	if b.journalID == "" {
		return "urn:hiro-journal:" + what
	}
	return "urn:hiro-journal:" + b.journalID + ":" + what
}

// feed writes feed.atom: every entry, newest first, its summary as the
// Atom summary. Ids are urn:hiro-journal:<journal id>:<entry ID> (the
// feed's urn:hiro-journal:<journal id>), so that they survive a slug
// change and two journals' feeds stay two in a reader; updated is the
// last revision's time or the entry's.
func (b *builder) feed(views []*entryView) error {
	f := &feeds.Feed{
		Title:       b.opts.Title,
		Link:        &feeds.Link{Href: b.opts.BaseURL + "index.html", Rel: "alternate"},
		Description: "Timestamped entries of a hiro development journal",
	}
	for i, e := range b.entries {
		updated := e.Timestamp
		for _, r := range e.Revisions {
			if r.Timestamp.After(updated) {
				updated = r.Timestamp
			}
		}
		if updated.After(f.Updated) {
			f.Updated = updated
		}
		var sum strings.Builder
		for _, p := range views[i].Summary {
			sum.WriteString("<p>" + html.EscapeString(p) + "</p>")
		}
		if sum.Len() == 0 && e.Subtitle != "" {
			sum.WriteString("<p>" + html.EscapeString(e.Subtitle) + "</p>")
		}
		f.Items = append(f.Items, &feeds.Item{
			Title:       e.Title,
			Link:        &feeds.Link{Href: b.opts.BaseURL + SiteEntriesDir + "/" + e.Slug + ".html"},
			Id:          b.urn(e.ID()),
			Created:     e.Timestamp,
			Updated:     updated,
			Description: sum.String(),
		})
	}
	if f.Updated.IsZero() {
		f.Updated = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // empty journal: a fixed time keeps the output deterministic
	}
	af := (&feeds.Atom{Feed: f}).AtomFeed()
	af.Id = b.urn("feed")
	if b.opts.BaseURL != "" {
		af.Id = b.opts.BaseURL
	}
	af.Link = &feeds.AtomLink{Href: b.opts.BaseURL + FeedFile, Rel: "self"}
	s, err := feeds.ToXML(af)
	if err != nil {
		return fmt.Errorf("render feed: %w", err)
	}
	return b.write(FeedFile, []byte(s+"\n"))
}

// copyEvidence copies the journal's evidence/ folder into the site.
func (b *builder) copyEvidence(dir string) error {
	src := filepath.Join(dir, EvidenceDir)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("copy evidence: %w", err)
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(b.out, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("copy evidence: %w", err)
		}
		return b.write(filepath.ToSlash(rel), data)
	})
}

func newMarkdown() goldmark.Markdown {
	// Raw HTML stays disabled (goldmark's default): no markup of an entry
	// is rendered, and javascript: links are not rendered as links. What
	// Markdown parses as raw HTML (a <script> line, <details>, the
	// placeholders of redacted text: <redacted>, <home>) is shown as its
	// text, escaped (rawHTMLRenderer), never dropped.
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(rawHTMLRendering)))
}

func renderMarkdown(md goldmark.Markdown, src string) (template.HTML, error) {
	if strings.TrimSpace(src) == "" {
		return "", nil
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		return "", err
	}
	// goldmark ran without WithUnsafe: its output holds no raw HTML from src.
	return template.HTML(buf.String()), nil
}

// publicSiteBytes is the last redaction step of every site file (package
// redact): HTML and the Atom feed as markup (placeholders escaped), the
// copied evidence structurally (its JSON stays valid), entry JSON as it is
// (entries are redacted before rendering).
func publicSiteBytes(rel string, data []byte) []byte {
	switch {
	case strings.HasSuffix(rel, ".html") || strings.HasSuffix(rel, ".atom") || strings.HasSuffix(rel, ".xml"):
		return redact.HTML(data)
	case strings.HasPrefix(rel, EvidenceDir+"/") && strings.HasSuffix(rel, ".json"):
		var ev evidence.Evidence
		if err := json.Unmarshal(data, &ev); err != nil || (ev.Schema != evidence.SchemaID && ev.Schema != evidence.SchemaV2) {
			return redact.Text(data)
		}
		return publicEvidence(&ev, data)
	}
	return data
}
