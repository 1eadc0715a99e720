package extract

import (
	"strings"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// Window returns the prompt input for sentence i of ss: its heading path,
// up to prompt.ContextBefore sentences before it and prompt.ContextAfter
// after it (within the document).
func Window(ss []corpus.Sentence, i int) prompt.Input {
	lo := max(0, i-prompt.ContextBefore)
	hi := min(len(ss), i+1+prompt.ContextAfter)
	in := prompt.Input{HeadingPath: ss[i].HeadingPath, Target: ss[i].Text}
	for _, s := range ss[lo:i] {
		in.Before = append(in.Before, s.Text)
	}
	for _, s := range ss[i+1 : hi] {
		in.After = append(in.After, s.Text)
	}
	return in
}

// SourceFor returns what the reply for sentence i is validated against:
// the sentence (quotes) and its whole window (numbers, dates).
func SourceFor(ss []corpus.Sentence, i int, in prompt.Input) Source {
	parts := append([]string{}, in.HeadingPath...)
	parts = append(parts, in.Before...)
	parts = append(parts, in.Target)
	parts = append(parts, in.After...)
	return Source{Sentence: ss[i].Text, SentenceStart: ss[i].Start, Window: strings.Join(parts, "\n")}
}

// Messages renders the extraction chat for in: the system message and the
// user message, exactly as package prompt renders them.
func Messages(in prompt.Input) []llm.Message {
	return []llm.Message{
		{Role: "system", Content: prompt.System()},
		{Role: "user", Content: prompt.User(in)},
	}
}

// RepairMessage is the extra user turn after a failed reply: it lists what
// failed and asks for the whole answer again. The failed reply itself goes
// before it as an assistant turn.
func RepairMessage(o *Outcome) string {
	var b strings.Builder
	b.WriteString("Your reply failed validation:\n")
	for _, r := range o.Reasons() {
		b.WriteString("- ")
		b.WriteString(r)
		b.WriteByte('\n')
	}
	for _, r := range o.ReplyReasons {
		if r.Code == ReasonTruncated {
			b.WriteString("Your reply was cut off at the length limit: keep each claim short and do not repeat claims.\n")
			break
		}
	}
	b.WriteString("Reply again with JSON only, matching the schema, with every claim of the target sentence. Copy each quote exactly from the target sentence; use only numbers and dates that appear in the text.")
	return b.String()
}

// requestBytes is the size of a chat's message contents, the quantity
// Options.MaxRequestBytes bounds.
func requestBytes(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}
