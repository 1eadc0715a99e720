package cli

import (
	"context"
	"encoding/json"
	"os"

	"github.com/hiro-dev/hiro/internal/doctor"
)

// hostFingerprint returns the host and stack facts recorded in campaign
// evidence: doctor's report (OS, kernel, CPU, memory, accelerators,
// engines with versions). Engine paths and disks are kept under keys the
// public copy drops ("disks", "hostname"); engines carry no paths.
func hostFingerprint(ctx context.Context, diskPaths []string) map[string]any {
	r := doctor.Collect(ctx, doctor.Options{DiskPaths: diskPaths})
	engines := make([]map[string]any, 0, len(r.Engines))
	for _, e := range r.Engines {
		engines = append(engines, map[string]any{"kind": e.Kind, "found": e.Found, "version": e.Version})
	}
	var m map[string]any
	b, _ := json.Marshal(r)
	_ = json.Unmarshal(b, &m)
	m["engines"] = engines
	h, _ := os.Hostname()
	m["hostname"] = h
	return m
}
