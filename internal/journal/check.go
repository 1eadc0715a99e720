package journal

import (
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Structural returns the problems that make a site impossible or wrong:
// every problem found while loading (schema, decoding, Entry.Validate),
// timestamps naming the same instant, slugs used twice, and aliases that
// collide with a slug or another alias. Sorted by Where.
func Structural(j *Journal) []Problem {
	probs := append([]Problem(nil), j.Problems...)
	byTime := map[string]*Stored{}
	owner := map[string]*Stored{} // slug → entry
	for _, e := range j.Entries {
		if o := byTime[e.ID()]; o != nil {
			probs = append(probs, Problem{e.Path, fmt.Sprintf("timestamp %s names the same instant as %s; timestamps must be unique", e.Timestamp.Format(time.RFC3339Nano), o.Path)})
		} else {
			byTime[e.ID()] = e
		}
		if o := owner[e.Slug]; o != nil {
			probs = append(probs, Problem{e.Path, fmt.Sprintf("slug %q is also the slug of %s; slugs must be unique", e.Slug, o.Path)})
		} else {
			owner[e.Slug] = e
		}
	}
	aliasOwner := map[string]*Stored{}
	for _, e := range j.Entries {
		for _, a := range e.Aliases {
			if o := owner[a]; o != nil && o != e {
				probs = append(probs, Problem{e.Path, fmt.Sprintf("alias %q is the slug of %s; an alias may not take another entry's page", a, o.Path)})
			}
			if o := aliasOwner[a]; o != nil && o != e {
				probs = append(probs, Problem{e.Path, fmt.Sprintf("alias %q is also an alias of %s; each old slug leads to one entry", a, o.Path)})
			} else {
				aliasOwner[a] = e
			}
		}
	}
	sort.SliceStable(probs, func(a, b int) bool { return probs[a].Where < probs[b].Where })
	return probs
}

// Report is the outcome of Check.
type Report struct {
	// Entries and Aliases count what the journal holds.
	Entries, Aliases int
	// Pages is the number of HTML files checked in the site; Links the
	// number of internal links (href, src, meta refresh) resolved.
	Pages, Links int
	// Problems lists everything wrong; empty means the journal is sound.
	Problems []Problem
}

// Check runs every journal check: Structural; published entries changed
// without a revision note (published.json); entries whose evidence copy in
// the journal contradicts itself (evidence.Consistent); and, in the site, that every
// entry and alias has its page and JSON, that each published JSON validates
// against the entry schema, and that every internal link resolves (file and
// #fragment). site is a built site to check; when empty,
// Check builds one into a temporary directory and removes it. The error is
// for I/O that stopped the check, not for problems found.
func Check(j *Journal, site string) (*Report, error) {
	r := &Report{Entries: len(j.Entries)}
	for _, e := range j.Entries {
		r.Aliases += len(e.Aliases)
	}
	r.Problems = Structural(j)
	buildable := len(r.Problems) == 0
	pub, err := ReadPublished(j.Dir)
	if err != nil {
		r.Problems = append(r.Problems, Problem{PublishedFile, err.Error()})
	} else {
		r.Problems = append(r.Problems, pub.Unrevised(j.Entries)...)
	}
	if !buildable && site == "" {
		r.Problems = append(r.Problems, Problem{"site", "links not checked: the site cannot be built until the problems above are fixed"})
		return r, nil
	}
	where := func(rel string) string { return filepath.Join(site, filepath.FromSlash(rel)) }
	if site == "" {
		tmp, err := os.MkdirTemp("", "hiro-journal-check-")
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		defer os.RemoveAll(tmp)
		if _, err := Build(j, tmp, BuildOptions{}); err != nil {
			return nil, fmt.Errorf("check: build: %w", err)
		}
		site = tmp
		// Problems in a temporary site are problems of the entry behind the page.
		bySlug := map[string]string{}
		for _, e := range j.Entries {
			bySlug[e.Slug] = e.Path
		}
		where = func(rel string) string {
			if s, ok := strings.CutPrefix(rel, SiteEntriesDir+"/"); ok {
				if p, ok := bySlug[strings.TrimSuffix(s, ".html")]; ok {
					return p + " (page " + rel + ")"
				}
			}
			return "site " + rel
		}
	}
	r.Problems = append(r.Problems, inconsistentEvidence(j)...)
	for _, e := range j.Entries {
		if !buildable {
			// 'hiro journal build' refuses until the problems above are
			// fixed: its pages' absence is not news, and rebuilding is
			// not the way out.
			break
		}
		for _, f := range []string{e.Slug + ".html", e.Slug + ".json"} {
			if !isFile(filepath.Join(site, SiteEntriesDir, f)) {
				r.Problems = append(r.Problems, Problem{e.Path, fmt.Sprintf("the site has no %s/%s; rebuild it with 'hiro journal build'", SiteEntriesDir, f)})
			}
		}
		if data, err := os.ReadFile(filepath.Join(site, SiteEntriesDir, e.Slug+".json")); err == nil {
			if err := ValidateJSON(data); err != nil {
				r.Problems = append(r.Problems, Problem{where(SiteEntriesDir + "/" + e.Slug + ".json"), "does not validate against the entry schema: " + oneLine(err.Error())})
			}
		}
		for _, a := range e.Aliases {
			if !isFile(filepath.Join(site, SiteEntriesDir, a+".html")) {
				r.Problems = append(r.Problems, Problem{e.Path, fmt.Sprintf("the site has no alias page %s/%s.html; rebuild it with 'hiro journal build'", SiteEntriesDir, a)})
			}
		}
	}
	pages, links, probs, err := CheckLinks(site)
	if err != nil {
		return nil, err
	}
	r.Pages, r.Links = pages, links
	for _, p := range probs {
		r.Problems = append(r.Problems, Problem{where(p.Where), p.Msg})
	}
	return r, nil
}

// inconsistentEvidence returns a problem for each entry whose evidence, a
// copy inside the journal, does not load or whose own facts contradict each
// other (evidence.Consistent): a page would publish a verdict its evidence
// refutes. Evidence behind a URL or missing is not read here (the link
// check reports a missing file).
func inconsistentEvidence(j *Journal) []Problem {
	var probs []Problem
	for _, e := range j.Entries {
		if e.Evidence == "" || strings.Contains(e.Evidence, "://") {
			continue
		}
		p := filepath.Join(j.Dir, filepath.FromSlash(e.Evidence))
		if !isFile(p) {
			continue
		}
		ev, err := evidence.Load(p)
		if err == nil {
			err = ev.Consistent()
		}
		if err != nil {
			probs = append(probs, Problem{e.Path, "its evidence " + e.Evidence + ": " + oneLine(err.Error())})
		}
	}
	return probs
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

var (
	linkAttr    = regexp.MustCompile(`\s(?:href|src)="([^"]*)"`)
	metaRefresh = regexp.MustCompile(`<meta http-equiv="refresh" content="[^"]*?url=([^"]*)"`)
	idAttr      = regexp.MustCompile(`\s(?:id|name)="([^"]*)"`)
)

// siteMarker is the content of SiteMarker: what Build knew about the site.
type siteMarker struct {
	Generator string `json:"generator"`
	BaseURL   string `json:"base_url"`
	// Journal is the base name of the journal's folder (for messages) and
	// JournalID its identity (IDFile): no path, so the site is the same
	// wherever the journal lies.
	Journal   string `json:"journal,omitempty"`
	JournalID string `json:"journal_id,omitempty"`
}

// CheckLinks resolves every internal link in the site at dir: href and src
// attributes and meta refresh targets in *.html files and hrefs in
// feed.atom. A link is internal when it has no scheme, or when it starts
// with the site's base URL (read from SiteMarker). It must name a file
// inside the site (a folder means its index.html) and, with a #fragment,
// an element with that id. It returns the number of pages and links checked
// and one Problem per broken link, Where being the file relative to dir.
func CheckLinks(dir string) (pages, links int, probs []Problem, err error) {
	var mk siteMarker
	if b, err := os.ReadFile(filepath.Join(dir, SiteMarker)); err == nil {
		_ = json.Unmarshal(b, &mk) // an old or hand-made marker: no base URL
	}
	ids := map[string]map[string]bool{}
	idsOf := func(rel string) map[string]bool {
		if m, ok := ids[rel]; ok {
			return m
		}
		m := map[string]bool{}
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
			for _, s := range idAttr.FindAllSubmatch(b, -1) {
				m[html.UnescapeString(string(s[1]))] = true
			}
		}
		ids[rel] = m
		return m
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".html") || filepath.Base(p) == FeedFile) {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return 0, 0, nil, fmt.Errorf("check links: %w", err)
	}
	sort.Strings(files)
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return 0, 0, nil, fmt.Errorf("check links: %w", err)
		}
		if strings.HasSuffix(rel, ".html") {
			pages++
		}
		var refs []string
		for _, m := range linkAttr.FindAllSubmatch(data, -1) {
			refs = append(refs, html.UnescapeString(string(m[1])))
		}
		for _, m := range metaRefresh.FindAllSubmatch(data, -1) {
			refs = append(refs, html.UnescapeString(string(m[1])))
		}
		for _, ref := range refs {
			if mk.BaseURL != "" && strings.HasPrefix(ref, mk.BaseURL) {
				ref = "/" + strings.TrimPrefix(ref, mk.BaseURL)
			} else if u, err := url.Parse(ref); err != nil {
				probs = append(probs, Problem{rel, fmt.Sprintf("link %q does not parse: %v", ref, err)})
				continue
			} else if u.Scheme != "" || u.Host != "" {
				continue // external
			}
			links++
			if msg := resolve(dir, rel, ref, idsOf); msg != "" {
				probs = append(probs, Problem{rel, msg})
			}
		}
	}
	return pages, links, probs, nil
}

// resolve checks one internal link ref found in the file rel; a leading
// "/" means the site root. It returns "" when it resolves.
func resolve(dir, rel, ref string, idsOf func(string) map[string]bool) string {
	u, err := url.Parse(ref)
	if err != nil {
		return fmt.Sprintf("link %q does not parse: %v", ref, err)
	}
	target := rel
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			target = path.Clean(strings.TrimPrefix(u.Path, "/"))
		} else {
			target = path.Join(path.Dir(rel), u.Path)
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			return fmt.Sprintf("link %q leaves the site", ref)
		}
		full := filepath.Join(dir, filepath.FromSlash(target))
		if st, err := os.Stat(full); err == nil && st.IsDir() {
			target = path.Join(target, "index.html")
			full = filepath.Join(full, "index.html")
		}
		if !isFile(full) {
			return fmt.Sprintf("link %q: no such file %s in the site", ref, target)
		}
	}
	if u.Fragment != "" {
		if !strings.HasSuffix(target, ".html") {
			return ""
		}
		if !idsOf(target)[u.Fragment] {
			return fmt.Sprintf("link %q: %s has no element with id %q", ref, target, u.Fragment)
		}
	}
	return ""
}
