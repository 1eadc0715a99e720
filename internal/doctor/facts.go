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
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Run == nil {
		o.Run = runCommand
	}
	return accelerators(ctx, o)
}

// DiskOf measures the file system holding path (statfs); Disk.Error says
// why it could not (a missing path).
func DiskOf(path string) Disk { return disk(path) }
