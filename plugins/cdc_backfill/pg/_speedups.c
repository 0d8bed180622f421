/*
 * The capture's hot path in C: one pgoutput TupleData (text format) to a CSV line of its text values
 * (tuple_csv), and the position keys of a roll's events (position_keys). pg.tuplecsv and
 * eventlog.buffers hold the Python reference each is tested against.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    char *p = PyMem_Realloc(b->data, cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/*
 * tuple_csv(buf, pos, key_idx=()) -> (csv_line, unchanged, key_fields, new_pos)
 *   one TupleData to a CSV line of its text values (pg.tuplecsv is the Python reference): a text
 *   value quoted (quotes doubled), NULL and an unchanged TOAST value an empty field; unchanged: the
 *   indexes of the latter; key_fields: the fields at key_idx as the line has them.
 */
static PyObject *tuple_csv(PyObject *self, PyObject *args) {
    const unsigned char *buf;
    Py_ssize_t buflen, pos;
    PyObject *key_idx = NULL;
    if (!PyArg_ParseTuple(args, "y#n|O!", &buf, &buflen, &pos, &PyTuple_Type, &key_idx)) return NULL;
    if (pos < 0 || pos + 2 > buflen) goto truncated;
    int ncols = (int16_t)((buf[pos] << 8) | buf[pos + 1]);
    pos += 2;
    if (ncols < 0) goto truncated;
    Buf line = {NULL, 0, 0};
    Py_ssize_t *start = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (ncols ? ncols : 1));
    PyObject *unchanged = PyList_New(0);
    if (!start || !unchanged) { PyErr_NoMemory(); goto fail; }
    for (int i = 0; i < ncols; i++) {
        if (i && buf_put(&line, ",", 1) < 0) goto fail;
        if (pos >= buflen) goto truncated_fail;
        unsigned char kind = buf[pos];
        start[2 * i] = line.len;
        if (kind == 't') {
            if (pos + 5 > buflen) goto truncated_fail;
            int32_t n = be32(buf + pos + 1);
            if (n < 0 || pos + 5 + n > buflen) goto truncated_fail;
            const unsigned char *v = buf + pos + 5;
            if (buf_reserve(&line, 2 * (Py_ssize_t)n + 2) < 0) goto fail;
            char *o = line.data + line.len;
            *o++ = '"';
            for (int32_t j = 0; j < n; j++) {
                if (v[j] == '"') *o++ = '"';
                *o++ = (char)v[j];
            }
            *o++ = '"';
            line.len = o - line.data;
            pos += 5 + n;
        } else if (kind == 'n') {
            pos += 1;
        } else if (kind == 'u') {
            PyObject *idx = PyLong_FromLong(i);
            if (!idx || PyList_Append(unchanged, idx) < 0) { Py_XDECREF(idx); goto fail; }
            Py_DECREF(idx);
            pos += 1;
        } else {
            PyErr_Format(PyExc_ValueError, "unexpected tuple data kind %d", (int)kind);
            goto fail;
        }
        start[2 * i + 1] = line.len;
    }
    if (buf_put(&line, "\n", 1) < 0) goto fail;
    Py_ssize_t nkey = key_idx ? PyTuple_GET_SIZE(key_idx) : 0;
    PyObject *key = PyTuple_New(nkey);
    if (!key) goto fail;
    for (Py_ssize_t k = 0; k < nkey; k++) {
        long i = PyLong_AsLong(PyTuple_GET_ITEM(key_idx, k));
        if (i < 0 || i >= ncols) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "key index out of the tuple");
            Py_DECREF(key);
            goto fail;
        }
        PyObject *f = PyBytes_FromStringAndSize(line.data + start[2 * i], start[2 * i + 1] - start[2 * i]);
        if (!f) { Py_DECREF(key); goto fail; }
        PyTuple_SET_ITEM(key, k, f);
    }
    PyObject *out = Py_BuildValue("(y#NNn)", line.data, line.len, unchanged, key, pos);
    PyMem_Free(start);
    PyMem_Free(line.data);
    return out;
truncated_fail:
    PyErr_SetString(PyExc_ValueError, "truncated tuple data");
fail:
    PyMem_Free(start);
    PyMem_Free(line.data);
    Py_XDECREF(unchanged);
    return NULL;
truncated:
    PyErr_SetString(PyExc_ValueError, "truncated tuple data");
    return NULL;
}

/*
 * position_keys(positions) -> (data, offsets) or None
 *   events.positions.position_key of each tuple of non-negative ints, concatenated, and the int32
 *   offsets of the keys (n + 1 of them): the buffers of an Arrow binary array. None when an element
 *   does not fit in 64 bits (the Python path then builds them); a negative element is a ValueError.
 */
static PyObject *position_keys(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg)) { PyErr_SetString(PyExc_TypeError, "positions must be a list"); return NULL; }
    Py_ssize_t n = PyList_GET_SIZE(arg);
    Buf data = {NULL, 0, 0};
    Buf offsets = {NULL, 0, 0};
    int32_t zero = 0;
    if (buf_put(&offsets, (const char *)&zero, 4) < 0) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pos = PyList_GET_ITEM(arg, i);
        if (!PyTuple_Check(pos)) { PyErr_SetString(PyExc_TypeError, "a position must be a tuple"); goto fail; }
        Py_ssize_t m = PyTuple_GET_SIZE(pos);
        if (buf_reserve(&data, 9 * m) < 0) goto fail;
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *v = PyTuple_GET_ITEM(pos, j);
            if (!PyLong_Check(v)) { PyErr_SetString(PyExc_TypeError, "a position element must be an int"); goto fail; }
            int overflow = 0;
            long long sv = PyLong_AsLongLongAndOverflow(v, &overflow);
            unsigned long long u;
            if (overflow < 0 || (!overflow && sv < 0)) {
                PyErr_SetString(PyExc_ValueError, "a position element is negative");
                goto fail;
            } else if (overflow > 0) {
                u = PyLong_AsUnsignedLongLong(v);
                if (u == (unsigned long long)-1 && PyErr_Occurred()) {  /* beyond 64 bits */
                    PyErr_Clear();
                    PyMem_Free(data.data);
                    PyMem_Free(offsets.data);
                    Py_RETURN_NONE;
                }
            } else {
                if (sv == -1 && PyErr_Occurred()) goto fail;
                u = (unsigned long long)sv;
            }
            int size = 0;
            for (unsigned long long t = u; t; t >>= 8) size++;
            char *o = data.data + data.len;
            *o++ = (char)size;
            for (int k = size - 1; k >= 0; k--) *o++ = (char)((u >> (8 * k)) & 0xff);
            data.len = o - data.data;
        }
        if (data.len > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "position keys beyond 2 GiB"); goto fail; }
        int32_t end = (int32_t)data.len;
        if (buf_put(&offsets, (const char *)&end, 4) < 0) goto fail;
    }
    PyObject *out = Py_BuildValue("(y#y#)", data.data ? data.data : "", data.len, offsets.data, offsets.len);
    PyMem_Free(data.data);
    PyMem_Free(offsets.data);
    return out;
fail:
    PyMem_Free(data.data);
    PyMem_Free(offsets.data);
    return NULL;
}

static PyMethodDef methods[] = {
    {"tuple_csv", tuple_csv, METH_VARARGS, "pgoutput TupleData to (CSV line, unchanged, key fields, new position)"},
    {"position_keys", position_keys, METH_O, "position_key of each position: (data, int32 offsets) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
