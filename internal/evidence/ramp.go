package evidence

import "time"

// Ramp states (RampResult.State).
const (
	// RampRamping: a step is serving; the candidate gets Share of
	// production's requests.
	RampRamping = "ramping"
	// RampCompleted: the last step (share 1) passed; the activation
	// makes the candidate production.
	RampCompleted = "completed"
	// RampReversed: a step's comparison failed, the candidate went down,
	// or the activation that owned the ramp is gone: the router sent
	// every request back to production by itself.
	RampReversed = "reversed"
	// RampStopped: ended by command (hiro rollback, or the activation's
	// own stop); production serves every request.
	RampStopped = "stopped"
)

// Ramp decisions (RampStep.Decision).
const (
	RampAdvance  = "advance"
	RampHold     = "hold"
	RampReverse  = "reverse"
	RampComplete = "complete"
)

// RampResult (v3) is a progressive activation's account (docs/shadow.md
// "Progressive activation"): the shares of production's requests the
// router sent to the candidate step by step, each step's live comparison
// of the two backends, and how the ramp ended. The production record of
// the activation keeps it (production.Record.Ramp); it holds counts and
// rates, never request text.
type RampResult struct {
	// Candidate is the new backend, Production the one it replaces
	// (production until the ramp completes and the activation switches).
	Candidate  string `json:"candidate"`
	Production string `json:"production"`
	// Steps are the planned shares (fractions in (0, 1], the last 1);
	// Soak the least time a step serves (Go duration text); MinRequests
	// the fewest candidate requests a step advances on.
	Steps       []float64 `json:"steps"`
	Soak        string    `json:"soak"`
	MinRequests int       `json:"min_requests"`
	// State is one of the Ramp* states; Step the index in Steps of the
	// step serving (or the last one served), Share the candidate's share
	// now (0 once reversed or stopped).
	State string  `json:"state"`
	Step  int     `json:"step"`
	Share float64 `json:"share"`
	// Reason says why the ramp was reversed or stopped, in words.
	Reason string `json:"reason,omitempty"`
	// StartedAt and EndedAt bound the ramp (EndedAt nil while ramping).
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// History is every step served, in order, the last one the current.
	History []RampStep `json:"history"`
	// Resent counts the candidate's requests that failed before any byte
	// of their reply reached the client (a refused or broken connection,
	// the connection closed before the reply's first byte, HTTP 502 or
	// 503) and were sent to production instead: the client got
	// production's answer; each also counts as an error of the
	// candidate in its step. CutMidReply counts the candidate's replies
	// that broke after bytes had reached the client (a stream under way
	// cannot be resent): those clients got a cut reply. Zero (absent) in
	// records written before they existed.
	Resent      int `json:"resent,omitempty"`
	CutMidReply int `json:"cut_mid_reply,omitempty"`
	// Series is the ramp over time, one point per look (each health
	// interval, and each decision taken at once), oldest first: what the
	// journal's ramp chart draws. At most MaxRampPoints: a longer ramp
	// pools neighbouring points pairwise. Empty in records written before
	// it existed.
	Series []RampPoint `json:"series,omitempty"`
}

// MaxRampPoints bounds RampResult.Series: a 30-minute ramp at the default
// health interval fits without pooling, and a record stays small.
const MaxRampPoints = 720

// RampPoint is one look at a ramp: when (At), the candidate's share from
// then on (0 once reversed or stopped), and both sides' requests answered
// and failed since the previous point (the first point: since the ramp
// started).
type RampPoint struct {
	At                 time.Time `json:"at"`
	Share              float64   `json:"share"`
	CandidateRequests  int       `json:"candidate_requests"`
	CandidateErrors    int       `json:"candidate_errors"`
	ProductionRequests int       `json:"production_requests"`
	ProductionErrors   int       `json:"production_errors"`
}

// ErrorRate is the candidate's (else production's) failed share of its
// requests in the point, and whether that side answered any.
func (p RampPoint) ErrorRate(candidate bool) (float64, bool) {
	n, k := p.ProductionRequests, p.ProductionErrors
	if candidate {
		n, k = p.CandidateRequests, p.CandidateErrors
	}
	if n == 0 {
		return 0, false
	}
	return float64(k) / float64(n), true
}

// RampStep is one step served: its share, both sides' live requests in
// it, the comparison and what was decided on it.
type RampStep struct {
	Share     float64    `json:"share"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Candidate and Production are the requests each side answered in
	// the step.
	Candidate  RampSample `json:"candidate"`
	Production RampSample `json:"production"`
	// Decision is the last one taken on the step (a Ramp* decision) and
	// Reason says why; Checks are the comparisons it rests on.
	Decision string      `json:"decision"`
	Reason   string      `json:"reason,omitempty"`
	Checks   []RampCheck `json:"checks,omitempty"`
	// Looks counts the step's looks: the decisions that read its samples
	// (one each time the candidate's requests doubled, and one when the
	// soak ended).
	Looks int `json:"looks,omitempty"`
}

// RampSample is one side's requests in a step: how many it answered,
// how many failed (5xx, no answer, cut), the successful ones' end-to-end
// latency (ms), and of the replies that can be checked (extraction and
// response_format requests) how many were checked and how many were
// invalid (schema, or rejected by the extraction validators).
type RampSample struct {
	Requests int          `json:"requests"`
	Errors   int          `json:"errors"`
	Latency  *Percentiles `json:"latency_ms,omitempty"`
	Checked  int          `json:"checked,omitempty"`
	Invalid  int          `json:"invalid,omitempty"`
}

// RampCheck is one comparison of a step: the measure (error_rate,
// latency, invalid_rate), the candidate's and production's figures
// (rates, or median ms), the interval the decision read (for a rate the
// candidate's one-sided Clopper-Pearson bounds; for latency the
// Hodges-Lehmann shift candidate − production with its Moses interval,
// ms), the limit it was held to (production's rate plus the margin, or
// the latency floor) and its outcome: passed, failed or inconclusive.
type RampCheck struct {
	Measure    string  `json:"measure"`
	Candidate  float64 `json:"candidate"`
	Production float64 `json:"production"`
	Shift      float64 `json:"shift,omitempty"`
	Lower      float64 `json:"lower"`
	Upper      float64 `json:"upper"`
	Limit      float64 `json:"limit"`
	Outcome    string  `json:"outcome"`
	// Alpha is the one-sided error this check was held to: its look's
	// share of the step's α, split between the look's checks (package
	// ramp's LookAlpha). Absent in records written before the correction.
	Alpha float64 `json:"alpha,omitempty"`
}
