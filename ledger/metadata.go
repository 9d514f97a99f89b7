package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Commit metadata format, version 1:
//
//	sl1;wm=<watermark as Unix nanoseconds, decimal>
//
// The prefix names the format and its version; fields are key=value pairs separated by ';'.
// A reader of version 1 ignores fields it does not know, so later writers may add fields
// without breaking older readers; an incompatible change takes a new prefix. Kafka limits
// metadata to 4,096 bytes by default (offset.metadata.max.bytes); version 1 takes under 30.
const (
	metadataPrefix = "sl1;"
	// MaxMetadataLen is the longest metadata [DecodeMetadata] accepts: Kafka's default
	// offset.metadata.max.bytes.
	MaxMetadataLen = 4096
)

// Checkpoint is what a commit's metadata restores: the partition's watermark as of the committed
// offset, after every message below it and any idle advance made there.
type Checkpoint struct {
	Watermark time.Time
}

// EncodeMetadata returns the commit metadata string for c.
func EncodeMetadata(c Checkpoint) string {
	return metadataPrefix + "wm=" + strconv.FormatInt(unixNano(c.Watermark), 10)
}

// DecodeMetadata parses commit metadata written by [EncodeMetadata]. Empty metadata yields
// [ErrNoMetadata]; anything else it cannot read yields an error wrapping [ErrBadMetadata] that
// says what was expected and what was found. It never panics.
func DecodeMetadata(s string) (Checkpoint, error) {
	if s == "" {
		return Checkpoint{}, ErrNoMetadata
	}
	if len(s) > MaxMetadataLen {
		return Checkpoint{}, fmt.Errorf("%w: %d bytes, at most %d expected", ErrBadMetadata, len(s), MaxMetadataLen)
	}
	if !strings.HasPrefix(s, metadataPrefix) {
		return Checkpoint{}, fmt.Errorf("%w: expected prefix %q, found %q", ErrBadMetadata, metadataPrefix, clip(s))
	}
	var (
		c     Checkpoint
		found bool
	)
	for field := range strings.SplitSeq(s[len(metadataPrefix):], ";") {
		key, value, ok := strings.Cut(field, "=")
		if !ok {
			return Checkpoint{}, fmt.Errorf("%w: expected key=value, found %q", ErrBadMetadata, clip(field))
		}
		if key != "wm" {
			continue
		}
		if found {
			return Checkpoint{}, fmt.Errorf("%w: field wm appears twice", ErrBadMetadata)
		}
		ns, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("%w: wm: expected Unix nanoseconds, found %q", ErrBadMetadata, clip(value))
		}
		c.Watermark, found = time.Unix(0, ns).UTC(), true
	}
	if !found {
		return Checkpoint{}, fmt.Errorf("%w: field wm missing in %q", ErrBadMetadata, clip(s))
	}
	return c, nil
}

// clip keeps error messages short when metadata is large garbage.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
