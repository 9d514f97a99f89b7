package mysql

// SetMarkerChunk sets how many markers one statement holds and returns a function that
// restores it.
func SetMarkerChunk(n int) (restore func()) {
	old := markerChunk
	markerChunk = n
	return func() { markerChunk = old }
}
