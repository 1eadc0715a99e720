package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/hiro-dev/hiro/internal/failure"
)

// DiagnoseOptions is what is known of a log's attempt beyond the log.
type DiagnoseOptions struct {
	// Exit is how the process ended (the zero ExitInfo when unknown).
	Exit ExitInfo
	// RequiresAccelerator: the profile had requires_accelerator, so a log
	// that shows the model served by the CPU alone is the failure
	// (accelerator_unavailable, as 'hiro backend start' decides it),
	// whatever else the log says after.
	RequiresAccelerator bool
}

// Diagnosis is a log's diagnosis: the failure, and where the log shows
// the model served (the zero Device when it does not say).
type Diagnosis struct {
	Failure *failure.Failure
	Device  ServingDevice
}

// DiagnoseLog feeds every line of r to a Tracker of kind and classifies
// the end as Diagnose does; with o.RequiresAccelerator and a log showing
// CPU serving and no root-cause line, the end is the supervisor's refusal
// of that CPU fallback. Errors: an unknown kind (wrapping ErrUnknownKind),
// or reading r.
func DiagnoseLog(r io.Reader, kind string, o DiagnoseOptions) (Diagnosis, error) {
	e, err := Lookup(kind)
	if err != nil {
		return Diagnosis{}, err
	}
	t := e.NewTracker()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			t.Feed(line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Diagnosis{}, fmt.Errorf("reading the log: %w", err)
		}
	}
	dev := t.Device()
	out := Outcome{Kind: OutcomeExited, Exit: o.Exit}
	if o.RequiresAccelerator && dev.CPUOnly() {
		out = Outcome{Kind: OutcomeAcceleratorUnavailable, Exit: o.Exit, Device: dev}
	}
	return Diagnosis{Failure: t.Classify(out), Device: dev}, nil
}

// KindReading is how another engine kind reads a log (OtherKinds).
type KindReading struct {
	Kind    string
	Failure *failure.Failure
}

// OtherKinds diagnoses log with every registered kind but kind, and
// returns those whose verdict is strong (a specific rule matched its
// root-cause line), in Kinds order: when kind's own verdict explains
// nothing, a log another engine wrote (given the wrong --engine) says
// so. Unknown kinds cannot occur (the registry's own).
func OtherKinds(log []byte, kind string, o DiagnoseOptions) []KindReading {
	var out []KindReading
	for _, k := range Kinds() {
		if k == kind {
			continue
		}
		d, err := DiagnoseLog(bytes.NewReader(log), k, o)
		if err == nil && d.Failure != nil && d.Failure.Confidence == failure.ConfidenceStrong {
			out = append(out, KindReading{Kind: k, Failure: d.Failure})
		}
	}
	return out
}
