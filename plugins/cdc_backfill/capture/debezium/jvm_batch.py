"""An engine batch taken out of the JVM in a few calls, however many records it holds.

Asking each record for its destination, key and value, and marking each processed, cost several JPype
calls per record, and turning Java strings into Python ones cost more than Debezium's own work. Here the
JVM does the per-record work: :meth:`BatchReader.lines` builds a batch file's bytes there (each record's
line made by a method handle composed from the records' own methods and a ``StringConcatFactory``
concatenation, so no Java of ours needs compiling), and Python only writes them. Destinations come out
joined into one string (to find the notifications), and keys and values too when a batch needs looking
into (the records a crash may have landed already).

With ``schemas`` on, the engine's converter writes no ``{schema, payload}`` wrapper: each record's line
names its key's and its value's Connect schema by id (``SCHEMA_RECIPE``), and the batch file starts with
one line defining the ids it uses (:func:`schema_header`). A schema is the same Java object for every
record of a table until the table changes, so ids come from an identity map filled once per schema:
the schema's JSON, 5 of a record's 5.7 kB, is written once per file instead of once per record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

# Never inside JSON text: a NUL in a string is written \u0000, and none may stand outside one.
SEPARATOR = "\0"
_NULL = "null"  # how Java writes a null: for a key or a value it means what JSON's null means
# A batch file's line (batch_files.batch_lines), \1 where each argument goes: offset, key, value.
LINE_RECIPE = '{"partition":0,"offset":\1,"key":\1,"value":\1}'
# Schema objects remembered at most: a connector keeps one per table until the table changes
MAX_SCHEMAS = 4096
# The same with the key's and the value's schema ids (quoted JSON strings, or null) after them.
SCHEMA_RECIPE = '{"partition":0,"offset":\1,"key":\1,"value":\1,"key_schema":\1,"value_schema":\1}'


def schema_id(schema_json: str) -> str:
    """A schema's id (pure): from its JSON text, so the same schema has the same id in every file."""
    return hashlib.sha1(schema_json.encode()).hexdigest()[:16]


def schema_header(schemas: Mapping[str, str]) -> bytes:
    """A batch file's first line (pure): the schema JSON of each id its lines name."""
    inner = ",".join(f'"{sid}":{text}' for sid, text in sorted(schemas.items()))
    return ('{"schemas":{' + inner + "}}\n").encode()


def wrapped(schema_json: str | None, part: str | None) -> str | None:
    """A key or value as the converter writes it with its schema: ``{schema, payload}`` (pure)."""
    if part is None or schema_json is None:
        return part
    return f'{{"schema":{schema_json},"payload":{part}}}'


def split_joined(joined: str, count: int, what: str) -> list[str | None]:
    """The ``count`` parts of ``joined`` (pure); ``null`` is None. A part holding the separator would
    shift every later one: refused rather than landed misaligned."""
    if count == 0:
        return []
    parts = joined.split(SEPARATOR)
    if len(parts) != count:
        raise ValueError(f"a batch of {count} records gave {len(parts)} {what}: a {what[:-1]} holds a NUL")
    return [None if p == _NULL else p for p in parts]


