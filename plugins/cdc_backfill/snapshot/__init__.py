"""The snapshot engine (DESIGN.md §4): chunks between watermarks, parallel, resumable, bounded in memory."""
