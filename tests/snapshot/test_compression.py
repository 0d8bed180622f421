"""How the engine compresses a chunk file (``snapshot.compression``); the files themselves: test_cli_run."""

from __future__ import annotations

import pytest

from cdc_backfill.lakepath import lake_path
from cdc_backfill.snapshot.compression import chunk_compression_for


def test_a_local_landing_takes_its_chunks_uncompressed_and_s3_compressed() -> None:
    assert chunk_compression_for(lake_path("lake")) == "none"
    assert chunk_compression_for(lake_path("s3://bucket/lake")) == "zstd"
    assert chunk_compression_for(lake_path("s3://bucket/lake"), "none") == "none"
    assert chunk_compression_for(lake_path("lake"), "zstd") == "zstd"
    with pytest.raises(ValueError, match="one of auto, none, zstd"):
        chunk_compression_for(lake_path("lake"), "lz4")
