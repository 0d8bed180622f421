"""How the snapshot's chunk files are compressed (pure, no pyarrow): the CLI's ``--chunk-compression``,
the Airflow form's ``chunk_compression`` and the engine all take their choices from here."""

from __future__ import annotations

from cdc_backfill.lakepath import LakePath, S3Path

# How a chunk file is compressed: "auto" is none on a local landing, zstd on S3.
CHUNK_COMPRESSIONS = ("auto", "none", "zstd")


def chunk_compression_for(landing: LakePath, choice: str = "auto") -> str:
    """The Parquet compression of the chunk files landed in ``landing``. A chunk file is read once, by
    the reconcile, which writes the state compressed; compressing them costs the snapshot more time
    than the bytes it saves on local disk (docs/benchmarks.md, "Measured choices"). A local landing
    therefore takes them as they are, an S3 one (where every byte is uploaded) compressed."""
    if choice not in CHUNK_COMPRESSIONS:
        raise ValueError(f"chunk compression {choice!r}: one of {', '.join(CHUNK_COMPRESSIONS)}")
    if choice != "auto":
        return choice
    return "zstd" if isinstance(landing, S3Path) else "none"
