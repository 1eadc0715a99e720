package artifact

import (
	"io"
	"time"

	"github.com/hiro-dev/hiro/internal/termtext"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// TerminalProgress returns a Progress that draws a bar on w (bytes hashed,
// total, rate and time left) when w is an *os.File open on a terminal, and
// nil otherwise, so that nothing extra is written to a pipe or a log file.
// description prefixes the bar, e.g. "hashing".
func TerminalProgress(w io.Writer, description string) Progress {
	// A file, or a writer onto one (hiro's redacting stdout and stderr).
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &barProgress{w: w, desc: description}
}

// barProgress adapts github.com/schollz/progressbar/v3 to Progress. The bar
// is safe for concurrent Add.
type barProgress struct {
	w    io.Writer
	desc string
	bar  *progressbar.ProgressBar
}

func (p *barProgress) Start(totalBytes int64, files int) {
	p.bar = progressbar.NewOptions64(totalBytes,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.desc+" "+termtext.Plural(files, "file", "files")),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Add(n int64) {
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
