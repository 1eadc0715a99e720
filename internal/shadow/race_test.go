//go:build race

package shadow

// raceEnabled: built with -race (sync.Pool drops items at random then).
const raceEnabled = true
