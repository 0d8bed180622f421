"""The ingest's parse of Debezium JSON lines: the Python parser (what ``ingest`` runs) against a one-pass
parser of its own on the JVM, in the same process, alternating rounds.

(a) ``ingest.spark.parse.parse_landing_files`` of the landing's stream files, checkpointed, as
    ``ingest`` parses them before it types and writes the log;
(b) a probe of the other way: ``bench/java/LineParse.java`` (Jackson's streaming parser, which Spark
    ships), compiled here with the JDK's ``javac`` against pyspark's jars and registered as a Spark UDF,
    one pass per line of Spark's text reader giving the op, the key's, ``before``'s and ``after``'s
    texts, the key's and the row's names and the source's fields; checkpointed the same way. It builds
    no position, pairs no key change and refuses nothing the Python parser would quarantine: what it
    measures is the cost of reading every line once on the JVM, the floor of such a parser.
(c) the text reader alone over the same files.

Both count their row events, which must agree. The landing is ``bench.reconcile``'s (the capture's JSON
lines of about N/10 keys); ``--landing DIR`` keeps it for the next run (``bench.reconcile`` reuses it).

    python -m bench.jvm_parse --events 1000000 [--landing DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import zipfile
from pathlib import Path

from bench.common import report, timed
from bench.reconcile import reuse_or_make_landing
from cdc_backfill.landing.layout import STREAM_DIR
from cdc_backfill.runtime import find_java

JAVA_SOURCE = Path(__file__).parent / "java" / "LineParse.java"
CLASS_NAME = "cdcbackfill.bench.LineParse"
FIELDS = ("op", "key", "before", "after", "connector", "schema", "table", "lsn", "txId", "commit", "ts",
          "snapshot", "partition", "offset", "key_names", "row_names")  # fmt: skip


def javac() -> list[str]:
    """The JDK's compiler, asked for classes the Java that runs Spark loads (``runtime.find_java``): that
    Java's own ``javac``, else the first on PATH with ``--release`` of that Java (a runtime alone has
    none)."""
    java = find_java()
    if not java.ok or java.home is None:
        raise SystemExit(f"no Java 17+ to run Spark: {java.detail}")
    own = java.home / "bin" / "javac"
    found = str(own) if own.exists() else shutil.which("javac")
    if not found:
        raise SystemExit("no javac: this probe needs a JDK (apt-get install openjdk-17-jdk-headless)")
    return [found, "--release", str(java.major)]


def build_jar(work: Path) -> Path:
    """``LineParse.java`` compiled against pyspark's jars into ``work/lineparse.jar``."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classes = work / "classes"
    subprocess.run(
        [*javac(), "-nowarn", "-cp", f"{jars}/*", "-d", str(classes), str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
    )
    jar = work / "lineparse.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for f in classes.rglob("*.class"):
            z.write(f, f.relative_to(classes).as_posix())
    return jar


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--landing", type=Path, help="a folder to keep the generated landing in and reuse")
    args = ap.parse_args()

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from cdc_backfill.eventlog.counts import ROW_OPS
    from cdc_backfill.ingest.spark.parse import parse_landing_files
    from cdc_backfill.spark.session import build_session

    with tempfile.TemporaryDirectory(prefix="bench-jvm-parse-") as tmp:
        work = Path(tmp)
        landing = reuse_or_make_landing((args.landing or work / "landing").resolve(), args.events, 5000)
        paths = sorted(str(p) for p in (landing.json / STREAM_DIR).glob("*.jsonl"))
        jar = build_jar(work)
        spark = build_session("bench_jvm_parse", master=args.master, conf={"spark.jars": str(jar)})
        spark.udf.registerJavaFunction(
            "line_parse", CLASS_NAME, T.StructType([T.StructField(n, T.StringType()) for n in FIELDS])
        )
        files = spark.read.format("binaryFile").load(paths)
        lines = spark.read.text(paths)
        row_ops = list(ROW_OPS)

        def python() -> int:
            parsed = parse_landing_files(files).localCheckpoint()
            n = parsed.where(F.col("op").isin(row_ops)).count()
            parsed.unpersist()
            return n

        def jvm() -> int:
            parsed = lines.select(F.expr("line_parse(value)").alias("p")).select("p.*").localCheckpoint()
            n = parsed.where(F.col("op").isin(row_ops)).count()
            parsed.unpersist()
            return n

        def text() -> int:
            return lines.count()

        python(), jvm()  # the first of each: the JVM's and the workers' warm-up, not counted
        times: dict[str, list[float]] = {"python": [], "jvm": [], "text": []}
        counts = {}
        for _ in range(args.rounds):
            for name, fn in (("python", python), ("jvm", jvm), ("text", text)):
                t, counts[name] = timed(fn)
                times[name].append(t)
        spark.stop()
    if counts["python"] != counts["jvm"]:
        raise SystemExit(f"the parsers disagree: {counts['python']:,} row events against {counts['jvm']:,}")
    med = {k: statistics.median(v) for k, v in times.items()}
    n = counts["python"]
    rows = [
        {"measure": "(a) Python parser + checkpoint (ingest's)", "items": n, "seconds": med["python"],
         "rate": n / med["python"], "reference": ""},
        {"measure": "(b) one-pass JVM parser + checkpoint (probe)", "items": n, "seconds": med["jvm"],
         "rate": n / med["jvm"], "reference": f"{med['python'] / med['jvm']:.1f}x faster than (a)"},
        {"measure": "(c) Spark's text reader alone", "items": n, "seconds": med["text"],
         "rate": n / med["text"], "reference": ""},
    ]  # fmt: skip
    report(
        "jvm_parse",
        rows,
        {"events": landing.events, "rounds": args.rounds, "rounds_seconds": times, "master": args.master},
    )
    print(f"(medians of {args.rounds} alternating rounds in one process, after a warm-up of each)")


if __name__ == "__main__":
    main()
