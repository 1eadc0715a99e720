// Package gguf writes and reads GGUF version 3 files, the model format of
// llama.cpp and Ollama.
//
// It owns the byte layout only: header, metadata key/value pairs of every GGUF
// value type (integers of 8 to 64 bits, float32/64, bool, string and arrays of
// them), tensor descriptors and tensor data for the types F32, F16 and Q8_0,
// aligned to 32 bytes (or general.alignment). The reader parses what the
// writer produces (and any other GGUF v3 file with those tensor types) so
// tests can round-trip a file.
//
// It must not know about model architectures, tokenizers or chat templates:
// package fixture decides which keys and tensors a llama model needs.
//
// Format reference: ggml's docs/gguf.md (little-endian; strings are a uint64
// byte length followed by UTF-8 bytes; tensor dimensions are listed innermost
// first, so a row-major PyTorch weight of shape [out, in] is written with
// dimensions [in, out]).
package gguf
