// Package doctor gathers host facts for `hiro doctor` and the prereq
// gate: OS and kernel, CPU model and cores, memory, free disk of named
// paths, accelerators through nvidia-smi (name, memory total and free,
// driver, CUDA version, and the processes holding GPU memory from
// --query-compute-apps) and the inference engines found on PATH with
// their versions. Subpackage doctortest puts a fake nvidia-smi that
// prints captured outputs on PATH for tests.
//
// It only reads: /proc, /etc/os-release, statfs, and the output of
// version commands run with a timeout. It must not start servers, change
// files, or decide whether a fact is good enough (gates decide).
package doctor
