package postgres

// Strategy and its values let the external tests and benchmarks write the same rows every
// way the package can send them.
type Strategy = strategy

const (
	StrategyCopy   = strategyCopy
	StrategyUnnest = strategyUnnest
	StrategyBatch  = strategyBatch
)

// SetStrategy makes s send batches of state rows with st. Call it before the first write.
func SetStrategy(s *Sink, st Strategy) { s.strategy = st }
