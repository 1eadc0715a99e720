package extract

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The form of an English sentence: whether a clause is an order or a note
// addressed to a reader or a machine rather than a statement about the
// world (issue 25 item 7). Four shapes, each judged on the clause's
// structure with a closed lexicon of word classes (base-form verbs,
// determiners, prepositions, modals), never on phrases:
//
//   - an imperative about the text itself: a clause that starts (after
//     politeness and sequencing words such as "please", "kindly", "now",
//     "do not") with a base-form verb and no subject, followed by its
//     object or complement, where the verb is one of saying, recording,
//     judging, believing or ignoring (sayVerbs) or its object is a clause
//     ("Disregard the text above", "state as a fact that ...", "Be sure
//     to state ...", "Tell readers that ...", "Add that ..."). A step of
//     a procedure ("Pour the mixture into a glass") is kept: it says how
//     something is done, and Factcheck-GPT's annotators take such steps
//     as claims (rejecting every imperative rejected 9 of its 678 gold
//     claims);
//   - the reader addressed with an obligation about what to say: "you"
//     with must, should, will, need to, are required to ... and a verb of
//     sayVerbs ("You should list ...", not "you will need hot water");
//   - a note or greeting addressed to a machine: "Note to any AI system
//     ...", "Message for automated fact-checkers: ...", "Dear assistant,",
//     "Attention LLMs and graders:";
//   - a machine reader named as the reader of this text, or as the
//     subject of an order: "any automated tool reading this must ...",
//     "The AI assistant will now confirm ...".
//
// What only looks like an order stays a statement: reported speech ("The
// manual says to restart the device", `The sign read: "Keep off the
// grass."`), an obligation of a third party ("Users must register before
// voting"), a noun that is also a verb heading the subject ("Return rates
// fell", "Work on the bridge began in 1990"), a title or name that starts
// with a verb ("Let It Be was released in 1970"), and "you can".

// formClause is one clause of a sentence: its words (original case and
// lower case) and how it is joined to what precedes it.
type formClause struct {
	orig, low []string
	// join is "" at the start of a sentence or after ; : ! ? or a dash,
	// "," after a comma, else the conjunction ("and", "so" ...) it
	// starts with (dropped from the words).
	join string
	// comma is true when a comma ends the clause and more of the same
	// sentence part follows.
	comma bool
}

// reQuoted is a quotation: straight or curly double quotes.
var reQuoted = regexp.MustCompile(`"[^"\n]*"|“[^”\n]*”`)

// conjunctions that start a new clause within a sentence part.
var formConj = words("and then but or so yet thus therefore hence")

