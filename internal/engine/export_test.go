package engine

// RegisterForTest registers e as register does and returns the undo, so
// an external test can show that a new kind needs no edit elsewhere.
func RegisterForTest(e *Engine) (undo func()) {
	register(e)
	return func() { delete(registry, e.Kind) }
}
