package postgres

// fnv64 is a running FNV-1a (64 bits) hash. Lock buckets and the order of state rows use it
// because it has no seed: every writer, in every process and every release, must map a key
// to the same value.
type fnv64 uint64

const fnvPrime = 1099511628211

func newFNV() fnv64 { return 14695981039346656037 }

func (h fnv64) byte(b byte) fnv64 { return (h ^ fnv64(b)) * fnvPrime }

func (h fnv64) string(s string) fnv64 {
	for i := 0; i < len(s); i++ {
		h = h.byte(s[i])
	}
	return h
}

// uint64 hashes v's eight bytes, big endian.
func (h fnv64) uint64(v uint64) fnv64 {
	for shift := 56; shift >= 0; shift -= 8 {
		h = h.byte(byte(v >> shift))
	}
	return h
}
