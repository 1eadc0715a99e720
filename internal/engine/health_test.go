package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers like an engine of kind: health follows *status
// (200, 503 or another code), /v1/models lists ids, Ollama's / and
// /api/tags answer as Ollama does.
func fakeServer(t *testing.T, kind string, status *atomic.Int32, ids ...string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	models := func(w http.ResponseWriter) {
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf(`{"id":%q,"object":"model"}`, id))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(parts, ","))
	}
	healthPath := mustLookup(t, kind).HealthPath
	switch {
	case kind == "ollama":
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(int(status.Load()))
			fmt.Fprint(w, "Ollama is running")
		})
		mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
			var parts []string
			for _, id := range ids {
				parts = append(parts, fmt.Sprintf(`{"name":%q,"model":%q}`, id, id))
			}
			fmt.Fprintf(w, `{"models":[%s]}`, strings.Join(parts, ","))
		})
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { models(w) })
	case healthPath == "/v1/models":
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			if c := int(status.Load()); c != http.StatusOK {
				w.WriteHeader(c)
				fmt.Fprint(w, `{"error":{"message":"Loading model"}}`)
				return
			}
			models(w)
		})
	default:
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
			c := int(status.Load())
			w.WriteHeader(c)
			if c == http.StatusServiceUnavailable {
				fmt.Fprint(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
			}
		})
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { models(w) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestConformance: every registered kind reads ready, not-ready and down
// answers of its health check, lists model ids and matches its own id.
func TestConformance(t *testing.T) {
	want := "koboldcpp llamacpp llamafile lmdeploy mistralrs ollama openai sglang tabbyapi tgi trtllm vllm"
	if got := strings.Join(Kinds(), " "); got != want {
		t.Errorf("kinds %s, want %s", got, want)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	ctx := context.Background()
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			e := mustLookup(t, kind)
			var status atomic.Int32
			status.Store(http.StatusOK)
			id := "tiny"
			if kind == "ollama" {
				id = "tiny:latest"
			}
			srv := fakeServer(t, kind, &status, id)

			if h := e.CheckHealth(ctx, client, srv.URL+"/", "tiny"); h.State != HealthReady {
				t.Errorf("200: %+v, want ready", h)
			}
			ids, err := e.ModelIDs(ctx, client, srv.URL)
			if err != nil || len(ids) != 1 || ids[0] != id {
				t.Fatalf("ModelIDs = %v, %v", ids, err)
			}
			if !e.MatchModel("tiny", ids) || e.MatchModel("other", ids) {
				t.Errorf("MatchModel wrong for %v", ids)
			}

			status.Store(http.StatusServiceUnavailable)
			h := e.CheckHealth(ctx, client, srv.URL, "tiny")
			switch kind {
			case "vllm", "ollama":
				if h.State != HealthDown || h.StatusCode != 503 {
					t.Errorf("503: %+v, want down", h)
				}
			default:
				if h.State != HealthLoading || h.Message != "Loading model" {
					t.Errorf("503: %+v, want loading with the engine's message", h)
				}
			}

			status.Store(http.StatusInternalServerError)
			if h := e.CheckHealth(ctx, client, srv.URL, "tiny"); h.State != HealthDown || h.StatusCode != 500 {
				t.Errorf("500: %+v, want down", h)
			}

			srv.Close()
			h = e.CheckHealth(ctx, client, srv.URL, "tiny")
			if h.State != HealthDown || h.StatusCode != 0 || h.Message == "" {
				t.Errorf("closed: %+v, want down with a message", h)
			}
			if _, err := e.ModelIDs(ctx, client, srv.URL); err == nil {
				t.Error("ModelIDs of a closed server: no error")
			}
		})
	}
}

func TestOllamaModelPresence(t *testing.T) {
	e := mustLookup(t, "ollama")
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := fakeServer(t, "ollama", &status, "tiny:latest", "qwen:7b")
	ctx := context.Background()
	for model, want := range map[string]HealthState{
		"tiny": HealthReady, "tiny:latest": HealthReady, "qwen:7b": HealthReady,
		"qwen": HealthLoading, "absent": HealthLoading, "": HealthReady,
	} {
		h := e.CheckHealth(ctx, nil, srv.URL, model)
		if h.State != want {
			t.Errorf("model %q: %+v, want %s", model, h, want)
		}
		if want == HealthLoading && (h.Path != "/api/tags" || !strings.Contains(h.Message, `"tiny:latest"`)) {
			t.Errorf("model %q: message %q should list what is there", model, h.Message)
		}
	}
	// Something else answering 200 on / is not Ollama.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer other.Close()
	if h := e.CheckHealth(ctx, nil, other.URL, "tiny"); h.State != HealthDown || !strings.Contains(h.Message, "is this Ollama") {
		t.Errorf("not ollama: %+v", h)
	}
}

func TestMatchModelIDs(t *testing.T) {
	o, v := mustLookup(t, "ollama"), mustLookup(t, "vllm")
	cases := []struct {
		e        *Engine
		expected string
		reported []string
		want     bool
	}{
		{o, "tiny", []string{"tiny:latest"}, true},
		{o, "tiny:latest", []string{"tiny"}, true},
		{o, "tiny:q4", []string{"tiny:latest"}, false},
		{o, "hf.co/org/m:Q4_K_M", []string{"hf.co/org/m:Q4_K_M"}, true},
		{o, "registry:5000/m", []string{"registry:5000/m:latest"}, true},
		{v, "tiny", []string{"tiny:latest"}, false},
		{v, "Qwen/Qwen2.5-7B", []string{"Qwen/Qwen2.5-7B"}, true},
		{v, "x", nil, false},
	}
	for _, c := range cases {
		if got := c.e.MatchModel(c.expected, c.reported); got != c.want {
			t.Errorf("%s MatchModel(%q, %v) = %v, want %v", c.e.Kind, c.expected, c.reported, got, c.want)
		}
	}
}

func TestModelIDsErrors(t *testing.T) {
	e := mustLookup(t, "llamacpp")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"File Not Found"}}`)
	}))
	defer srv.Close()
	_, err := e.ModelIDs(context.Background(), nil, srv.URL)
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "File Not Found") {
		t.Errorf("404: %v", err)
	}
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }))
	defer junk.Close()
	if _, err := e.ModelIDs(context.Background(), nil, junk.URL); err == nil || !strings.Contains(err.Error(), "not an OpenAI model list") {
		t.Errorf("junk: %v", err)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("textgen")
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("err %v does not wrap ErrUnknownKind", err)
	}
	for _, k := range []string{"llamacpp", "ollama", "openai", "sglang", "vllm", "tgi", `"textgen"`} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name %s", err, k)
		}
	}
}
