package redact

import (
	"bytes"
	"io"
	"sync"
)

// maxLine bounds what Writer holds back waiting for the end of a line: a
// longer run without one is redacted and written as it is.
const maxLine = 64 << 10

// Writer passes what is written to it through Secrets, a line at a time,
// to the writer it wraps: hiro's terminal output (stdout, stderr), so that
// a secret in an engine's failure line, a bearer key in an error or a
// registered token in a progress line never reaches a terminal or a CI
// log. Paths are kept (they help the operator). A line ends at '\n' or
// '\r' (progress bars redraw with '\r'); Flush writes a partial one. Safe
// for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write redacts and writes every complete line of p (with what earlier
// writes left), holding back the rest. It reports len(p) written unless
// the wrapped writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\n\r")
		if i < 0 {
			break
		}
		if err := w.emit(w.buf[:i+1]); err != nil {
			return 0, err
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		if err := w.emit(w.buf); err != nil {
			return 0, err
		}
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *Writer) emit(b []byte) error {
	_, err := io.WriteString(w.w, Secrets(string(b)))
	return err
}

// Flush redacts and writes what is held back (a line without its end).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	err := w.emit(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Fd returns the file descriptor of the wrapped writer when it is a file
// (terminal detection: a progress bar is drawn only on a terminal), else
// an invalid one (^uintptr(0)).
func (w *Writer) Fd() uintptr {
	if f, ok := w.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// Unwrap returns the wrapped writer.
func (w *Writer) Unwrap() io.Writer { return w.w }
