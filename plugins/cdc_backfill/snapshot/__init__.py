"""The snapshot engine (docs/design.md §4): chunks between watermarks, parallel, resumable, bounded in memory."""
