// Package ollamatest is test support for tests that need the reference engine,
// a real Ollama (v0.6.5, built by scripts/install-ollama.sh): find its binary
// or skip, pick a free loopback port, start and stop a private `ollama serve`
// (its own models directory and HOME, loopback only), and register models with
// `ollama create` (PrepareModels, or Server.Create on a running server).
//
// It owns nothing but those temporary processes and directories: every server
// it starts is stopped by t.Cleanup (SIGTERM to its process group, SIGKILL
// after a grace period). It must not touch a user's Ollama (~/.ollama, port
// 11434) and it must not supervise engines the way the product does: the
// supervisor's own tests use it only to prepare models and to have a real
// engine to start.
package ollamatest
