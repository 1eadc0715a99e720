package extract

import (
	"io"
	"time"

	"github.com/hiro-dev/hiro/internal/termtext"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// TerminalProgress returns a Progress drawing a bar of sentences done on
// w when w is an *os.File open on a terminal, and nil otherwise, so that
// nothing extra reaches a pipe or a log file.
func TerminalProgress(w io.Writer) Progress {
	// A file, or a writer onto one (hiro's redacting stdout and stderr).
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &barProgress{w: w}
}

// barProgress adapts github.com/schollz/progressbar/v3; Add is safe for
// concurrent use.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(total, reused int) {
	desc := "extracting sentences"
	if reused > 0 {
		desc = "extracting sentences (" + termtext.Plural(reused, "document", "documents") + " reused)"
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
