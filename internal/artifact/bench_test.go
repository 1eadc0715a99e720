package artifact

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkPin pins four 64 MiB files (page-cached after the first
// iteration) with one worker and with runtime.NumCPU() workers; MB/s is the
// hashing throughput. The full comparison against OpenSSL, with 1 GiB
// files, is bench/artifact-hash.sh.
func BenchmarkPin(b *testing.B) {
	dir := b.TempDir()
	const size = 64 << 20
	buf := make([]byte, size)
	for i := range 4 {
		rand.Read(buf)
		writeFile(b, dir, fmt.Sprintf("model-%05d-of-00004.safetensors", i+1), buf)
	}
	for _, w := range []int{1, runtime.NumCPU()} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.SetBytes(4 * size)
			for b.Loop() {
				if _, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
