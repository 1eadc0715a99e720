package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Shard is a deterministic slice of the documents: Index in [0, Count).
// A document belongs to shard FNV-1a-64(document id) mod Count, so the
// split depends only on the ids (not on their order, nor on which other
// documents are given) and every document is in exactly one shard. The
// zero Shard (Count 0) is the whole input.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Documents is how many documents of the input fell in this shard
	// (what a complete shard has in its checkpoint).
	Documents int `json:"documents"`
}

// ParseShard parses "I/N" (0 <= I < N), the form of --shard: I is
// 0-based, like a Kubernetes Indexed Job's JOB_COMPLETION_INDEX.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("shard %q: write it as I/N with 0 <= I < N, e.g. 0/4 ... 3/4 for four shards", s)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Has reports whether document id belongs to the shard (always, for the
// zero Shard).
func (s Shard) Has(id string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

// MergeSummary is what Merge did.
type MergeSummary struct {
	OutDir string `json:"out_dir"`
	// Shards is the number of output directories merged; Documents the
	// documents in the merged checkpoint.
	Shards    int   `json:"shards"`
	Documents int   `json:"documents"`
	Stats     Stats `json:"stats"`
}

// mergeDoc is one document's last checkpoint in a shard, with its bytes.
type mergeDoc struct {
	p               DocProgress
	claims, rejects []byte
}

// Merge combines the output directories of the shards of one sharded run
// (hiro extract --shard I/N, every I of one N, each finished) into dst,
// which must not exist or be empty: the result is what one unsharded run
// over the same documents writes. Documents are ordered by their position
// in the input (DocProgress.DocIndex); each keeps its claims and rejects
// bytes as its shard wrote them; stats.json is recomputed. Errors: shards
// of different runs (backend, model, prompt, schema, settings), a missing,
// repeated or unfinished shard, or a directory that is not a shard.
func Merge(dst string, dirs []string) (*MergeSummary, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no output directories given")
	}
	if err := checkOutDir(dst); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var first RunInfo
	seen := map[int]string{}
	var docs []mergeDoc
	for k, dir := range dirs {
		info, err := readRunInfo(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if info.Shard == nil {
			// An unsharded run.json does not say how many documents the
			// run has, so its completeness cannot be checked; and there is
			// nothing to merge.
			return nil, fmt.Errorf("merge: %s is not a shard (its run.json has no shard): merge only the directories of hiro extract --shard I/N runs; an unsharded run needs no merge: score it with hiro eval --claims %s", dir, shellquote.Quote(filepath.Join(dir, ClaimsFile)))
		}
		if k == 0 {
			first = info
		} else if d := sameRun(first, info); d != "" {
			return nil, fmt.Errorf("merge: %s and %s are not shards of one run: %s", dirs[0], dir, d)
		}
		if info.Shard.Count != len(dirs) {
			given := termtext.Plural(len(dirs), "directory was", "directories were")
			return nil, fmt.Errorf("merge: %s is shard %s of %d, but %s given; give every shard of the run once", dir, info.Shard, info.Shard.Count, given)
		}
		if prev, dup := seen[info.Shard.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %s", prev, dir, info.Shard)
		}
		seen[info.Shard.Index] = dir
		got, err := shardDocs(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if len(got) != info.Shard.Documents {
			return nil, fmt.Errorf("merge: %s (shard %s) has committed %d of its %s; finish it first (rerun its hiro extract command, which resumes)", dir, info.Shard, len(got), termtext.Plural(info.Shard.Documents, "document", "documents"))
		}
		docs = append(docs, got...)
	}
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].p.DocIndex < docs[j].p.DocIndex })
	for i := 1; i < len(docs); i++ {
		if docs[i].p.DocID == docs[i-1].p.DocID || docs[i].p.DocIndex == docs[i-1].p.DocIndex {
			return nil, fmt.Errorf("merge: document %s (input position %d) is in two shards; were the shards run over different inputs?", docs[i].p.DocID, docs[i].p.DocIndex)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if ents, err := os.ReadDir(dst); err != nil || len(ents) > 0 {
		if err == nil {
			err = fmt.Errorf("%s is not empty; merge into a new directory", dst)
		}
		return nil, fmt.Errorf("merge: %w", err)
	}
	info := first
	info.Shard = nil
	ib, _ := json.MarshalIndent(info, "", "  ")
	var cb, rb, pb bytes.Buffer
	o := &outDir{dir: dst}
	for _, d := range docs {
		cb.Write(d.claims)
		rb.Write(d.rejects)
		p := d.p
		p.ClaimsBytes, p.RejectsBytes = int64(cb.Len()), int64(rb.Len())
		if err := writeLine(&pb, &p); err != nil {
			return nil, err
		}
		o.history = append(o.history, p)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{ClaimsFile, cb.Bytes()}, {RejectsFile, rb.Bytes()}, {ProgressFile, pb.Bytes()}, {RunFile, append(ib, '\n')}} {
		if err := corpus.WriteFileAtomic(filepath.Join(dst, f.name), f.b); err != nil {
			return nil, fmt.Errorf("merge: write %s: %w", f.name, err)
		}
	}
	st, err := o.writeStats()
	if err != nil {
		return nil, fmt.Errorf("merge: write %s: %w", StatsFile, err)
	}
	return &MergeSummary{OutDir: dst, Shards: len(dirs), Documents: len(docs), Stats: st}, nil
}

// readRunInfo reads dir's run.json.
func readRunInfo(dir string) (RunInfo, error) {
	var info RunInfo
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("%s has no %s: not a hiro extract output directory", dir, RunFile)
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	return info, nil
}

// sameRun says how a and b differ as runs (empty when they are shards of
// one run: RunDiffs finds nothing; the base URL may differ, one replica per
// shard).
func sameRun(a, b RunInfo) string {
	var parts []string
	for _, d := range RunDiffs(a, b, false) {
		parts = append(parts, fmt.Sprintf("%s %s vs %s", d.Field, d.Old, d.New))
	}
	return strings.Join(parts, "; ")
}

// shardDocs reads dir's checkpoint and returns each document's last
// checkpoint with the claims and rejects bytes it committed.
func shardDocs(dir string) ([]mergeDoc, error) {
	o := &outDir{dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, ProgressFile))
	if err != nil {
		return nil, err
	}
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			break // a torn last line is not a checkpoint
		}
		var p DocProgress
		if err := json.Unmarshal(line, &p); err != nil || p.DocID == "" {
			break
		}
		o.history = append(o.history, p)
	}
	claims, err := os.ReadFile(filepath.Join(dir, ClaimsFile))
	if err != nil {
		return nil, err
	}
	rejects, err := os.ReadFile(filepath.Join(dir, RejectsFile))
	if err != nil {
		return nil, err
	}
	last := map[string]int{}
	var prevC, prevR int64
	var out []mergeDoc
	for _, p := range o.history {
		if p.ClaimsBytes < prevC || p.RejectsBytes < prevR || p.ClaimsBytes > int64(len(claims)) || p.RejectsBytes > int64(len(rejects)) {
			return nil, fmt.Errorf("%s: checkpoint of %s names bytes its files do not have; the directory was changed outside hiro", dir, p.DocID)
		}
		d := mergeDoc{p: p, claims: claims[prevC:p.ClaimsBytes], rejects: rejects[prevR:p.RejectsBytes]}
		prevC, prevR = p.ClaimsBytes, p.RejectsBytes
		if i, ok := last[p.DocID]; ok {
			out[i] = d // a document redone after a failure: keep the last
			continue
		}
		last[p.DocID] = len(out)
		out = append(out, d)
	}
	return out, nil
}
