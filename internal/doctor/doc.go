// Package doctor gathers host facts for `hiro doctor` and the prereq
// gate: OS and kernel, CPU model and cores, memory, free disk of named
// paths, accelerators through nvidia-smi (name, memory total and free,
// driver, CUDA version) and the inference engines found on PATH with
// their versions.
//
// It only reads: /proc, /etc/os-release, statfs, and the output of
// version commands run with a timeout. It must not start servers, change
// files, or decide whether a fact is good enough (gates decide).
package doctor
