"""The pure decisions behind the Airflow operators, sensor, trigger and progress page."""

from __future__ import annotations

import datetime as dt

import pytest

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.schedules import ScheduleError, parse_schedules
from cdc_backfill.capture.fence import stream_passed
from cdc_backfill.program import program
from cdc_backfill.signals.model import Signal
from cdc_backfill.snapshot.progress import RangeProgress


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (["public\\.orders", " "], ["public\\.orders"]),
        ('["a\\\\.b", "c"]', ["a\\.b", "c"]),  # JSON text
        ("['a', 'b']", ["a", "b"]),  # a list as Jinja renders it
        ("a, b", ["a", "b"]),
        ("", []),
        (None, []),
    ],
)
def test_collections_are_read_from_every_shape_a_form_or_template_gives(value: object, want: list) -> None:
    assert plans.as_list(value) == want


def test_form_values_are_checked() -> None:
    assert plans.optional_text("  ") is None and plans.optional_text("None") is None
    assert plans.as_int("12", "chunk_size", 1, 100) == 12
    with pytest.raises(ValueError, match="between 1 and 100"):
        plans.as_int(0, "chunk_size", 1, 100)
    assert plans.one_of("Native", "engine", plans.ENGINES) == "native"
    with pytest.raises(ValueError, match="one of native, debezium"):
        plans.one_of("flink", "engine", plans.ENGINES)
    assert plans.as_bool("false") is False and plans.as_bool(True) is True


def test_signals_from_the_form_are_debeziums_json() -> None:
    sig = plans.execute_signal("sig-1", ["public\\.orders"], "status = 'open'", "code", 100)
    assert sig.row() == {
        "id": "sig-1",
        "type": "execute-snapshot",
        "data": '{"data-collections": ["public\\\\.orders"], "type": "incremental", '
        '"additional-condition": "status = \'open\'", "surrogate-key": "code", "chunk-size": 100}',
    }
    assert Signal.from_row(*sig.row().values()) == sig
    assert plans.stop_signal("sig-2").row() == {
        "id": "sig-2",
        "type": "stop-snapshot",
        "data": '{"type": "incremental"}',
    }


def test_reconcile_submit_is_the_cli_command_cut_for_spark_submit_operator() -> None:
    application, args = plans.reconcile_submit(
        "lake", "state", ["public.orders", "public.lines"], "public.cdc_signal"
    )
    assert application.endswith("cdc_backfill/jobs/reconcile.py")
    assert args == [
        "--landing", "lake", "--state", "state", "--collections", "public.orders", "public.lines",
        "--signal-table", "public.cdc_signal",
    ]  # fmt: skip


def test_a_kafka_capture_reads_its_topics_in_the_reconcile_job_named_by_its_arguments() -> None:
    form = {"collections": "public\\.orders", "landing_dir": "lake", "state_dir": "state", "capture": "kafka",
            "topics": " cdc\\..* ", "kafka_conn_id": ""}  # fmt: skip
    request = plans.SnapshotRequest.from_form(form)
    assert (request.topics, request.kafka_conn_id) == ("cdc\\..*", "kafka_default")
    assert plans.SnapshotRequest.from_form({**form, "capture": "drain"}).topics is None
    _, args = plans.reconcile_submit(
        "lake", "state", ["public.orders"], "public.sig", kafka=("b:9092", "cdc\\..*")
    )
    assert "--packages" not in args  # the operator adds Spark's Kafka source; the arguments name the topics
    assert args[args.index("--topics") + 1] == "cdc\\..*"
    assert args[args.index("--bootstrap-servers") + 1] == "b:9092"


def test_the_stream_has_passed_a_fence_once_a_later_commit_landed() -> None:
    assert not stream_passed((0, 0), 100)
    assert not stream_passed((99, 120), 100)  # a commit before the fence (its changes may be later)
    assert stream_passed((100, 90), 100)  # the fence's own commit
    assert stream_passed((101, 90), 100)
    assert (
        plans.fence_target(
            [{"fence_lsn": 5}, {"fence_lsn": 9}, None, {"status": "debezium", "fence_lsn": None}]
        )
        == 9
    )
    assert plans.fence_target([]) is None


def _range(status: str, chunks: int = 0, rows: int = 0, reason: str | None = None) -> RangeProgress:
    now = dt.datetime(2026, 1, 1)
    return RangeProgress("s", "public.t", 0, status, None, None, None, chunks, rows, 10, now, now, reason)


def test_a_collections_outcome_comes_from_its_ranges() -> None:
    assert plans.collection_outcome([]).status == "not-started"
    assert plans.collection_outcome([_range("done", 2, 20), _range("running", 1, 5)]).status == "running"
    assert plans.collection_outcome([_range("done", 2, 20), _range("stopped", 1, 5, "stopped by x")]) == (
        plans.Outcome("stopped", 3, 25, "stopped by x")
    )
    assert plans.collection_outcome([_range("failed", reason="boom"), _range("stopped")]).status == "failed"
    assert plans.collection_outcome([_range("done", 1, 3)]).finished


