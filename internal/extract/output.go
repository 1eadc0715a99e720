package extract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/corpus"
)

// ErrRunMismatch means the output directory holds a run made with another
// backend, model, prompt or schema; resuming would mix them.
var ErrRunMismatch = errors.New("output directory holds a different run")

// ErrOutNotDir means the output path cannot be a directory: it, or a
// folder above it, is an existing file. It is the caller's mistake (bad
// usage), not a failure of the run.
var ErrOutNotDir = errors.New("the output path is not a directory")

// ErrOutBusy means another live run writes the output directory (it holds
// LockFile): two runs into one directory would truncate and interleave
// each other's files. The caller waits for it to end or picks another
// directory; nothing was written.
var ErrOutBusy = errors.New("the output directory is in use by another run")

// LockFile is the file of an output directory a run holds locked (flock,
// exclusive) from before it reads run.json until it ends; it holds the
// holder's pid and start time for the refusal's message. The kernel drops
// the lock when the holder dies, so a killed run leaves nothing to clean.
const LockFile = ".lock"

// outDir is an open output directory: the append-only claims and rejects
// files, the progress checkpoint, and what earlier runs finished.
type outDir struct {
	dir                     string
	lock                    *os.File
	claims, rejects, prog   *os.File
	claimsSize, rejectsSize int64
	// history is every progress line read at open, in order.
	history []DocProgress
}

// openOut prepares dir for a run described by info: it writes run.json on
// a fresh directory or checks it on resume, drops a torn last line of
// progress.jsonl, and truncates claims.jsonl and rejects.jsonl to the
// sizes of the last checkpoint, so a document written in part before an
// interruption leaves nothing behind.
func openOut(dir string, info RunInfo) (*outDir, error) {
	if err := checkOutDir(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s: a folder above it is a file; give a directory path for --out (a new one, or an earlier run's output directory to resume)", ErrOutNotDir, dir)
		}
		return nil, fmt.Errorf("output directory: %w", err)
	}
	lock, err := lockOut(dir)
	if err != nil {
		return nil, err
	}
	o, err := openLocked(dir, info)
	if err != nil {
		lock.Close()
		return nil, err
	}
	o.lock = lock
	return o, nil
}

// lockOut takes dir's LockFile (non-blocking) and writes this process's
// pid and start time into it; a held lock is an ErrOutBusy error naming
// the holder from the file.
func lockOut(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output directory lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "starting"
			}
			return nil, fmt.Errorf("%w: %s is being written by another hiro run (%s); wait for it to end and run the command again to resume from what it finished, or give another --out directory (nothing was written)", ErrOutBusy, dir, who)
		}
		return nil, fmt.Errorf("output directory lock %s: %w", path, err)
	}
	rec := fmt.Sprintf("pid %d, started %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	// The record only names the holder in a refusal: a failed write
	// leaves the lock as good.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(rec), 0)
	}
	return f, nil
}

// openLocked is openOut's work once the directory's lock is held.
func openLocked(dir string, info RunInfo) (*outDir, error) {
	runPath := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(runPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := strayOutputs(dir); err != nil {
			return nil, err
		}
		nb, _ := json.MarshalIndent(info, "", "  ")
		if err := corpus.WriteFileAtomic(runPath, append(nb, '\n')); err != nil {
			return nil, fmt.Errorf("write %s: %w", runPath, err)
		}
	case err != nil:
		return nil, err
	default:
		var prev RunInfo
		if err := json.Unmarshal(b, &prev); err != nil {
			return nil, fmt.Errorf("%s: %w", runPath, err)
		}
		if ds := RunDiffs(prev, info, true); len(ds) > 0 {
			var parts []string
			for _, d := range ds {
				parts = append(parts, fmt.Sprintf("%s was %s, now %s (%s)", d.Field, d.Old, d.New, d.Set))
			}
			return nil, fmt.Errorf("%w: %s was made with other settings: %s; resuming would mix outputs of different settings: rerun with the earlier settings to resume, or give a new --out directory for these",
				ErrRunMismatch, dir, strings.Join(parts, "; "))
		}
		if ps, is := shardName(prev.Shard), shardName(info.Shard); ps != is {
			return nil, fmt.Errorf("%w: %s holds %s; this run is %s; rerun with the same --shard to resume, or use another --out directory",
				ErrRunMismatch, dir, ps, is)
		}
	}
	o := &outDir{dir: dir}
	if err := o.readProgress(); err != nil {
		return nil, err
	}
	if n := len(o.history); n > 0 {
		o.claimsSize, o.rejectsSize = o.history[n-1].ClaimsBytes, o.history[n-1].RejectsBytes
	}
	o.claims, err = openTruncated(filepath.Join(dir, ClaimsFile), o.claimsSize)
	if err == nil {
		o.rejects, err = openTruncated(filepath.Join(dir, RejectsFile), o.rejectsSize)
	}
	if err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// freshOut reports whether dir holds no run yet (no run.json: a new run
// would claim it), without writing anything; it returns openOut's errors
// for a path that cannot be an output directory or holds outputs without
// a run.json.
func freshOut(dir string) (bool, error) {
	if err := checkOutDir(dir); err != nil {
		return false, err
	}
	if _, err := os.Stat(filepath.Join(dir, RunFile)); err == nil {
		return false, nil
	}
	if err := strayOutputs(dir); err != nil {
		return false, err
	}
	return true, nil
}

// strayOutputs returns an ErrRunMismatch error when dir, which has no
// run.json, holds an output file of a run.
func strayOutputs(dir string) error {
	for _, f := range []string{ClaimsFile, RejectsFile, ProgressFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%w: %s has %s but no %s; use an empty --out directory", ErrRunMismatch, dir, f, RunFile)
		}
	}
	return nil
}

