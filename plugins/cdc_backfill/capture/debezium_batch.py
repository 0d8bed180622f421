"""An engine batch taken out of the JVM in a few calls, however many records it holds.

Asking each record for its destination, key and value, and marking each processed, cost several JPype
calls per record, and turning Java strings into Python ones cost more than Debezium's own work. Here the
JVM does the per-record work: :meth:`BatchReader.lines` builds a batch file's bytes there (each record's
line made by a method handle composed from the records' own methods and a ``StringConcatFactory``
concatenation, so no Java of ours needs compiling), and Python only writes them. Destinations come out
joined into one string (to find the notifications), and keys and values too when a batch needs looking
into (the records a crash may have landed already).
"""

from __future__ import annotations

from typing import Any

# Never inside JSON text: a NUL in a string is written \u0000, and none may stand outside one.
SEPARATOR = "\0"
_NULL = "null"  # how Java writes a null: for a key or a value it means what JSON's null means
# A batch file's line (debezium_landing.batch_lines), \1 where each argument goes: offset, key, value.
LINE_RECIPE = '{"partition":0,"offset":\1,"key":\1,"value":\1}'


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
    once the JVM runs."""

    def __init__(self) -> None:
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
        void = jclass("java.lang.Void").TYPE
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

    def _parts(self, records: Any, name: str) -> list[str | None]:
        """Every record's ``name()`` (destination, key, value), joined in the JVM and split here."""
        count = int(records.size())
        joined = "" if count == 0 else str(records.stream().map(self._getters[name]).collect(self._joining))
        return split_joined(joined, count, f"{name}s")

    def destinations(self, records: Any) -> list[str]:
        return [d or "" for d in self._parts(records, "destination")]

    def read(self, records: Any) -> list[tuple[str | None, str | None]]:
        """The records' (key, value) JSON, in delivery order (None: absent)."""
        return list(zip(self._parts(records, "key"), self._parts(records, "value"), strict=True))

    def lines(self, records: Any, first: int) -> bytes:
        """The batch file of ``records`` from delivery offset ``first`` (``batch_lines``'s lines, each
        ending in a newline), built in the JVM and handed over as UTF-8 bytes."""
        mh, mt = self._mh, self._mt
        # i -> records.get(i) as a ChangeEvent; i -> first + i
        get = mh.insertArguments(self._get, 0, self._objects([records])).asType(
            mt.methodType(self._event, self._int)
        )
        offset = mh.insertArguments(self._add, 0, self._objects([self._jpype.JLong(first)]))
        offset = offset.asType(mt.methodType(self._long, self._int))
        line = mh.filterArguments(
            self._line, 0,
            self._handles([offset, mh.filterReturnValue(get, self._text_of["key"]),
                           mh.filterReturnValue(get, self._text_of["value"])]),
        )  # fmt: skip
        line = mh.permuteArguments(
            line,
            mt.methodType(line.type().returnType(), self._int),
            self._jpype.JArray(self._jpype.JInt)([0, 0, 0]),
        )
        per_index = self._proxies.asInterfaceInstance(
            self._int_function, line.asType(mt.methodType(self._object, self._int))
        )
        text = self._range(0, int(records.size())).mapToObj(per_index).collect(self._file)
        return bytes(memoryview(text.getBytes(self._utf8)))

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
