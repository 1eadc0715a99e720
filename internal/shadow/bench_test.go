package shadow

import (
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
)

// BenchmarkSampleNotChosen is the primary path's cost of an active run
// for a request the draw does not choose (share 0.1): what every
// unsampled request pays inline. The work for a chosen one (the copy of
// its body, its reply read as it passes, the mirror's send and scoring)
// is bench/serve-proxy.sh's BenchmarkShadowOverhead.
func BenchmarkSampleNotChosen(b *testing.B) {
	m, err := Start(Config{Share: 0.1, MaxPairs: MaxPairsLimit}, &config.Profile{Name: "c", BaseURL: "http://127.0.0.1:1", Model: "m"}, "p")
	if err != nil {
		b.Fatal(err)
	}
	defer m.Stop()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if m.Sample() {
				m.Abandon(nil)
			}
		}
	})
}
