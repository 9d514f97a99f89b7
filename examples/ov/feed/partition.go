package feed

// Partition returns the partition of a message key among n partitions exactly as Kafka's
// default partitioner places a keyed record (the Java client's, and librdkafka's
// "murmur2_random" for non-empty keys): murmur2 of the key, the sign bit cleared, modulo n.
// The feed produces every record to the partition this function names, so the oracle and
// any test know where each record lands without asking the broker. n must be positive.
func Partition(key []byte, n int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % n
}

// murmur2 is Kafka's variant of MurmurHash2 (org.apache.kafka.common.utils.Utils.murmur2).
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
