package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink/internal/fold"
)

// mergedChunk is about how many merged rows a plan makes at a time (fold.Plan.Merged): the
// rows of a large window are written as they are made, never held whole.
const mergedChunk = 8192

// writePlan writes a plan with multi-row statements, in a fixed order: merged rows, the
// deletion of folded windows' compact rows, compact rows, folded rows, progress (in source
// order, the order every writer updates it in), new contributing topics.
func (s *Sink) writePlan(ctx context.Context, tx *sql.Tx, p *fold.Plan, now time.Time) error {
	at := timeArg(now)
	maxBytes := s.cfg.MaxStatementBytes
	written := 0
	folded, err := p.Merged(mergedChunk, func(rows []fold.Row, _ bool) error {
		err := s.merged.exec(ctx, tx, maxBytes, len(rows), func(i int, dst []any) []any {
			r := rows[i]
			dst = append(dst, timeArg(r.WindowStart), timeArg(r.End), r.Dimension, r.DimensionID)
			for _, a := range r.Attrs {
				if a == nil {
					dst = append(dst, nil)
				} else {
					dst = append(dst, *a)
				}
			}
			return append(dst, r.Count, r.Mean, r.Quantile, r.Max, r.Min, at)
		})
		if err != nil {
			return fmt.Errorf("write merged rows %d to %d: %w", written, written+len(rows), err)
		}
		written += len(rows)
		return nil
	})
	if err != nil {
		return err
	}
	if len(p.Delete) > 0 {
		args := make([]any, len(p.Delete))
		for i, w := range p.Delete {
			args[i] = timeArg(w)
		}
		if _, err := tx.ExecContext(ctx, s.partialsDel+inList(len(args))+")", args...); err != nil {
			return fmt.Errorf("delete the compact rows of %d folded windows: %w", len(args), err)
		}
	}
	attrs := s.cfg.Aggregates.Attributes
	blobs := make([][]byte, len(p.Partials))
	for i, ps := range p.Partials {
		var err error
		if blobs[i], err = s.codec.Encode(nil, attrs, fold.Blob{Entries: ps.Entries}); err != nil {
			return err
		}
	}
	if err := s.partialsPut.exec(ctx, tx, maxBytes, len(p.Partials), func(i int, dst []any) []any {
		ps := p.Partials[i]
		return append(dst, timeArg(ps.Start), ps.Source.Topic, ps.Source.Partition, timeArg(ps.End), len(ps.Entries), blobs[i], at)
	}); err != nil {
		return fmt.Errorf("write %d compact rows: %w", len(p.Partials), err)
	}
	if err := s.foldedPut.exec(ctx, tx, maxBytes, len(folded), func(i int, dst []any) []any {
		f := folded[i]
		return append(dst, timeArg(f.Start), timeArg(f.End), f.Keys, f.Blob, at)
	}); err != nil {
		return fmt.Errorf("write %d folded windows: %w", len(folded), err)
	}
	if err := s.progressPut.exec(ctx, tx, maxBytes, len(p.Progress), func(i int, dst []any) []any {
		pr := p.Progress[i]
		return append(dst, pr.Source.Topic, pr.Source.Partition, timeArg(pr.ClosedThrough), pr.Empty, at)
	}); err != nil {
		return fmt.Errorf("write progress: %w", err)
	}
	if err := s.topicsPut.exec(ctx, tx, maxBytes, len(p.Topics), func(i int, dst []any) []any {
		return append(dst, p.Topics[i], at)
	}); err != nil {
		return fmt.Errorf("write contributing topics: %w", err)
	}
	return nil
}