class BatchReader:
    """Reads the engine's ``List<ChangeEvent<String, String>>`` batches and marks them processed; made
    once the JVM runs. ``schemas``: the records' Connect schemas go by id (the engine's converter must
    then write none)."""

    def __init__(self, schemas: bool = False) -> None:
        import jpype

        jclass = jpype.JClass
        self._jpype = jpype
        mh = self._mh = jclass("java.lang.invoke.MethodHandles")
        mt = self._mt = jclass("java.lang.invoke.MethodType")
        lmf = jclass("java.lang.invoke.LambdaMetafactory")
        lookup = mh.lookup()
        obj, string = jclass("java.lang.Object"), jclass("java.lang.String")
        self._object = obj
        self._int, long_ = jclass("java.lang.Integer").TYPE, jclass("java.lang.Long").TYPE
        void = self._void = jclass("java.lang.Void").TYPE
        event = self._event = jclass("io.debezium.engine.ChangeEvent")
        committer = jclass("io.debezium.engine.DebeziumEngine$RecordCommitter")
        self._list = jclass("java.util.ArrayList")
        self._joining = jclass("java.util.stream.Collectors").joining(SEPARATOR)
        self._file = jclass("java.util.stream.Collectors").joining("\n", "", "\n")
        self._range = jclass("java.util.stream.IntStream").range
        self._utf8 = jclass("java.nio.charset.StandardCharsets").UTF_8
        self._proxies = jclass("java.lang.invoke.MethodHandleProxies")
        self._int_function = jclass("java.util.function.IntFunction")
        self._handles = jpype.JArray(jclass("java.lang.invoke.MethodHandle"))
        self._objects = jpype.JArray(obj)

        def getter(name: str, returns: Any) -> Any:  # a Function calling event.name()
            site = lmf.metafactory(
                lookup, "apply", mt.methodType(jclass("java.util.function.Function")),
                mt.methodType(obj, obj), lookup.findVirtual(event, name, mt.methodType(returns)),
                mt.methodType(returns, event),
            )  # fmt: skip
            # invokeWithArguments: a MethodHandle's invoke cannot be called reflectively (JPype)
            return site.getTarget().invokeWithArguments(self._list())

        self._getters = {"destination": getter("destination", string)}
        self._getters |= {name: getter(name, obj) for name in ("key", "value")}
        self._mark_site = lmf.metafactory(
            lookup, "accept", mt.methodType(jclass("java.util.function.Consumer"), committer),
            mt.methodType(void, obj), lookup.findVirtual(committer, "markProcessed", mt.methodType(void, obj)),
            mt.methodType(void, obj),
        )  # fmt: skip
        # one line of a record: (offset, key text, value text) -> LINE_RECIPE; a null prints as null
        value_of = lookup.findStatic(string, "valueOf", mt.methodType(string, obj))
        self._text_of = {
            name: mh.filterReturnValue(lookup.findVirtual(event, name, mt.methodType(obj)), value_of)
            for name in ("key", "value")
        }
        concat = jclass("java.lang.invoke.StringConcatFactory").makeConcatWithConstants
        line_type = mt.methodType(string, long_, string, string)
        self._line = concat(lookup, "line", line_type, LINE_RECIPE, self._objects([])).getTarget()
        self._get = lookup.findVirtual(jclass("java.util.List"), "get", mt.methodType(obj, self._int))
        self._add = lookup.findStatic(
            jclass("java.lang.Math"), "addExact", mt.methodType(long_, long_, long_)
        )
        self._long = long_
        self.schemas = schemas
        if schemas:
            self._init_schemas(jclass, lookup, obj, string)

    def _init_schemas(self, jclass: Any, lookup: Any, obj: Any, string: Any) -> None:
        mh, mt = self._mh, self._mt
        change = jclass("io.debezium.embedded.EmbeddedEngineChangeEvent")  # what the engine delivers
        record = jclass("org.apache.kafka.connect.source.SourceRecord")
        schema = jclass("org.apache.kafka.connect.data.Schema")
        source = lookup.findVirtual(change, "sourceRecord", mt.methodType(record))
        # each part's Connect schema of a delivered record, (ChangeEvent) -> Schema
        self._schema_of = {
            part: mh.filterReturnValue(
                source, lookup.findVirtual(record, f"{part}Schema", mt.methodType(schema))
            ).asType(mt.methodType(obj, self._event))
            for part in ("key", "value")
        }
        # schema -> its id as a quoted JSON string; by identity: equals() would walk the whole schema
        self._ids = jclass("java.util.IdentityHashMap")()
        self._json: dict[str, str] = {}  # id -> the schema's JSON
        getter = lookup.findVirtual(jclass("java.util.Map"), "get", mt.methodType(obj, obj))
        value_of = lookup.findStatic(string, "valueOf", mt.methodType(string, obj))
        self._ref_of = {  # (ChangeEvent) -> the part's schema id, "null" for none
            part: mh.filterReturnValue(mh.filterReturnValue(of, getter.bindTo(self._ids)), value_of)
            for part, of in self._schema_of.items()
        }
        converter = self._converter = jclass("org.apache.kafka.connect.json.JsonConverter")()
        config = jclass("java.util.HashMap")()
        config.put("schemas.enable", "true")
        converter.configure(config, False)
        boolean = jclass("java.lang.Boolean").TYPE
        self._set_add = lookup.findVirtual(jclass("java.util.Set"), "add", mt.methodType(boolean, obj))
        self._identity_set = jclass("java.util.Collections").newSetFromMap
        self._identity_map = jclass("java.util.IdentityHashMap")
        self._int_consumer = jclass("java.util.function.IntConsumer")
        self._function = jclass("java.util.function.Function")
        line_type = mt.methodType(string, self._long, string, string, string, string)
        concat = jclass("java.lang.invoke.StringConcatFactory").makeConcatWithConstants
        self._schema_line = concat(lookup, "line", line_type, SCHEMA_RECIPE, self._objects([])).getTarget()

    def _parts(self, records: Any, name: str, getter: Any = None) -> list[str | None]:
        """Every record's ``name()`` (destination, key, value; or ``getter``'s), joined in the JVM and
        split here."""
        count = int(records.size())
        each = self._getters[name] if getter is None else getter
        joined = "" if count == 0 else str(records.stream().map(each).collect(self._joining))
        return split_joined(joined, count, f"{name}s")

    def _at(self, records: Any) -> Any:
        """i -> ``records.get(i)`` as a ChangeEvent."""
        mh, mt = self._mh, self._mt
        get = mh.insertArguments(self._get, 0, self._objects([records]))
        return get.asType(mt.methodType(self._event, self._int))

    def _register(self, records: Any) -> dict[str, str]:
        """id -> JSON of the schemas ``records`` name; a schema met for the first time gets its id."""
        mh, mt = self._mh, self._mt
        if self._ids.size() > MAX_SCHEMAS:  # a connector making schema objects anew: ids are recomputed
            self._ids.clear()
            self._json.clear()
        seen = self._identity_set(self._identity_map())
        at, add = self._at(records), self._set_add.bindTo(seen)
        for of in self._schema_of.values():
            each = mh.filterArguments(add, 0, self._handles([mh.filterReturnValue(at, of)]))
            each = each.asType(mt.methodType(self._void, self._int))
            self._range(0, int(records.size())).forEach(
                self._proxies.asInterfaceInstance(self._int_consumer, each)
            )
        out: dict[str, str] = {}
        for schema in seen:
            if schema is None:  # a tombstone's value, a key-less record
                continue
            ref = self._ids.get(schema)
            if ref is None:
                text = str(self._converter.asJsonSchema(schema).toString())
                sid = schema_id(text)
                self._json[sid] = text
                self._ids.put(schema, f'"{sid}"')
            else:
                sid = str(ref)[1:-1]
            out[sid] = self._json[sid]
        return out

    def destinations(self, records: Any) -> list[str]:
        return [d or "" for d in self._parts(records, "destination")]

    def read(self, records: Any) -> list[tuple[str | None, str | None]]:
        """The records' (key, value) JSON, in delivery order (None: absent); with ``schemas``, each in
        its ``{schema, payload}`` wrapper, as the converter would have written it."""
        keys, values = self._parts(records, "key"), self._parts(records, "value")
        if not self.schemas:
            return list(zip(keys, values, strict=True))
        self._register(records)
        as_function = self._proxies.asInterfaceInstance
        refs = {
            part: self._parts(records, f"{part} schema", as_function(self._function, of.asType(
                self._mt.methodType(self._object, self._object))))
            for part, of in self._ref_of.items()
        }  # fmt: skip
        json = self._json
        return [
            (wrapped(json.get((kr or '""')[1:-1]), k), wrapped(json.get((vr or '""')[1:-1]), v))
            for k, v, kr, vr in zip(keys, values, refs["key"], refs["value"], strict=True)
        ]

    def lines(self, records: Any, first: int, prelude: bytes = b"") -> bytes:
        """The batch file of ``records`` from delivery offset ``first`` (``batch_lines``'s lines, each
        ending in a newline; with ``schemas``, SCHEMA_RECIPE's after a :func:`schema_header`), built in
        the JVM and handed over as UTF-8 bytes; ``prelude``'s lines before the records'."""
        mh, mt = self._mh, self._mt
        get = self._at(records)
        offset = mh.insertArguments(self._add, 0, self._objects([self._jpype.JLong(first)]))
        offset = offset.asType(mt.methodType(self._long, self._int))
        parts = [offset, mh.filterReturnValue(get, self._text_of["key"]),
                 mh.filterReturnValue(get, self._text_of["value"])]  # fmt: skip
        recipe, header = self._line, b""
        if self.schemas:
            header = schema_header(self._register(records))
            parts += [mh.filterReturnValue(get, self._ref_of[p]) for p in ("key", "value")]
            recipe = self._schema_line
        line = mh.filterArguments(recipe, 0, self._handles(parts))
        line = mh.permuteArguments(
            line,
            mt.methodType(line.type().returnType(), self._int),
            self._jpype.JArray(self._jpype.JInt)([0] * len(parts)),
        )
        per_index = self._proxies.asInterfaceInstance(
            self._int_function, line.asType(mt.methodType(self._object, self._int))
        )
        text = self._range(0, int(records.size())).mapToObj(per_index).collect(self._file)
        return header + prelude + bytes(memoryview(text.getBytes(self._utf8)))

    def value_at(self, records: Any, index: int) -> str | None:
        value = records.get(index).value()
        return None if value is None else str(value)

    def without(self, records: Any, indexes: list[int]) -> Any:
        """A copy of ``records`` without those at ``indexes``."""
        rest = self._list(records)
        for i in sorted(indexes, reverse=True):
            del rest[i]  # by place (JPype's list.remove is Python's: by value)
        return rest

    def mark_processed(self, records: Any, committer: Any) -> None:
        """``committer.markProcessed`` for every record, in one call into the JVM."""
        args = self._list()
        args.add(committer)
        records.forEach(self._mark_site.getTarget().invokeWithArguments(args))
