package extract

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
)

// BenchmarkRequestOverhead measures hiro's own work per request on the
// pure path: rendering the messages (context window, prompt), validating a
// two-claim reply (JSON Schema, quotes, numbers, duplicates), assembling
// the claims with provenance and encoding them as JSON lines. It reports
// the median per request as median-ns/req (the bound: 1 ms).
//
//	go test ./internal/extract -run '^$' -bench RequestOverhead -benchtime 20000x
func BenchmarkRequestOverhead(b *testing.B) {
	c, err := corpus.Load(miniDir)
	if err != nil {
		b.Fatal(err)
	}
	d := c.Docs[3] // observatory: Markdown with headings and numbers
	ss, err := corpus.Split(string(d.Text), d.Markdown)
	if err != nil {
		b.Fatal(err)
	}
	v := mustValidator(b)
	w := &worker{v: v, opts: &Options{Model: "m"}, info: RunInfo{Model: "m", Backend: "b", PromptHash: "p", SchemaHash: "s", PromptVersion: "v"}}
	replies := make([]string, len(ss))
	for i, s := range ss {
		r, _ := json.Marshal(map[string]any{"claims": []any{
			map[string]string{"text": s.Text, "quote": s.Text},
			map[string]string{"text": "The observatory is described in the text.", "quote": s.Text[:len(s.Text)/2]},
		}})
		replies[i] = string(r)
	}
	times := make([]time.Duration, 0, b.N)
	var sink bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		i := n % len(ss)
		t0 := time.Now()
		in := Window(ss, i)
		msgs := Messages(in)
		_ = requestBytes(msgs)
		o := v.Validate(replies[i], "stop", SourceFor(ss, i, in))
		ds := &docState{doc: d, sentences: ss[i : i+1], results: []sentResult{{attempts: []attempt{{n: 1, reply: &llm.Reply{Text: replies[i]}, outcome: o}}, requests: 1}}}
		claims, rejects, _ := w.assemble(ds)
		sink.Reset()
		for k := range claims {
			_ = writeLine(&sink, &claims[k])
		}
		for k := range rejects {
			_ = writeLine(&sink, &rejects[k])
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/req")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/req")
}
