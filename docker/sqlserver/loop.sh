#!/usr/bin/env bash
# The whole loop on SQL Server with Debezium's SQL Server connector as the snapshot engine and the change
# stream: our signal, Debezium's incremental snapshot while rows change, ingest, reconcile, and a check of
# the state against the source. Run from the repository's root:
#
#   bash docker/sqlserver/loop.sh
#
# It starts what it needs of docker/compose.yaml (SQL Server with CDC and the signal table, MinIO, and the
# capture-debezium-sqlserver service following the connector into s3://lake/landing/sqlserver), and runs
# every cdc-backfill command inside that service's container, which has the package, Java and the lake's
# settings. `cdc-backfill verify` reads PostgreSQL sources only, so the check here compares the row count
# and the sum of the keys of dbo.orders in the source and in the state.
set -euo pipefail

COMPOSE=(docker compose -f docker/compose.yaml --profile debezium)
CAPTURE=capture-debezium-sqlserver
SOURCE=${SOURCE:-mssql://sa:Cdc-backfill-1@sqlserver:1433/cdc}
LANDING=${LANDING:-s3://lake/landing/sqlserver}
STATE=${STATE:-s3://lake/state/sqlserver}
SIGNAL_TABLE=dbo.cdc_signal
SA_PASSWORD=Cdc-backfill-1
SNAPSHOT_ID=${SNAPSHOT_ID:-loop-$(date +%s)}
WAIT_S=${WAIT_S:-900}

cdc() { "${COMPOSE[@]}" exec -T "$CAPTURE" cdc-backfill "$@"; }
tsql() {
  "${COMPOSE[@]}" exec -T sqlserver /opt/mssql-tools18/bin/sqlcmd -C -S localhost -U sa -P "$SA_PASSWORD" \
    -d cdc -h -1 -W -Q "SET NOCOUNT ON; $1"
}
landed() {  # records the capture has landed so far
  cdc capture debezium status --landing "$LANDING" --json \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["records landed"])'
}
snapshot_status() {  # completed, aborted, in_progress ... or nothing while Debezium has said nothing
  cdc capture debezium status --landing "$LANDING" --json \
    | python3 -c 'import json, sys; s = json.load(sys.stdin)["snapshots"]; print(s.get(sys.argv[1], "") if isinstance(s, dict) else "")' "$SNAPSHOT_ID"
}

"${COMPOSE[@]}" up -d --wait sqlserver minio
"${COMPOSE[@]}" up -d sqlserver-init minio-init "$CAPTURE"
cdc signal init --source "$SOURCE" --signal-table "$SIGNAL_TABLE"

# the connector streams from where it first started: a signal written before that is never seen. A log
# signal is written until one has landed, so the capture is known to be reading the stream
deadline=$((SECONDS + WAIT_S))
before=$(landed)
until (($(landed) > before)); do
  ((SECONDS < deadline)) || { echo "the capture landed nothing within ${WAIT_S} s" >&2; exit 1; }
  cdc signal log --source "$SOURCE" --signal-table "$SIGNAL_TABLE" --message "loop.sh: is the capture reading?"
  sleep 10
done

# Debezium's SQL Server connector names dbo.orders cdc.dbo.orders: the signal is written that way
cdc signal execute-snapshot --source "$SOURCE" --signal-table "$SIGNAL_TABLE" --collections 'dbo\.orders' \
  --id "$SNAPSHOT_ID"

# rows change while the snapshot runs: updates, deletes, inserts and a key change
tsql "UPDATE dbo.orders SET status = 'paid', amount = amount + 1 WHERE id % 7 = 0"
tsql "DELETE FROM dbo.orders WHERE id % 11 = 0"
tsql "INSERT INTO dbo.orders (id, status, amount) SELECT id + 100000, 'late', 2.50 FROM dbo.orders WHERE id % 13 = 0"
tsql "UPDATE dbo.orders SET id = id + 200000 WHERE id = 1"

deadline=$((SECONDS + WAIT_S))
until [[ "$(snapshot_status)" =~ ^(completed|aborted)$ ]]; do
  ((SECONDS < deadline)) || { echo "snapshot $SNAPSHOT_ID did not end within ${WAIT_S} s" >&2; exit 1; }
  sleep 5
done
[[ "$(snapshot_status)" == completed ]] || { echo "snapshot $SNAPSHOT_ID was aborted" >&2; exit 1; }

# SQL Server's capture job copies changes into its change tables every few seconds: ingest and reconcile
# until the state holds what the source holds, or give up and show both
source_sums=$(tsql "SELECT COUNT(*), SUM(id) FROM dbo.orders" | tr -s ' \t\r\n' ' ' | xargs)
for attempt in 1 2 3 4 5 6; do
  cdc ingest --landing "$LANDING"
  cdc reconcile --landing "$LANDING" --state "$STATE"
  state_sums=$(cdc state --state "$STATE" --sql 'SELECT count(*) AS n, sum(id) AS s FROM "dbo.orders"' --json \
    | python3 -c 'import json, sys; r = json.loads(sys.stdin.readline()); print(int(r["n"]), int(r["s"] or 0))')
  if [[ "$state_sums" == "$source_sums" ]]; then
    echo "dbo.orders: the state equals the source in rows and keys ($state_sums)"
    exit 0
  fi
  echo "attempt $attempt: state $state_sums, source $source_sums; waiting for the change tables" >&2
  sleep 10
done
echo "dbo.orders: the state (count, key sum: $state_sums) differs from the source ($source_sums)" >&2
exit 1
