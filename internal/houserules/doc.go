// Package houserules holds no code: its tests check the rules the project
// writes down in prose, so that the prose cannot drift from the code.
//
//   - every citation of a design section (`docs/design.md "Heading"`, or a
//     link to design.md#anchor) names a heading docs/design.md has;
//   - every test a docs/ page or the README names (`TestX`) exists;
//   - every import promise in a package comment holds (go list
//     -deps), one table row per line.
//
// It must not be imported by anything: it has no API.
package houserules
