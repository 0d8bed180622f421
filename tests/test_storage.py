"""Lake locations as URIs: what a user types, what each reader and writer is given, and S3 for real
(moto's server as a process): pyarrow's filesystem and delta-rs commits reach the same objects."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cdc_backfill.lakepath import S3Path, lake_path
from cdc_backfill.storage import (
    Location,
    StorageError,
    delta_options,
    describe,
    filesystem,
    parse_location,
    spark_conf,
)

S3_ENV = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    "AWS_ACCESS_KEY_ID": "key",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_DEFAULT_REGION": "eu-west-1",
}


@pytest.mark.parametrize(
    ("typed", "want"),
    [
        ("lake", Location("file", "/work/lake")),
        ("/data/lake/", Location("file", "/data/lake/")),
        ("file:///data/lake", Location("file", "/data/lake")),
        ("s3://bucket/lake/", Location("s3", "lake", "bucket")),
        ("s3a://bucket/a/b", Location("s3", "a/b", "bucket")),
        ("s3://bucket", Location("s3", "", "bucket")),
    ],
)
def test_locations_as_users_type_them(typed: str, want: Location) -> None:
    assert parse_location(typed, base=Path("/work")) == want


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("gs://bucket/lake", "gs:// is not a lake location here"),
        ("s3:///lake", "no bucket"),
        ("file://host/lake", "names no host"),
        ("  ", "no location given"),
    ],
)
def test_bad_locations_say_what_to_give(typed: str, words: str) -> None:
    with pytest.raises(StorageError, match=words):
        parse_location(typed)


def test_each_reader_gets_the_same_place() -> None:
    part = lake_path("s3://bucket/lake") / "state" / "public.t"
    assert isinstance(part, S3Path)
    assert (str(part), part.fs_path, part.location) == (
        "s3://bucket/lake/state/public.t", "bucket/lake/state/public.t", Location("s3", "lake/state/public.t", "bucket"),
    )  # fmt: skip
    assert lake_path("/data/lake") / "state" == Path("/data/lake/state")


def test_spark_and_delta_settings_from_the_standard_aws_environment() -> None:
    loc = parse_location("s3://bucket/lake")
    conf = spark_conf(S3_ENV)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    opts = delta_options(loc, S3_ENV)
    assert opts["aws_conditional_put"] == "etag" and opts["AWS_ALLOW_HTTP"] == "true"
    assert opts["AWS_REGION"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"  # s3:// as s3a://
    assert delta_options(parse_location("/data"), S3_ENV) == {}
    assert "spark.hadoop.fs.s3a.endpoint" not in spark_conf({})  # AWS itself: s3a's own default


def test_credentials_are_never_printed() -> None:
    shown = describe(
        {
            **spark_conf(S3_ENV),
            **delta_options(parse_location("s3://b/l"), S3_ENV),
        }
    )
    text = json.dumps(shown)
    assert (
        "secret" not in text.replace("secret.key", "").replace("SECRET_ACCESS_KEY", "")
        and '"key"' not in text
    )
    assert shown["spark.hadoop.fs.s3a.secret.key"] == "***" == shown["AWS_SECRET_ACCESS_KEY"]


def test_pyarrow_and_delta_rs_reach_the_same_objects_on_a_real_s3_server(s3_server, s3_env) -> None:  # type: ignore[no-untyped-def]
    import boto3
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, Schema
    from deltalake import transaction as tx

    bucket = s3_server.new_bucket()
    table = S3Path(bucket, "lake/state/public.t")
    fs = filesystem(table.location)
    part = table / "v000000-x" / "part-0.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), part.fs_path, filesystem=fs)
    size = fs.get_file_info(part.fs_path).size
    opts = delta_options(table.location)
    add = tx.AddAction(
        "v000000-x/part-0.parquet", size, {}, int(time.time() * 1000), True, '{"numRecords": 3}'
    )
    tx.create_table_with_add_actions(
        str(table),
        Schema.from_arrow(pa.schema([("id", pa.int64())])),
        [add],
        mode="error",
        storage_options=opts,
    )
    dt = DeltaTable(str(table), storage_options=opts)
    assert dt.file_uris() == [f"{table}/v000000-x/part-0.parquet"]
    assert dt.to_pyarrow_table().column("id").to_pylist() == [1, 2, 3]
    # a commit point is written only if absent: the server refuses a second writer of one version
    client = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    log = f"{table.key}/_delta_log/00000000000000000000.json"
    with pytest.raises(client.exceptions.ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=bucket, Key=log, Body=b"{}", IfNoneMatch="*")
