package mysql

// SetMarkerChunk sets how many markers one statement of e holds.
func SetMarkerChunk(e *Effects, n int) { e.chunk = n }
