package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
)

// ReadBufferSize is the read size of each hashing worker in bytes (1 MiB):
// large enough that hashing, not system calls, bounds the speed. crypto/sha256
// uses the CPU's SHA instructions (x86 SHA-NI, ARMv8 SHA2) when present.
const ReadBufferSize = 1 << 20

// Progress receives hashing progress. Pin and Verify call Start once before
// hashing with the bytes to hash, Add from several goroutines as bytes are
// read, and Finish once at the end (also on error). A nil Progress shows
// nothing. TerminalProgress returns one that draws a bar.
type Progress interface {
	Start(totalBytes int64, files int)
	Add(n int64)
	Finish()
}

// hashed is the result of hashing one file.
type hashed struct {
	sha   string
	size  int64
	mtime time.Time
}

// hasher hashes entries in parallel.
type hasher struct {
	workers  int
	progress Progress
	// beforeHash, when set, is called with the entry's relative path after
	// the file was first stat'ed and before it is opened and read. Tests use
	// it to change a file during hashing deterministically.
	beforeHash func(rel string)
}

// workerCount is n when positive, else runtime.NumCPU(), and never more than
// the number of files.
func workerCount(n, files int) int {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	if n > files {
		n = files
	}
	if n < 1 {
		n = 1
	}
	return n
}

// hashAll hashes every entry, largest first, with at most h.workers files at
// a time. It returns results in the order of entries. The first error stops
// the other workers and is returned; ctx cancellation returns ctx's error.
func (h *hasher) hashAll(ctx context.Context, entries []*entry) ([]hashed, error) {
	out := make([]hashed, len(entries))
	if len(entries) == 0 {
		return out, nil
	}
	order := make([]int, len(entries))
	var total int64
	for i, e := range entries {
		order[i] = i
		total += e.size
	}
	// Largest first, so a big shard does not start last and run alone.
	sort.SliceStable(order, func(a, b int) bool { return entries[order[a]].size > entries[order[b]].size })

	if h.progress != nil {
		h.progress.Start(total, len(entries))
		defer h.progress.Finish()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workerCount(h.workers, len(entries)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, ReadBufferSize)
			for i := range jobs {
				r, err := h.hashOne(ctx, entries[i], buf)
				if err != nil {
					cancel(err)
					continue // drain
				}
				out[i] = r
			}
		}()
	}
feed:
	for _, i := range order {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// hashOne stats the file, hashes its content, and stats it again: a file
// whose size, modification time or identity changed meanwhile, or that did
// not yield exactly its size in bytes, is an ErrChanged error.
func (h *hasher) hashOne(ctx context.Context, e *entry, buf []byte) (hashed, error) {
	if err := ctx.Err(); err != nil {
		return hashed{}, err
	}
	before, err := os.Stat(e.abs)
	if err != nil {
		return hashed{}, fmt.Errorf("%w: %s: %v", ErrUnreadable, e.show, err)
	}
	if h.beforeHash != nil {
		h.beforeHash(e.rel)
	}
	f, err := os.Open(e.abs)
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrPermission) {
			hint = "; check its permissions (hiro needs to read every file it pins)"
		}
		return hashed{}, fmt.Errorf("%w: %s: %v%s", ErrUnreadable, e.show, err, hint)
	}
	defer f.Close()
	sum := sha256.New()
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return hashed{}, err
		}
		k, rerr := f.Read(buf)
		if k > 0 {
			sum.Write(buf[:k])
			n += int64(k)
			if h.progress != nil {
				h.progress.Add(int64(k))
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return hashed{}, fmt.Errorf("%w: %s: %v", ErrUnreadable, e.show, rerr)
		}
	}
	during, err := f.Stat()
	if err != nil {
		return hashed{}, fmt.Errorf("%w: %s: %v", ErrUnreadable, e.show, err)
	}
	after, err := os.Stat(e.abs)
	if err != nil {
		return hashed{}, fmt.Errorf("%w: %s disappeared while it was hashed: %v; wait for whatever is writing the directory to finish, then run again", ErrChanged, e.show, err)
	}
	if !os.SameFile(before, during) || !os.SameFile(before, after) {
		return hashed{}, fmt.Errorf("%w: %s was replaced by another file while it was hashed; wait for whatever is writing the directory to finish, then run again", ErrChanged, e.show)
	}
	if before.Size() != after.Size() || !before.ModTime().Equal(after.ModTime()) || n != before.Size() {
		return hashed{}, fmt.Errorf("%w: %s: size %d -> %d bytes (read %d), mtime %s -> %s; wait for whatever is writing it (a download, a copy) to finish, then run again",
			ErrChanged, e.show, before.Size(), after.Size(), n,
			before.ModTime().UTC().Format(time.RFC3339Nano), after.ModTime().UTC().Format(time.RFC3339Nano))
	}
	return hashed{sha: hex.EncodeToString(sum.Sum(nil)), size: n, mtime: before.ModTime()}, nil
}
