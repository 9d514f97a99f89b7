//go:build race

package window

// raceEnabled shortens the heaviest tests under the race detector, which slows pure
// arithmetic tenfold without adding coverage to it.
const raceEnabled = true