// checkOutDir returns an ErrOutNotDir error when dir exists and is not a
// directory (a regular file, a device...), or lies under a file
// (atomicfile.CheckDirPath).
func checkOutDir(dir string) error {
	if err := atomicfile.CheckDirPath(dir); err != nil {
		return fmt.Errorf("%w: %v; give a directory path for --out (a new one, or an earlier run's output directory to resume)", ErrOutNotDir, err)
	}
	return nil
}

// readProgress reads progress.jsonl, keeps every complete line, and cuts
// the file after the last one (a line torn by a crash is dropped).
func (o *outDir) readProgress() error {
	path := filepath.Join(o.dir, ProgressFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	good := 0
	for len(b[good:]) > 0 {
		nl := bytes.IndexByte(b[good:], '\n')
		if nl < 0 {
			break
		}
		var p DocProgress
		if err := json.Unmarshal(b[good:good+nl], &p); err != nil || p.DocID == "" {
			break
		}
		o.history = append(o.history, p)
		good += nl + 1
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return err
	}
	o.prog = f
	return nil
}

// openTruncated opens path for appending after cutting it to size; a file
// shorter than size was damaged outside hiro and is an error.
func openTruncated(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() < size {
		err = fmt.Errorf("%s is %d bytes but the last checkpoint in %s recorded %d: the file was changed outside hiro; use a new --out directory", path, st.Size(), ProgressFile, size)
	}
	if err == nil && st.Size() > size {
		err = f.Truncate(size)
	}
	if err == nil {
		_, err = f.Seek(size, 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// docCommit is one finished document: its claims, rejects and checkpoint.
type docCommit struct {
	claims  []Claim
	rejects []Reject
	p       DocProgress
}

// commitGroup appends the documents' claims and rejects (one write per
// file), fsyncs both, then appends their checkpoint lines (one write) and
// fsyncs progress.jsonl: group commit. A crash before the last fsync
// leaves checkpoints for none or some of the group; resume truncates the
// claims and rejects to the last checkpoint, so a document is either
// wholly committed or redone. Each p's byte counts are filled in.
func (o *outDir) commitGroup(docs []docCommit) error {
	var cb, rb, pb bytes.Buffer
	for k := range docs {
		d := &docs[k]
		for i := range d.claims {
			if err := writeLine(&cb, &d.claims[i]); err != nil {
				return err
			}
		}
		for i := range d.rejects {
			if err := writeLine(&rb, &d.rejects[i]); err != nil {
				return err
			}
		}
		d.p.ClaimsBytes, d.p.RejectsBytes = o.claimsSize+int64(cb.Len()), o.rejectsSize+int64(rb.Len())
		if err := writeLine(&pb, &d.p); err != nil {
			return err
		}
	}
	// The two data files are written and synced at once: both must be
	// durable before any checkpoint names their sizes.
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := appendSync(o.rejects, rb.Bytes()); err != nil {
			rerr = fmt.Errorf("write %s: %w", RejectsFile, err)
		}
	}()
	cerr := appendSync(o.claims, cb.Bytes())
	wg.Wait()
	if cerr != nil {
		return fmt.Errorf("write %s: %w", ClaimsFile, cerr)
	}
	if rerr != nil {
		return rerr
	}
	o.claimsSize += int64(cb.Len())
	o.rejectsSize += int64(rb.Len())
	if err := appendSync(o.prog, pb.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", ProgressFile, err)
	}
	for k := range docs {
		o.history = append(o.history, docs[k].p)
	}
	return nil
}

// writeLine encodes v as one JSON line.
func writeLine(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	return enc.Encode(v)
}

// appendSync writes b at the file's end and fsyncs it; with nothing to
// write there is nothing to make durable and no fsync is made.
func appendSync(f *os.File, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Sync()
}

// latest returns, for each position of history, whether it is its
// document's latest checkpoint (a later run has not redone the document).
func latest(history []DocProgress) []bool {
	cur := make([]bool, len(history))
	seen := map[string]bool{}
	for i := len(history) - 1; i >= 0; i-- {
		if !seen[history[i].DocID] {
			seen[history[i].DocID] = true
			cur[i] = true
		}
	}
	return cur
}

// stats totals the checkpoint history: the output as it now is (each
// document's latest checkpoint) and the work of every run (requests,
// replies, tokens).
func (o *outDir) stats() Stats {
	var s Stats
	last := map[string]string{}
	var order []string
	cur := latest(o.history)
	for i, p := range o.history {
		if _, ok := last[p.DocID]; !ok {
			order = append(order, p.DocID)
		}
		last[p.DocID] = p.Status
		if cur[i] {
			s.Sentences += p.Sentences
			s.Claims += p.Claims
			s.Rejects += p.Rejects
			s.AddressesModel += p.AddressesModel
		} else {
			s.SupersededRejects += p.Rejects
		}
		s.Requests += p.Requests
		s.Replies += p.Replies
		s.SchemaValidReplies += p.SchemaValid
		s.CleanReplies += p.Clean
		s.PromptTokens += p.PromptTokens
		s.CompletionTokens += p.CompletionTokens
		s.OverloadRetries += p.OverloadRetries
		s.TimeoutRetries += p.TimeoutRetries
	}
	for _, id := range order {
		if last[id] == StatusDone {
			s.DocumentsDone++
		} else {
			s.DocumentsFailed++
		}
	}
	if s.Replies > 0 {
		s.SchemaValidRate = float64(s.SchemaValidReplies) / float64(s.Replies)
	}
	return s
}

// writeStats writes stats.json (StatsFileContent) atomically.
func (o *outDir) writeStats() (Stats, error) {
	s := o.stats()
	f := StatsFileContent{Stats: s, Checkpoints: len(o.history)}
	if n := len(o.history); n > 0 {
		f.ClaimsBytes = o.history[n-1].ClaimsBytes
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	return s, corpus.WriteFileAtomic(filepath.Join(o.dir, StatsFile), append(b, '\n'))
}

// done returns the documents whose last status is done, with their hash.
func (o *outDir) done() map[string]string {
	m := map[string]string{}
	for _, p := range o.history {
		if p.Status == StatusDone {
			m[p.DocID] = p.DocSHA256
		} else {
			delete(m, p.DocID)
		}
	}
	return m
}

func (o *outDir) close() {
	for _, f := range []*os.File{o.claims, o.rejects, o.prog, o.lock} {
		if f != nil {
			f.Close()
		}
	}
}

// shardName names a run's shard for messages.
func shardName(s *Shard) string {
	if s == nil || s.Count == 0 {
		return "an unsharded run"
	}
	return "shard " + s.String()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ReadClaims reads a claims.jsonl file.
func ReadClaims(path string) ([]Claim, error) { return readJSONL[Claim](path) }

// ReadRejects reads a rejects.jsonl file, superseded rejects included.
func ReadRejects(path string) ([]Reject, error) { return readJSONL[Reject](path) }

// ReadCurrentProgress reads the output directory dir's progress.jsonl and
// returns each document's latest checkpoint (the output as it now is),
// keyed by document id; a line that does not parse ends the history (a
// cut last line).
func ReadCurrentProgress(dir string) (map[string]DocProgress, error) {
	b, err := os.ReadFile(filepath.Join(dir, ProgressFile))
	if err != nil {
		return nil, err
	}
	out := map[string]DocProgress{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var p DocProgress
		if json.Unmarshal(line, &p) != nil || p.DocID == "" {
			break
		}
		out[p.DocID] = p
	}
	return out, nil
}

// ReadCurrentRejects reads the rejects of the output directory dir as it
// now is: the rejects written with each document's latest checkpoint, in
// file order. Rejects of a document that a later run redid (superseded)
// are left out; so is anything after the last checkpoint (a document
// written in part).
func ReadCurrentRejects(dir string) ([]Reject, error) {
	o := &outDir{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, ProgressFile))
	if err != nil {
		return nil, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var p DocProgress
		if json.Unmarshal(line, &p) != nil || p.DocID == "" {
			break
		}
		o.history = append(o.history, p)
	}
	raw, err := os.ReadFile(filepath.Join(dir, RejectsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cur := latest(o.history)
	var out []Reject
	var start int64
	for i, p := range o.history {
		end := p.RejectsBytes
		if end > int64(len(raw)) || end < start {
			return nil, fmt.Errorf("%s: checkpoint of %s records %d bytes of %s, the file has %d: it was changed outside hiro", ProgressFile, p.DocID, end, RejectsFile, len(raw))
		}
		if cur[i] {
			for n, line := range bytes.Split(bytes.TrimSuffix(raw[start:end], []byte("\n")), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var r Reject
				if err := json.Unmarshal(line, &r); err != nil {
					return nil, fmt.Errorf("%s (rejects of %s, line %d): %w", RejectsFile, p.DocID, n+1, err)
				}
				out = append(out, r)
			}
		}
		start = end
	}
	return out, nil
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
