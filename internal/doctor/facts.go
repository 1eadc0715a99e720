package doctor

import (
	"context"
	"os/exec"
)

// Accelerators lists the GPUs nvidia-smi reports (memory in MiB), or a
// note saying why there are none (nvidia-smi absent or failing). The
// prereq gate reads them through here; o's zero fields take Collect's
// defaults.
func Accelerators(ctx context.Context, o Options) ([]Accelerator, string) {
	return accelerators(ctx, o.withDefaults())
}

// GPUProcesses lists the processes holding GPU memory (nvidia-smi
// --query-compute-apps, memory in MiB), or a note saying why it could not
// (nvidia-smi absent or failing). The prereq gate names them when free
// GPU memory is short.
func GPUProcesses(ctx context.Context, o Options) ([]GPUProcess, string) {
	return gpuProcesses(ctx, o.withDefaults())
}

// withDefaults fills o's zero fields with Collect's defaults.
func (o Options) withDefaults() Options {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Run == nil {
		o.Run = runCommand
	}
	return o
}

// DiskOf measures the file system holding path (statfs); Disk.Error says
// why it could not (a missing path).
func DiskOf(path string) Disk { return disk(path) }