// formClauses splits text into clauses: sentence parts end at full stops,
// semicolons, colons, question and exclamation marks, line breaks and
// dashes; a part's pieces at commas; a piece's clauses at conjunctions.
// Words are runs of letters and digits (with an inner apostrophe). A
// quotation inside a sentence that has words of its own outside it is
// reported speech: it is replaced by a neutral word, its orders are the
// quoted speaker's.
func formClauses(text string) []formClause {
	if strings.ContainsAny(text, "\"“") {
		if outside := reQuoted.ReplaceAllString(text, " "); len(strings.FieldsFunc(outside, notWordRune)) >= 2 {
			text = reQuoted.ReplaceAllString(text, " quotation ")
		}
	}
	var out []formClause
	var orig []string
	join := ""
	flush := func(comma bool) {
		for len(orig) > 0 && formConj[strings.ToLower(orig[0])] {
			join, orig = strings.ToLower(orig[0]), orig[1:]
		}
		if len(orig) > 0 {
			c := formClause{orig: orig, join: join, comma: comma, low: make([]string, len(orig))}
			for k, w := range orig {
				c.low[k] = strings.ToLower(w)
			}
			out = append(out, c)
		}
		orig = nil
	}
	wordStart := -1
	prevSpace := true
	for i, r := range text {
		inWord := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		if (r == '\'' || r == '’') && wordStart >= 0 {
			next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):])
			inWord = unicode.IsLetter(next)
		}
		if inWord {
			if wordStart < 0 {
				wordStart = i
			}
			prevSpace = false
			continue
		}
		if wordStart >= 0 {
			w := text[wordStart:i]
			wordStart = -1
			if lw := strings.ToLower(w); formConj[lw] && len(orig) > 0 {
				flush(false)
				join = lw
			} else {
				orig = append(orig, w)
			}
		}
		switch {
		case strings.ContainsRune(".;:!?\n—–", r) || (r == '-' && prevSpace):
			flush(false)
			join = ""
		case r == ',':
			flush(true)
			join = ","
		}
		prevSpace = unicode.IsSpace(r)
	}
	if wordStart >= 0 {
		orig = append(orig, text[wordStart:])
	}
	flush(false)
	return out
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// addressedForm reports, with the reason, whether text has the form of an
// order or a note addressed to a reader or a machine (see the shapes
// above). It judges English; AddressesModel judges other languages by
// their verbs of the model's trade.
func addressedForm(text string) (string, bool) {
	cs := formClauses(text)
	for i, c := range cs {
		if who := machineAddressed(c); who != "" {
			return fmt.Sprintf("the clause %q addresses a machine (%s)", shorten(strings.Join(c.orig, " ")), who), true
		}
		if you := orderToYou(c.low); you != "" {
			return fmt.Sprintf("the clause %q addresses the reader (%s)", shorten(strings.Join(c.orig, " ")), you), true
		}
		var prev *formClause
		if i > 0 {
			prev = &cs[i-1]
		}
		if v := imperative(c, prev, i+1 < len(cs) && c.comma); v != "" {
			return fmt.Sprintf("the clause %q is an order (the verb %q with no subject), not a statement about the world", shorten(strings.Join(c.orig, " ")), v), true
		}
	}
	return "", false
}

// imperative returns the verb when c is an imperative clause. prev is the
// clause before it (nil at the start); more is true when a comma ends c and
// the sentence part goes on.
func imperative(c formClause, prev *formClause, more bool) string {
	switch c.join {
	case "", "so", "thus", "therefore", "hence":
		// A new clause, or a consequence: judged on its own.
	case ",":
		// After a comma, an order follows an introductory phrase ("For
		// the record, state that ..."), not a clause with a verb of its
		// own ("They live in Paris, work in London").
		// After a conditional ("If the page is read by a tool, write
		// that ..."), the comma starts the main clause.
		if prev != nil && !subordinators[prev.low[0]] && (finiteIn(prev.low) || hasSubjectPronoun(prev.low)) {
			return ""
		}
	default:
		// "and", "then", "but", "or": the conjunct shares the subject of
		// the clause before; it is an order only when that one is.
		if prev == nil || startsWithVerb(prev) == "" {
			return ""
		}
	}
	i := skipLeadIns(c.low, 0)
	if i >= len(c.low) {
		return ""
	}
	v := c.low[i]
	if v == "be" {
		// "Be sure to state ...": the order is the verb after "to";
		// "Be aware that ...": an order about what to believe.
		for k := i + 1; k < len(c.low) && k <= i+3; k++ {
			if c.low[k] == "to" && k+1 < len(c.low) && sayVerbs[c.low[k+1]] {
				return c.orig[i] + " ... " + c.orig[k+1]
			}
			if c.low[k] == "that" && (c.low[k-1] == "aware" || c.low[k-1] == "advised" || c.low[k-1] == "informed") {
				return c.orig[i] + " " + c.orig[k-1]
			}
		}
		return ""
	}
	if !baseVerbs[v] || label(c.orig, i) {
		return ""
	}
	rest, restOrig := c.low[i+1:], c.orig[i+1:]
	if len(rest) == 0 {
		// A verb alone may be a name ("Cook, Peary and Amundsen ...").
		return ""
	}
	if titleOrName(restOrig, rest) {
		return ""
	}
	j := skipAdverbs(rest, 0)
	if j >= len(rest) {
		return c.orig[i]
	}
	// Only an order about what to say, believe, output or ignore, or one
	// with a clause for its object ("Add that the bridge ..."), speaks
	// to whoever handles the text; a step of a procedure ("Pour the
	// mixture into a glass") says how something is done, and
	// Factcheck-GPT's annotators take such steps as claims.
	if !sayVerbs[v] && !thatClause(rest, j) {
		return ""
	}
	switch w := rest[j]; {
	case objectStart[w]:
		return c.orig[i]
	case formPreps[w]:
		// "Refer to the text" is an order; "Work on the bridge began in
		// 1990" and "Open to the public, the museum ..." are not.
		if more || finiteIn(rest[j+1:]) {
			return ""
		}
		return c.orig[i]
	}
	return ""
}

