//go:build unix

package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// benchPair is one kind of pair: the request, and each side's reply as
// it comes over the wire (chat JSON, or SSE for a stream).
type benchPair struct {
	name       string
	body       []byte
	stream     bool
	prod, cand []byte
}

// chatReply is a chat completion as the fake engine writes it.
func chatReply(text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake-1764690000000000000", "object": "chat.completion", "created": 1764690000, "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
		"usage":   map[string]any{"prompt_tokens": 21, "completion_tokens": 5, "total_tokens": 26}})
	return b
}

// sseReply is text streamed as the fake engine does: a role chunk, one
// chunk per word, a finish chunk, the usage chunk and [DONE].
func sseReply(text string) []byte {
	var b bytes.Buffer
	ev := func(v any) {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake-1", "object": "chat.completion.chunk", "created": 1764690000, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	ev(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, w := range strings.Fields(text) {
		if i > 0 {
			w = " " + w
		}
		ev(chunk(map[string]any{"content": w}, nil))
	}
	ev(chunk(map[string]any{}, "stop"))
	ev(map[string]any{"id": "chatcmpl-fake-1", "object": "chat.completion.chunk", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 21, "completion_tokens": 5}})
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func benchPairs() []benchPair {
	chat := func(stream bool, extra map[string]any) []byte {
		m := map[string]any{"model": "fake-model", "stream": stream, "max_tokens": 16,
			"messages": []any{map[string]any{"role": "user", "content": "Reply with exactly the word READY."}}}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	target := "The bridge opened in 1932 and carried trams until 1958."
	claims := `{"claims":[{"text":"The bridge opened in 1932.","quote":"The bridge opened in 1932"},{"text":"The bridge carried trams until 1958.","quote":"carried trams until 1958"}]}`
	schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": map[string]any{
		"type": "object", "required": []string{"answer", "confidence"},
		"properties": map[string]any{"answer": map[string]any{"type": "string"}, "confidence": map[string]any{"type": "number"}}}}}
	words := "The quick brown fox jumps over the lazy dog while the cat sleeps in the sun"
	return []benchPair{
		// What BenchmarkShadowOverhead mirrors: the fake engine's answer.
		{name: "text", body: chat(false, nil), prod: chatReply("READY"), cand: chatReply("READY")},
		{name: "text-differ", body: chat(false, nil), prod: chatReply("READY."), cand: chatReply("Ready")},
		{name: "stream", body: chat(true, nil), stream: true, prod: sseReply(words), cand: sseReply(words)},
		{name: "structured", body: chat(false, map[string]any{"response_format": schema}), prod: chatReply(`{"answer":"READY","confidence":0.9}`), cand: chatReply(`{"answer":"READY","confidence":0.8}`)},
		{name: "extraction", body: extractionBody(target), prod: chatReply(claims), cand: chatReply(claims)},
	}
}

// extractionBody is hiro's own extraction request for target.
func extractionBody(target string) []byte {
	var msgs []map[string]string
	for _, m := range extract.Messages(prompt.Input{Target: target, Before: []string{"The city grew around the river."}, HeadingPath: []string{"History"}}) {
		msgs = append(msgs, map[string]string{"role": m.Role, "content": m.Content})
	}
	b, _ := json.Marshal(map[string]any{"model": "fake-model", "max_tokens": 512, "messages": msgs})
	return b
}

// BenchmarkPairCost is the mirror's CPU and allocations per pair, the
// network aside: production's reply captured as it passes to the client
// (Job.Capture, in the router's 32 KiB reads), the candidate's read from
// its body (readReply), the pair scored (pairOf) and kept as the run
// keeps it. cpu-ns/op is the process's CPU time per pair (collections
// included; unlike ns/op, not inflated by waiting for a core on a shared
// machine). retained-B/pair is what a kept pair holds: its size in the
// run's slice and the heap it points to (after a collection, over 4,096
// pairs); a run keeps up to MaxPairsLimit pairs.
func BenchmarkPairCost(b *testing.B) {
	v, err := extract.NewValidator()
	if err != nil {
		b.Fatal(err)
	}
	m := &Mirror{cand: &config.Profile{Name: "c", Model: "m"}, validator: v}
	for _, bp := range benchPairs() {
		b.Run(bp.name, func(b *testing.B) {
			var sb sendBuf
			kept := make([]pair, 0, 4096)
			one := func() {
				j := &Job{Route: "/v1/chat/completions", Body: bytes.Clone(bp.body), Stream: bp.stream}
				j.Capture(bp.prod)
				j.Done(200, time.Millisecond, 2*time.Millisecond)
				cand := side{status: 200}
				readReply(&cand, bytes.NewReader(bp.cand), bp.stream, &sb, time.Now())
				p := m.pairOf(j, cand)
				if len(kept) == cap(kept) {
					kept = kept[:0]
				}
				kept = append(kept, p)
			}
			one()
			if p := kept[0]; !p.cand.ok() || !p.prod.ok() || p.rec.Kind == "" {
				b.Fatalf("%s: the pair did not score: %+v", bp.name, p.rec)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				one()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			clear(kept[:cap(kept)])
			kept = kept[:0]
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range cap(kept) {
				one()
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(unsafe.Sizeof(pair{}))+float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(len(kept)), "retained-B/pair")
			runtime.KeepAlive(kept)
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