def test_schedules_file_entries_become_dags_or_say_what_is_wrong() -> None:
    [entry] = parse_schedules(
        """
        [[backfill]]
        name = "orders_daily"
        start_date = 2026-01-01
        collections = ['public\\.orders']
        condition = "updated_at >= '{{ data_interval_start }}'"
        """
    )
    assert entry.dag_id == "cdc_scheduled_backfill__orders_daily"
    assert entry.schedule == "@daily" and entry.catchup is False and entry.reconcile is True
    assert entry.start_date == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for bad, why in (
        ('[[backfill]]\nname = "x"\ncollections = []', "collections"),
        ('[[backfill]]\nname = "x y"\ncollections = ["a"]', "name"),
        ('[[backfill]]\nname = "x"\ncollections = ["a"]\nchunk_size = 0', "chunk_size"),
        ('[[backfill]]\nname = "x"\ncollections = ["a"]\nengine = "flink"', "engine"),
        ('[[backfill]]\nname = "x"\ncollections = ["a"]\ncolections = ["a"]', "unknown keys colections"),
        (
            '[[backfill]]\nname = "x"\ncollections = ["a"]\n[[backfill]]\nname = "x"\ncollections = ["b"]',
            "unique",
        ),
        ("[[backfill]\n", "not valid TOML"),
    ):
        with pytest.raises(ScheduleError, match=why):
            parse_schedules(bad)


@pytest.mark.parametrize(
    "module",
    ["cdc_backfill.airflow.plans", "cdc_backfill.airflow.schedules", "cdc_backfill.airflow.defaults"],
)
def test_the_decisions_import_neither_airflow_nor_spark(module: str) -> None:
    from tests.support.imports import imported_after as _imported_after

    loaded = _imported_after(f"import {module}")
    assert "airflow" not in loaded and "pyspark" not in loaded


def test_a_form_is_normalised_once_into_a_typed_request() -> None:
    form = {"collections": "public\\.orders, ", "readers": "4", "engine": " Native ", "verify": "false",
            "landing_dir": " lake ", "state_dir": "state", "condition": "  "}  # fmt: skip
    request = plans.SnapshotRequest.from_form(form)
    assert request == plans.SnapshotRequest(
        ("public\\.orders",), None, None, None, 4, "auto", "native", "drain", "lake", "state", False
    )
    # the chunk files' compression, as the CLI's --chunk-compression takes it
    assert (
        plans.SnapshotRequest.from_form({**form, "chunk_compression": " ZSTD "}).chunk_compression == "zstd"
    )
    # no chunk size: the signal names none, and the engine sizes the chunks
    assert plans.SnapshotRequest.from_form({**form, "chunk_size": "None"}).chunk_size is None
    assert plans.SnapshotRequest.from_form({**form, "chunk_size": " 500 "}).chunk_size == 500
    assert request.signal("s1").chunk_size is None and request.signal("s1").collections == (
        "public\\.orders",
    )
    for bad, message in (
        ({"readers": plans.MAX_READERS + 1}, f"readers must be between 1 and {plans.MAX_READERS}"),
        ({"engine": "kafka"}, "engine must be one of native, debezium"),
        ({"chunk_compression": "lz4"}, "chunk_compression must be one of auto, none, zstd"),
        ({"landing_dir": ""}, "landing_dir and state_dir must be given"),
        (
            {"capture": "kafka", "topics": " "},
            "capture kafka needs topics: a regular expression of the whole",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            plans.SnapshotRequest.from_form({**form, **bad})


def test_a_difference_names_the_cli_repair_that_completes_it() -> None:
    hint = plans.repair_hint("public.orders", "/data/state", "/data/lake", "cdc_source", None)
    assert hint == (
        f"CDC_BACKFILL_SOURCE_URL=<connection cdc_source's URI> {program()} verify --state /data/state "
        "--collection public.orders --repair --wait --landing /data/lake"
    )
    # no connection: the workers' environment (or config file) names the source, as it does for the CLI
    hint = plans.repair_hint("public.orders", "state dir", None, None, "ops.cdc_signal")
    assert hint.endswith("--state 'state dir' --collection public.orders --repair --wait --landing LANDING "
                         "--signal-table ops.cdc_signal")  # fmt: skip


def test_a_stop_with_nothing_to_stop_is_not_written() -> None:
    assert plans.nothing_to_stop({}, []) == "nothing to stop: no snapshot is accepted, running or paused"
    running = {"s1": ["public.orders", "public.lines"]}
    assert plans.nothing_to_stop(running, []) is None
    assert plans.nothing_to_stop(running, ["public\\.orders"]) is None
    assert plans.nothing_to_stop(running, ["public\\.nope"]) == (
        "nothing to stop: no unfinished snapshot reads public\\.nope (they read public.lines, public.orders)"
    )
