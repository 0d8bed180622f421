"""docker/compose.yaml cannot run here (no container engine): check what can be checked without one.
It parses, it has every service the README names, the sources are configured for change capture,
Airflow runs this project's DAGs, and the SQL Server init script is T-SQL that parses."""

from __future__ import annotations

from pathlib import Path

import sqlglot
import yaml

DOCKER = Path(__file__).resolve().parents[1] / "docker"


def test_compose_file_wires_the_stack() -> None:
    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = doc["services"]
    assert {"postgres", "sqlserver", "sqlserver-init", "airflow-db", "airflow-init", "airflow-apiserver",
            "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer", "spark-master",
            "spark-worker"} <= services.keys()  # fmt: skip
    assert "wal_level=logical" in services["postgres"]["command"]
    assert services["sqlserver"]["environment"]["MSSQL_AGENT_ENABLED"] == "true"
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"):
        svc = services[name]
        assert svc["command"][:2] == [
            "airflow",
            name.removeprefix("airflow-").replace("apiserver", "api-server"),
        ]
        assert "../dags:/opt/cdc/dags" in svc["volumes"]
        assert svc["environment"]["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/cdc/dags"
        assert "AIRFLOW_CONN_SPARK_DEFAULT" in svc["environment"]
    assert (DOCKER / "airflow.Dockerfile").read_text().startswith("# ")


def understood_tsql(batch: str) -> list[str]:
    """What sqlglot makes of a T-SQL batch, statement by statement: a statement it does not understand
    falls back to a ``Command`` (a typo such as ``CREATE TABEL`` parses that way)."""
    return [type(statement).__name__ for statement in sqlglot.parse(batch, read="tsql")]


def test_sqlserver_init_script_is_tsql() -> None:
    batches = [b for b in (DOCKER / "sqlserver" / "init.sql").read_text().split("\nGO") if b.strip()]
    for batch in batches:
        assert "Command" not in understood_tsql(batch), batch
    assert understood_tsql("CREATE TABEL x (a int)") == ["Command"]  # the check can fail
    text = "\n".join(batches)
    assert "sp_cdc_enable_db" in text and "cdc_signal" in text
    assert "id VARCHAR(42)" in text and "data VARCHAR(2048)" in text


def test_debezium_capture_services_run_commands_that_build_valid_configurations(tmp_path: Path) -> None:
    """Each ``capture-debezium-*`` service runs ``cdc-backfill capture debezium --follow``: its command
    parses as the CLI's, and the configuration it builds names the right connector and signal table
    (the connector classes' own validation: tests/capture/debezium/test_settings.py)."""
    from cdc_backfill.capture.debezium.settings import DebeziumSettings, connector_properties
    from cdc_backfill.cli.main import build_parser

    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    assert {"mysql", "oracle"} <= services.keys()
    expected = {
        "capture-debezium-sqlserver": ("SqlServerConnector", "cdc.dbo.cdc_signal"),
        "capture-debezium-mysql": ("MySqlConnector", "cdc.cdc_signal"),
        "capture-debezium-oracle": ("OracleConnector", "FREEPDB1.CDC.CDC_SIGNAL"),
    }
    for name, (connector, signal) in expected.items():
        svc = services[name]
        assert (
            svc["profiles"] == ["debezium"] and svc["environment"]["AWS_ENDPOINT_URL"] == "http://minio:9000"
        )
        cmd = svc["command"]
        assert cmd[:3] == ["cdc-backfill", "capture", "debezium"] and cmd[-1] == "--follow"
        args = build_parser().parse_args(cmd[1:])
        extra = dict(p.split("=", 1) for p in args.property)
        props = connector_properties(
            DebeziumSettings(args.source, tuple(args.collections), args.signal_table, tmp_path, extra=extra)
        )
        assert str(args.landing).startswith("s3://lake/landing/"), name
        assert props["connector.class"].endswith(connector), name
        assert props["signal.data.collection"] == signal, name
    assert "ARCHIVELOG" in (DOCKER / "oracle" / "init.sql").read_text()
    for batch in (DOCKER / "mysql" / "init.sql").read_text().split(";"):
        if batch.strip():
            sqlglot.parse(batch, read="mysql")


def test_the_lake_is_on_minio_for_every_reader_and_writer() -> None:
    """MinIO and its bucket, the AWS settings and the lake's URIs in Airflow's environment, no volume
    shared between the driver and the executors; the image installs the package; Kafka and Kafka Connect."""
    from cdc_backfill.lakepath import S3Path, lake_path

    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    assert {"minio", "minio-init"} <= services.keys()
    assert "mc mb --ignore-existing lake/lake" in services["minio-init"]["entrypoint"][-1]
    env = services["airflow-scheduler"]["environment"]
    assert env["AWS_ENDPOINT_URL"] == "http://minio:9000" and env["CDC_BACKFILL_S3_PATH_STYLE"] == "1"
    assert lake_path(env["CDC_BACKFILL_LANDING"]) == S3Path("lake", "landing")
    assert lake_path(env["CDC_BACKFILL_STATE"]) == S3Path("lake", "state")
    assert env["AWS_ACCESS_KEY_ID"] == services["minio"]["environment"]["MINIO_ROOT_USER"]
    for name in ("spark-master", "spark-worker"):
        assert "volumes" not in services[name], name  # the executors see the lake on S3 only
    # the package installed as users install it (its plugin by entry point), not the checkout's folders
    assert "/opt/cdc/plugins" not in str(services["airflow-scheduler"]) and "SPARK_CONF_DIR" not in env
    dockerfile = (DOCKER / "airflow.Dockerfile").read_text()
    assert "pip install" in dockerfile and "[airflow," in dockerfile and "-e " not in dockerfile
    assert {"kafka", "kafka-connect"} <= services.keys()
    assert services["kafka-connect"]["environment"]["BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert "kafka:9092" in env["AIRFLOW_CONN_KAFKA_DEFAULT"]


def test_sqlserver_loop_script_is_bash_whose_commands_parse_as_written() -> None:
    """The loop script cannot run here (no SQL Server, no containers): it is valid bash, and every
    cdc-backfill command in it parses with the defaults it sets."""
    import re
    import shlex
    import subprocess

    from cdc_backfill.cli.main import build_parser

    script = DOCKER / "sqlserver" / "loop.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text().replace("\\\n", " ")
    defaults = dict(re.findall(r"^(\w+)=\$\{\w+:-([^}]*)\}$", text, re.M))
    defaults |= dict(re.findall(r"^(\w+)=([^$\s(]+)$", text, re.M))
    assert defaults["SOURCE"].startswith("mssql://") and defaults["SIGNAL_TABLE"] == "dbo.cdc_signal"

    def command(rest: str) -> list[str]:  # the words up to a pipe or the end of the $( )
        lex = shlex.shlex(rest, posix=True, punctuation_chars="|);&")
        lex.whitespace_split = True
        words = []
        for word in lex:
            if word in ("|", ")", ";", "&&", "||"):
                break
            words.append(word)
        return words

    substituted = re.sub(r'"\$(\w+)"', lambda m: shlex.quote(defaults.get(m.group(1), "x")), text)
    commands = [command(m) for m in re.findall(r"(?:^|\$\()\s*cdc (.+)$", substituted, re.M)]
    assert {" ".join(c[:2]) for c in commands} >= {
        "signal init", "signal execute-snapshot", "signal log", "capture debezium", "ingest --landing",
        "reconcile --landing", "state --state",
    }  # fmt: skip
    parser = build_parser()
    for words in commands:
        args = parser.parse_args(words)
        assert getattr(args, "source", None) in (None, defaults["SOURCE"]), words