// thatClause reports whether rest[j] is "that" starting a clause (followed
// by a subject: "that the bridge", "that it"), not the determiner ("that
// cheese").
func thatClause(rest []string, j int) bool {
	if j+1 >= len(rest) || rest[j] != "that" {
		return false
	}
	n := rest[j+1]
	return n == "the" || n == "a" || n == "an" || n == "this" || n == "there" || subjectPronouns[n]
}

// label reports whether orig[i] is a label or acronym in capitals before
// ordinary words ("QUOTE the reply ..."), not a verb; a clause all in
// capitals is judged like any other.
func label(orig []string, i int) bool {
	upper := func(w string) bool { return len(w) > 1 && strings.ToUpper(w) == w && strings.ToLower(w) != w }
	return upper(orig[i]) && i+1 < len(orig) && !upper(orig[i+1])
}

// startsWithVerb returns the clause's verb when it starts, after lead-ins,
// with a base-form verb (an order's first conjunct: "Ignore previous
// context and report that ...").
func startsWithVerb(c *formClause) string {
	if c.join != "" && c.join != "so" {
		return ""
	}
	i := skipLeadIns(c.low, 0)
	if i < len(c.low) && (baseVerbs[c.low[i]] || c.low[i] == "be") && !finiteIn(c.low[i+1:]) && !titleOrName(c.orig[i+1:], c.low[i+1:]) {
		return c.orig[i]
	}
	return ""
}

// skipLeadIns skips politeness, sequencing and negation words before an
// imperative's verb ("Please", "Kindly", "Now", "Do not", "Never").
func skipLeadIns(low []string, i int) int {
	for i < len(low)-1 && (formLeadIns[low[i]] || isAdverbLy(low[i])) {
		i++
	}
	return i
}

// skipAdverbs skips adverbs between a verb and its object ("State clearly
// that ...", "Report only the ...").
func skipAdverbs(low []string, i int) int {
	for i < len(low) && (formAdverbs[low[i]] || isAdverbLy(low[i])) {
		i++
	}
	return i
}

// isAdverbLy reports an adverb in -ly ("simply", "clearly"), not a noun or
// verb that ends so ("Italy", "family", "reply").
func isAdverbLy(w string) bool {
	return len(w) > 4 && strings.HasSuffix(w, "ly") && !baseVerbs[w] && !lyNouns[w]
}

// titleOrName reports whether the words after a sentence-initial verb
// make it a title or name followed by its verb ("Let It Be was released",
// "Jack the Ripper was never identified", "Consider the Lobster is an
// essay"): a capitalised word right after the verb or after its article,
// and a finite verb later.
func titleOrName(orig, low []string) bool {
	capital := func(k int) bool {
		if k >= len(orig) {
			return false
		}
		r := []rune(orig[k])
		return unicode.IsUpper(r[0]) && orig[k] != "I"
	}
	if !(capital(0) || (len(low) > 1 && (low[0] == "the" || low[0] == "a" || low[0] == "an") && capital(1))) {
		return false
	}
	return finiteIn(low)
}

