package ledger

// Runs returns the number of runs p holds: the ledger's memory is proportional to it.
func Runs(p *Partition) int { return p.runs.n }
