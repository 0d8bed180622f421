"""Landing files as lines on Spark: every line of the uncompressed files with its file and line number
as the Python path counts them (``bytes.splitlines``, from 1), and the files as bytes for the rest."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from cdc_backfill.spark.landing import read_landing_files

log = logging.getLogger(__name__)

# Hadoop's text reader decompresses files with these suffixes (its default codecs); binaryFile, and
# so the Python path, reads their bytes as they are. Such files keep going to the Python path whole.
_CODEC_SUFFIXES = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst")
BOM = b"\xef\xbb\xbf"


def is_compressed(name: Column) -> Column:
    out = F.lit(False)
    for suffix in _CODEC_SUFFIXES:
        out = out | name.endswith(suffix)
    return out


def read_landing_lines(spark: SparkSession, path: str | Sequence[str], pattern: str = "*.json*") -> DataFrame:
    """The I/O edge: ``(file, line, _cdc_text, _cdc_bom)`` for every line of the uncompressed files
    that ``landing_events`` reads (``path`` a folder), or of the given files (``path`` a list).

    ``file`` is written as the ``binaryFile`` source writes it; ``line`` counts from 1 like
    ``bytes.splitlines`` (blank lines count, and ``\\n``, ``\\r\\n`` and ``\\r`` end a line in both).
    ``_cdc_bom`` marks line 1 of a file that starts with a UTF-8 byte-order mark: Hadoop's line reader
    drops the mark, the Python path keeps it (and quarantines the line), so such a line is given back
    its mark and left to Python. The files are listed and their first three bytes read here, on the
    driver: a few calls per file.
    """
    return read_lines(spark, path, pattern)[0]


def read_lines(spark: SparkSession, path: str | Sequence[str], pattern: str) -> tuple[DataFrame, bool]:
    """(lines, whether compressed files were left out)."""
    if isinstance(path, str):
        text = spark.read.option("pathGlobFilter", pattern).option("recursiveFileLookup", "true").text(path)
    else:
        text = spark.read.text(list(path))
    files = text.inputFiles()
    plain = [f for f in files if not f.endswith(_CODEC_SUFFIXES)]
    with_bom = paths_with_bom(spark, plain)
    lines = number_lines(
        text.where(~is_compressed(F.col("_metadata.file_name"))).select(
            F.col("_metadata.file_path").alias("_cdc_uri"),
            F.col("_metadata.file_block_start").alias("_cdc_block"),
            F.col("value").alias("_cdc_text"),
        )
    )
    bom = F.col("file").isin(with_bom) & (F.col("line") == 1) if with_bom else F.lit(False)
    return lines.withColumn("_cdc_bom", bom), len(plain) < len(files)


def paths_with_bom(spark: SparkSession, uris: list[str]) -> list[str]:
    """The files (as binaryFile names them) among ``uris`` whose first bytes are a UTF-8 BOM."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    found = []
    for uri in uris:
        p = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri))
        stream = p.getFileSystem(conf).open(p)
        try:
            head = bytes(stream.read() & 0xFF for _ in range(3))
        finally:
            stream.close()
        if head == BOM:
            found.append(str(p.toString()))
    if found:
        log.info("%d landing file(s) start with a byte-order mark: their line 1 goes to Python", len(found))
    return found


def number_lines(lines: DataFrame) -> DataFrame:
    """``(_cdc_uri, _cdc_block, _cdc_text)`` rows straight from a text scan to ``(file, line, _cdc_text)``.

    Must be applied to the scan itself (a filter may come between): row ids are consecutive only
    within the scan's partitions, and a partition holds whole splits, one after the other.
    """
    ided = lines.withColumn("_cdc_id", F.monotonically_increasing_id())
    splits = ided.groupBy("_cdc_uri", "_cdc_block").agg(
        F.min("_cdc_id").alias("_cdc_first"), F.count(F.lit(1)).alias("_cdc_n")
    )
    earlier = Window.partitionBy("_cdc_uri").orderBy("_cdc_block").rowsBetween(Window.unboundedPreceding, -1)
    splits = splits.select(
        "_cdc_uri",
        "_cdc_block",
        path_of(F.col("_cdc_uri")).alias("file"),  # here, once per split rather than once per line
        (F.lit(1) + F.coalesce(F.sum("_cdc_n").over(earlier), F.lit(0)) - F.col("_cdc_first")).alias(
            "_cdc_to_line"
        ),
    )
    # One row per split of a file: small enough to broadcast, so the lines themselves never shuffle.
    return ided.join(F.broadcast(splits), ["_cdc_uri", "_cdc_block"]).select(
        "file", (F.col("_cdc_id") + F.col("_cdc_to_line")).alias("line"), "_cdc_text"
    )


def path_of(uri: Column) -> Column:
    # `_metadata.file_path` is the URI (a space is %20); binaryFile's `path` is the decoded Hadoop path.
    # A URI keeps '+' as is, and url_decode would read it as a space: protect it first.
    return F.url_decode(F.replace(uri, F.lit("+"), F.lit("%2B")))


def binary_files(spark: SparkSession, path: str | Sequence[str], pattern: str) -> DataFrame:
    if isinstance(path, str):
        return read_landing_files(spark, path, pattern)
    return spark.read.format("binaryFile").load(list(path))
