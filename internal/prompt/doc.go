// Package prompt owns hiro's versioned extraction prompt and the claims
// JSON Schema: the texts (embedded from texts/), the user-message layout
// (Layout, User) and their fingerprint (Hash, SchemaHash). Package extract
// renders requests through it, the qualification gates use it for their
// control requests, and evidence records Hash.
//
// The texts are the product's. The fixture models were trained on them, not
// the other way round: train/train_fixture.py reads texts/ (through the
// internal/fixture/prompt link, so the script, whose git blob hash is the
// trained models' pinned revision, is unchanged) and internal/fixture's tests
// read them from here. A change to any byte is a new Version, changes Hash,
// and means the fixture models must be retrained; a test pins the hashes.
//
// It must not send requests or validate replies, and it must not import the
// test-model package (internal/fixture).
package prompt