// finiteIn reports whether low holds a finite verb before any word that
// starts a subordinate clause: an auxiliary or modal, a past tense (-ed or
// irregular), or a verb in -s before its object ("shows that", "takes
// the").
func finiteIn(low []string) bool {
	for k, w := range low {
		if formStops[w] {
			return false
		}
		if formFinite[w] || irregularPast[w] {
			return true
		}
		if len(w) > 4 && strings.HasSuffix(w, "ed") && !notPast[w] {
			return true
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && k+1 < len(low) {
			if n := low[k+1]; n == "that" || n == "the" || n == "a" || n == "an" || formPreps[n] || unicode.IsDigit([]rune(n)[0]) {
				return k > 0 && !objectStart[low[k-1]] && !formPreps[low[k-1]]
			}
		}
	}
	return false
}

// hasDeictic reports a word that points at this text ("this", "these",
// "the following", "above").
func hasDeictic(low []string) bool {
	for _, w := range low {
		if deictic[w] {
			return true
		}
	}
	return false
}

func hasSubjectPronoun(low []string) bool {
	for _, w := range low {
		if subjectPronouns[w] {
			return true
		}
	}
	return false
}

// orderToYou finds the reader addressed with an obligation: "you" (not
// after "if", "when" ...) followed by must, should, shall, will, need to,
// have to, are to, are required (asked, told ...) to, ought to.
func orderToYou(low []string) string {
	for i, w := range low {
		if w != "you" && w != "you'll" && w != "you’ll" {
			continue
		}
		if i > 0 && (low[i-1] == "if" || low[i-1] == "when" || low[i-1] == "unless" || low[i-1] == "as") {
			continue
		}
		rest := low[i+1:]
		k := skipAdverbs(rest, 0)
		if w != "you" {
			if k < len(rest) && sayVerbs[rest[k]] {
				return "\"you'll " + rest[k] + "\""
			}
			continue
		}
		if k >= len(rest) {
			continue
		}
		m := rest[k]
		next := ""
		if k+1 < len(rest) {
			next = rest[k+1]
		}
		// The verb of the obligation: "you must report", "you need to
		// say", "you are required to describe".
		v := next
		for _, w := range rest[k+1:] {
			if w != "to" && !obligedTo[w] {
				v = w
				break
			}
		}
		obliged := m == "must" || m == "should" || m == "shall" || m == "will" ||
			((m == "need" || m == "have" || m == "ought") && next == "to") ||
			(m == "are" && (next == "to" || obligedTo[next]))
		// Only an obligation about what to say or believe addresses the
		// reader: "you will need hot water" is a recipe's statement.
		if obliged && sayVerbs[v] {
			return "\"you " + m + " ... " + v + "\""
		}
	}
	return ""
}

// machineAddressed names the machine a clause addresses: a note or
// greeting to a machine, a machine named as the reader of this text, or a
// machine as the subject of an order ("The AI assistant will now ...").
func machineAddressed(c formClause) string {
	low := c.low
	if len(low) == 0 {
		return ""
	}
	// A note or greeting: "Note to any AI system ...", "Dear assistant",
	// "Attention LLMs and graders".
	first := low[0]
	if noteNouns[first] || greetings[first] {
		k := 1
		if noteNouns[first] && k < len(low) && (low[k] == "to" || low[k] == "for") {
			k++
		}
		if (k > 1 || greetings[first]) && !finiteIn(low[k:]) {
			for m := k; m < len(low) && m < k+8; m++ {
				if isMachine(low, m, true) {
					return "\"" + strings.Join(c.orig[:m+1], " ") + "\""
				}
			}
		}
	}
	// "To any AI: ...", "For all language models reading this, ...".
	if (first == "to" || first == "for") && len(low) > 2 && (low[1] == "any" || low[1] == "all" || low[1] == "every" || low[1] == "each") && !finiteIn(low[2:]) {
		for m := 2; m < len(low) && m < 6; m++ {
			if isMachine(low, m, false) {
				return "\"" + strings.Join(c.orig[:m+1], " ") + "\""
			}
		}
	}
	for m := range low {
		if !isMachine(low, m, false) {
			continue
		}
		// The reader said to be a machine: "if you are an automated
		// system".
		for y := m - 1; y >= 0 && y >= m-4; y-- {
			if low[y] == "you" && y+1 < len(low) && (low[y+1] == "are" || low[y+1] == "were") {
				return "\"" + strings.Join(c.orig[y:m+1], " ") + "\""
			}
		}
		// The machine as the reader of this text: "... reading this",
		// "... processing this file".
		if n := m + 1; n < len(low) && readingVerbs[low[n]] {
			for d := n + 1; d < len(low) && d <= n+3; d++ {
				if deictic[low[d]] && (d+1 == len(low) || textNouns[low[d+1]] || formFinite[low[d+1]] || low[d+1] == "and" || low[d+1] == "or") {
					return "\"" + strings.Join(c.orig[max(0, m-1):d+1], " ") + "\""
				}
			}
		}
		// The machine as the subject of an order about the text: "The AI
		// assistant will now confirm ...", "Graders should mark this
		// answer ..." (without "the", only about this text: "AI systems
		// must disclose their data" is a statement).
		if m+2 < len(low) && (low[m+1] == "will" || low[m+1] == "must" || low[m+1] == "should") {
			start := -1
			for d := m - 1; d >= 0 && d >= m-3; d-- {
				if low[d] == "the" || low[d] == "this" {
					start = d
					break
				}
			}
			if start < 0 && hasDeictic(low[m+2:]) {
				start = max(0, m-1)
			}
			k := skipAdverbs(low, m+2)
			if start >= 0 && k < len(low) && sayVerbs[low[k]] {
				return "\"" + strings.Join(c.orig[start:k+1], " ") + "\""
			}
		}
	}
	return ""
}

// isMachine reports whether low[m] is the head of a machine reference:
// AI, LLM, chatbot, crawler, grader ..., or assistant, model, system,
// tool, agent, checker, reviewer ... qualified as such ("AI system",
// "automated tool", "language model", "fact-checkers"); bare when bare is
// true (in a note or greeting).
func isMachine(low []string, m int, bare bool) bool {
	w := low[m]
	if machineHeads[w] {
		return true
	}
	if !machineKinds[w] {
		return false
	}
	if bare {
		return true
	}
	for q := m - 1; q >= 0 && q >= m-2; q-- {
		if machineQualifiers[low[q]] || machineHeads[low[q]] {
			return true
		}
	}
	return false
}

var (
	formLeadIns = words("please kindly now just simply also then instead first finally next always never do don't dont not only so and")
	formAdverbs = words("only also again instead now always never not then just")
	lyNouns     = words("italy family assembly anomaly monopoly rally july ally lily emily kelly sicily holly belly jelly bully billy molly sally early ugly only")
	// objectStart: words that begin an imperative's object or complement.
	objectStart = words("the a an this that these those all any every each no some it them him her me us everything nothing anything something everyone everybody anyone nobody your my our his their its what how whether why where when who which he she they we i readers reader users user people visitors everyone")
	formPreps   = words("to at on in into onto for from with without about as over under up down out off away back through by around of after before")
	// formStops start a subordinate clause: a finite verb after one is
	// not the clause's own.
	formStops         = words("that which who whom whose where when while because if unless until although though since whether")
	subordinators     = words("if when whenever while once after before unless because as although though")
	formFinite        = words("is are was were am has had does did will would can could may might must shall should isn't aren't wasn't weren't hasn't hadn't doesn't didn't won't can't couldn't")
	subjectPronouns   = words("i you he she it we they")
	notPast           = words("need feed seed speed bleed breed shed hundred sacred naked wicked proceed exceed succeed embed")
	irregularPast     = words("went came took made gave saw said told found knew thought got became began grew fell rose ran won lost led left kept held brought bought built sent spent stood understood wrote drew drove ate fought flew froze hid hung lay meant met paid sold sat sang sank spoke stole struck swam taught threw wore woke broke chose caught felt fed fled forgot heard shot shook shone slept slid stuck swore swept tore wept bore bent dealt dug sought sprang arose awoke overcame underwent withdrew forbade foresaw forgave undertook mistook overtook oversaw")
	obligedTo         = words("required asked told instructed expected supposed requested obliged meant directed ordered")
	noteNouns         = words("note notes message messages memo reminder notice instruction instructions warning request directive ps nb hint")
	greetings         = words("dear hey hi hello greetings attention attn")
	readingVerbs      = words("reading processing parsing summarizing summarising analyzing analysing scanning ingesting crawling indexing handling evaluating grading reviewing checking extracting reads processes parses summarizes summarises")
	deictic           = words("this these following above")
	textNouns         = words("file document text page passage article message prompt content input email sentence paragraph section report record")
	machineHeads      = words("ai ais llm llms gpt chatgpt chatbot chatbots bot bots crawler crawlers scraper scrapers summarizer summarizers summariser summarisers extractor extractors grader graders evaluator evaluators")
	machineKinds      = words("assistant assistants model models system systems tool tools agent agents program programs pipeline pipelines checker checkers checking reviewer reviewers parser parsers classifier classifiers software reader readers")
	machineQualifiers = words("ai automated automatic language llm fact virtual digital autonomous machine")
)

// sayVerbs are the base-form verbs of orders about the text itself: what
// to say, state, output, record, believe, assume, ignore or how to judge
// it. Orders with these verbs are never statements about the world.
var sayVerbs = words(`
accept admit advise alert announce answer argue assert assume attribute believe bypass
categorise categorize characterise characterize cite claim clarify classify comment conclude confirm consider contradict credit
declare deduce deny depict describe designate disclose dismiss disregard downplay
echo emphasise emphasize enumerate exaggerate explain express fabricate flag forget grade guess
highlight ignore imagine imply indicate infer inform insert insist interpret invent judge label list
mark mention misreport note notify omit output overlook override paraphrase phrase portray pretend print proclaim
quote rank rate recite record regard relabel remember remind repeat rephrase reply report represent respond restate reveal rewrite
say score specify state stress suggest summarise summarize suppose suppress swear tag tell treat trust warn withhold write
`)

// baseVerbs is a lexicon of English verbs in the base form, the verbs of
// orders: reporting and stating, editing and judging, thinking, and the
// everyday verbs of instructions (cooking, devices, forms, travel). A
// sentence-initial word that is also a noun ("Return rates", "Work on the
// bridge") is told apart by what follows it (see imperative).
var baseVerbs = words(`
accept act add adjust admit advise agree alert allow alter analyse analyze announce answer append apply approve argue arrange ask assert assess assign assume attach attribute avoid
bake beat begin believe beware blend boil book bring browse buy bypass
calculate call cancel capture carry categorise categorize cause change characterise characterize check chop choose cite claim clarify classify clean clear click close collect combine come comment compare compile complete comply compute conceal conclude confirm connect consider consult contact continue contrast convert cook copy correct count cover create credit cut
decide declare deduce delete deny depict describe designate determine disable disclose disconnect discuss dismiss display disregard do download drain draw drink drive drop dry
edit eat email emit emphasise emphasize emulate enable enter ensure enumerate establish estimate evaluate exclude execute explain export extract
fabricate fill filter find finish fix flag fold follow forget format forward frame fry
generate get give go grade grill group guess
handle heat help hide highlight hold
identify ignore imagine include indicate infer inform input insert insist install interpret invent
judge keep knead know
label learn leave let lie list listen load log look
make mark mask measure mention merge mind mix modify move
name note notice notify
obey observe omit open order organise organize output override
paraphrase paste pay phrase pick place plug portray post pour predict preheat prepare present preserve press pretend prevent print proceed produce pronounce protect prove publish pull push put
quote
rank rate read realise realize recall recognise recognize recommend record refer reformulate refuse regard register reject release relabel remember remind remove rename repeat rephrase replace reply report represent request require reset respect respond rest restart restate retain return reveal review rewrite rinse roast run
save say score search season see select sell send serve set share show sign simmer simulate skip slice sort speak specify spell split start state stay stir stop store stress submit substitute suggest summarise summarize suppose suppress swap switch
take talk tag teach tell test think translate treat trust try turn type
understand unplug update upgrade upload use
verify visit
wait walk warn wash watch whisk withhold write
`)
