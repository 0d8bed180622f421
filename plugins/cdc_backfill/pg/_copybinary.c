/*
 * COPY ... TO STDOUT (FORMAT binary) to Arrow column buffers, in one pass over a chunk's bytes: the
 * snapshot engine's READ rows without the server formatting each value as text (about 40% of its CPU
 * for a COPY) and without parsing that text back. Optional: cdc_backfill.pg.copybinary reads a table
 * as CSV when this module is not built, and the tests check that both give the same Arrow table.
 *
 * columns(data, kinds, scales) -> (rows, [(validity, values, offsets or None), ...])
 *   kinds: bytes, one code per column (K_* below); scales: bytes, a numeric column's scale
 *   validity: an Arrow validity bitmap; values: fixed-width values, or a variable-width column's bytes;
 *   offsets: int32 offsets (rows + 1) of a variable-width column
 * last_row(data) -> the last row's fields (bytes, None for NULL), or None when the data holds no row
 *
 * A value the lake type cannot hold (an infinite date or timestamp, a numeric NaN or infinity, or one
 * beyond 38 digits) is a ValueError naming the column's index: the CSV path refuses the same values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    K_INT2 = 0, K_INT4 = 1, K_INT8 = 2, K_OID = 3, K_FLOAT4 = 4, K_FLOAT8 = 5, K_BOOL = 6, K_DATE = 7,
    K_TIMESTAMP = 8, K_NUMERIC = 9, K_BYTES = 10, K_JSONB = 11, K_UUID = 12, K_COUNT = 13
};

static const unsigned char SIGNATURE[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0377, '\r', '\n', 0};
#define DAYS_1970_TO_2000 10957
#define USECS_1970_TO_2000 INT64_C(946684800000000)

/* The decoding runs without the GIL (the snapshot's reader thread reads the next chunk meanwhile), so
   an error is written here and raised once the GIL is held again. */
typedef struct {
    char message[160];
} Error;

#define FAIL(...) (snprintf(err->message, sizeof err->message, __VA_ARGS__), -1)

typedef struct {
    unsigned char *data;
    Py_ssize_t len;  /* written so far */
} Buf;

static uint16_t be16(const unsigned char *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static uint64_t be64(const unsigned char *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

static int fixed_width(int kind) {
    switch (kind) {
        case K_INT2: return 2;
        case K_INT4: case K_FLOAT4: case K_DATE: return 4;
        case K_INT8: case K_OID: case K_FLOAT8: case K_TIMESTAMP: return 8;
        case K_NUMERIC: return 16;
        default: return 0;  /* bool: a bitmap; the others: variable width */
    }
}

/* The header's end, or -1 with an error set. */
static Py_ssize_t skip_header(const unsigned char *d, Py_ssize_t n, Error *err) {
    if (n < 19 || memcmp(d, SIGNATURE, 11) != 0) return FAIL("not COPY's binary format (no PGCOPY signature)");
    uint32_t ext = be32(d + 15);
    if ((Py_ssize_t)ext > n - 19) return FAIL("COPY binary data truncated in its header");
    return 19 + (Py_ssize_t)ext;
}

static int variable_width(int kind) { return kind == K_BYTES || kind == K_JSONB || kind == K_UUID; }

/* The end of the row at ``p`` and its field count (``fields``), or -1 at the trailer or on an error
   (``err`` written). With ``sizes``, the row must have ``ncols`` fields of kinds ``k``, and each
   variable-width column's bytes once decoded are added to its size. */
static Py_ssize_t skip_row(const unsigned char *d, Py_ssize_t n, Py_ssize_t p, int *fields,
                           const unsigned char *k, Py_ssize_t ncols, Py_ssize_t *sizes, Error *err) {
    if (p + 2 > n) return FAIL("COPY binary data truncated");
    *fields = (int16_t)be16(d + p);
    p += 2;
    if (*fields == -1) return -1;
    if (sizes && *fields != ncols)
        return FAIL("a COPY row of %d fields where %d were expected", *fields, (int)ncols);
    for (int f = 0; f < *fields; f++) {
        if (p + 4 > n) return FAIL("COPY binary data truncated");
        int32_t len = (int32_t)be32(d + p);
        p += 4;
        if (len > 0) {
            if (len > n - p) return FAIL("COPY binary data truncated");
            p += len;
        }
        if (sizes && len >= 0 && variable_width(k[f]))
            sizes[f] += k[f] == K_UUID ? 36 : k[f] == K_JSONB ? (len > 0 ? len - 1 : 0) : len;
    }
    return p;
}

static __int128 POW10[39];

/* A numeric's value scaled by 10^scale as a 128-bit integer; 0 on success, -1 with an error set. */
static int numeric_value(const unsigned char *v, int32_t len, int scale, int col, __int128 *out, Error *err) {
    if (len < 8) goto bad;
    int ndigits = (int16_t)be16(v), weight = (int16_t)be16(v + 2);
    uint16_t sign = be16(v + 4);
    if (ndigits < 0 || len != 8 + 2 * ndigits) goto bad;
    if (sign != 0x0000 && sign != 0x4000)
        return FAIL("column %d: numeric NaN or infinity cannot be stored as a decimal", col);
    unsigned __int128 acc = 0;  /* below 10^38 after each group; two such sums fit 128 unsigned bits */
    for (int i = 0; i < ndigits; i++) {
        int digit = be16(v + 8 + 2 * i);
        if (digit > 9999) goto bad;
        if (!digit) continue;
        int exp = 4 * (weight - i) + scale;  /* this group's power of ten once scaled */
        if (exp >= 0) {
            if (exp > 38 || (__int128)digit >= POW10[38 - exp]) goto wide;
            acc += (unsigned __int128)(digit * POW10[exp]);
        } else if (exp > -4) {
            int drop = (int)POW10[-exp];
            if (digit % drop) goto wide;  /* more decimals than the column's scale */
            acc += (unsigned __int128)(digit / drop);
        } else {
            goto wide;
        }
        if (acc >= (unsigned __int128)POW10[38]) goto wide;
    }
    *out = sign == 0x4000 ? -(__int128)acc : (__int128)acc;
    return 0;
wide:
    return FAIL("column %d: numeric value does not fit a 38-digit decimal of scale %d", col, scale);
bad:
    return FAIL("column %d: malformed binary numeric", col);
}

static const char HEX[] = "0123456789abcdef";

/* One non-NULL value of column ``col`` appended to its buffers; 0, or -1 with an error set. */
static int put_value(int kind, int scale, int col, const unsigned char *v, int32_t len, Buf *values,
                     Py_ssize_t row, Error *err) {
    int width = fixed_width(kind);
    if (kind == K_BOOL) {
        if (len != 1) goto size;
        if (v[0]) values->data[row >> 3] |= (unsigned char)(1 << (row & 7));
        return 0;
    }
    if (width) {
        unsigned char *o = values->data + row * width;
        switch (kind) {
            case K_INT2: { if (len != 2) goto size; int16_t x = (int16_t)be16(v); memcpy(o, &x, 2); return 0; }
            case K_INT4: case K_FLOAT4: { if (len != 4) goto size; uint32_t x = be32(v); memcpy(o, &x, 4); return 0; }
            case K_INT8: case K_FLOAT8: { if (len != 8) goto size; uint64_t x = be64(v); memcpy(o, &x, 8); return 0; }
            case K_OID: { if (len != 4) goto size; int64_t x = (int64_t)be32(v); memcpy(o, &x, 8); return 0; }
            case K_DATE: {
                if (len != 4) goto size;
                int32_t x = (int32_t)be32(v);
                if (x == INT32_MAX || x == INT32_MIN)
                    return FAIL("column %d: an infinite date cannot be stored as a date", col);
                x += DAYS_1970_TO_2000;
                memcpy(o, &x, 4);
                return 0;
            }
            case K_TIMESTAMP: {
                if (len != 8) goto size;
                int64_t x = (int64_t)be64(v);
                if (x == INT64_MAX || x == INT64_MIN)
                    return FAIL("column %d: an infinite timestamp cannot be stored as a timestamp", col);
                x += USECS_1970_TO_2000;
                memcpy(o, &x, 8);
                return 0;
            }
            case K_NUMERIC: {
                __int128 x;
                if (numeric_value(v, len, scale, col, &x, err) < 0) return -1;
                memcpy(o, &x, 16);  /* Arrow's decimal128: little-endian two's complement, as x86 and arm */
                return 0;
            }
        }
    }
    if (kind == K_JSONB) {
        if (len < 1 || v[0] != 1) return FAIL("column %d: unknown jsonb binary version", col);
        v++;
        len--;
    }
    if (kind == K_UUID) {
        if (len != 16) goto size;
        unsigned char *o = values->data + values->len;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
            *o++ = HEX[v[i] >> 4];
            *o++ = HEX[v[i] & 15];
        }
        values->len += 36;
        return 0;
    }
    memcpy(values->data + values->len, v, len);
    values->len += len;
    return 0;
size:
    return FAIL("column %d: a binary value of %d bytes where its type has another size", col, (int)len);
}

/* Pass 1: the rows of ``d`` (after its header at ``pos``) and each variable-width column's bytes once
   decoded (``sizes``), so that pass 2 writes into buffers allocated once at their size. */
static int measure(const unsigned char *d, Py_ssize_t n, Py_ssize_t pos, const unsigned char *k, Py_ssize_t ncols,
                   Py_ssize_t *nrows, Py_ssize_t *sizes, Error *err) {
    Py_ssize_t rows = 0;
    int fields;
    for (Py_ssize_t p = pos; (p = skip_row(d, n, p, &fields, k, ncols, sizes, err)) >= 0;) rows++;
    if (err->message[0]) return -1;
    for (Py_ssize_t c = 0; c < ncols; c++)
        if (sizes[c] > INT32_MAX) return FAIL("a chunk's column %d holds more than 2 GiB", (int)c);
    *nrows = rows;
    return 0;
}

/* Pass 2: every row into the columns' buffers (validity bitmaps zeroed); 0, or -1 with ``err`` written. */
static int fill(const unsigned char *d, Py_ssize_t pos, Py_ssize_t rows, const unsigned char *k,
                const unsigned char *sc, Py_ssize_t ncols, Buf *values, Buf *valid, Buf *offsets, Error *err) {
    Py_ssize_t p = pos;
    for (Py_ssize_t r = 0; r < rows; r++) {
        p += 2;
        for (Py_ssize_t c = 0; c < ncols; c++) {
            int32_t len = (int32_t)be32(d + p);
            p += 4;
            if (len >= 0) {
                valid[c].data[r >> 3] |= (unsigned char)(1 << (r & 7));
                if (put_value(k[c], sc[c], (int)c, d + p, len, &values[c], r, err) < 0) return -1;
                p += len;
            }
            if (offsets[c].data) {
                int32_t end = (int32_t)values[c].len;
                memcpy(offsets[c].data + 4 * (r + 1), &end, 4);
            }
        }
    }
    return 0;
}

/* A bytes object of ``size`` bytes, zeroed when ``zero``, its buffer in ``buf`` (written from 0). */
static PyObject *new_buffer(Py_ssize_t size, int zero, Buf *buf) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (!b) return NULL;
    buf->data = (unsigned char *)PyBytes_AS_STRING(b);
    buf->len = 0;
    if (zero) memset(buf->data, 0, size);
    return b;
}

static PyObject *columns(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, kinds, scales;
    if (!PyArg_ParseTuple(args, "y*y*y*", &data, &kinds, &scales)) return NULL;
    PyObject *result = NULL, *cols = NULL;
    const unsigned char *d = data.buf, *k = kinds.buf;
    Py_ssize_t ncols = kinds.len, rows = 0, pos = 0;
    Buf *values = NULL, *valid = NULL, *offsets = NULL;
    Py_ssize_t *sizes = NULL;
    Error err = {{0}};
    int rc;
    if (scales.len != ncols || ncols == 0 || ncols > 1600) {
        PyErr_SetString(PyExc_ValueError, "one kind and one scale a column");
        goto done;
    }
    for (Py_ssize_t c = 0; c < ncols; c++)
        if (k[c] >= K_COUNT) { PyErr_SetString(PyExc_ValueError, "unknown column kind"); goto done; }
    values = calloc(ncols, sizeof(Buf));
    valid = calloc(ncols, sizeof(Buf));
    offsets = calloc(ncols, sizeof(Buf));
    sizes = calloc(ncols, sizeof(Py_ssize_t));
    if (!values || !valid || !offsets || !sizes) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    pos = skip_header(d, data.len, &err);
    rc = pos < 0 ? -1 : measure(d, data.len, pos, k, ncols, &rows, sizes, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) goto failed;
    cols = PyList_New(ncols);
    if (!cols) goto done;
    Py_ssize_t bitmap = (rows + 7) / 8;
    for (Py_ssize_t c = 0; c < ncols; c++) {
        int width = fixed_width(k[c]), varlen = variable_width(k[c]);
        Py_ssize_t size = k[c] == K_BOOL ? bitmap : varlen ? sizes[c] : rows * width;
        PyObject *vb = new_buffer(bitmap, 1, &valid[c]);
        PyObject *xb = new_buffer(size, !varlen, &values[c]);  /* NULLs leave zeros, not garbage */
        PyObject *ob = varlen ? new_buffer(4 * (rows + 1), 0, &offsets[c]) : Py_NewRef(Py_None);
        PyObject *item = vb && xb && ob ? PyTuple_Pack(3, vb, xb, ob) : NULL;
        Py_XDECREF(vb);
        Py_XDECREF(xb);
        Py_XDECREF(ob);
        if (!item) goto done;
        PyList_SET_ITEM(cols, c, item);
        if (varlen) memset(offsets[c].data, 0, 4);
    }
    Py_BEGIN_ALLOW_THREADS
    rc = fill(d, pos, rows, k, scales.buf, ncols, values, valid, offsets, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) goto failed;
    result = Py_BuildValue("(nO)", rows, cols);
    goto done;
failed:
    PyErr_SetString(PyExc_ValueError, err.message);
done:
    Py_XDECREF(cols);
    free(values);
    free(valid);
    free(offsets);
    free(sizes);
    PyBuffer_Release(&data);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&scales);
    return result;
}

static PyObject *last_row(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *d = data.buf;
    Py_ssize_t n = data.len, last = -1;
    PyObject *result = NULL;
    Error err = {{0}};
    int fields = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = skip_header(d, n, &err);
    while (p >= 0) {  /* the last row's start: each row's fields are skipped by their lengths */
        Py_ssize_t next = skip_row(d, n, p, &fields, NULL, 0, NULL, &err);
        if (next < 0) break;
        last = p;
        p = next;
    }
    Py_END_ALLOW_THREADS
    if (err.message[0]) {
        PyErr_SetString(PyExc_ValueError, err.message);
        goto done;
    }
    if (last < 0) { result = Py_NewRef(Py_None); goto done; }
    fields = (int16_t)be16(d + last);
    result = PyList_New(fields);
    if (!result) goto done;
    Py_ssize_t q = last + 2;
    for (int f = 0; f < fields; f++) {
        int32_t len = (int32_t)be32(d + q);
        q += 4;
        PyObject *v = len < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)d + q, len);
        if (!v) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, f, v);
        if (len > 0) q += len;
    }
done:
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS, "COPY binary rows to Arrow buffers: (rows, [(validity, values, offsets)])"},
    {"last_row", last_row, METH_O, "the last COPY binary row's fields (bytes, None for NULL), or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_copybinary", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__copybinary(void) {
    POW10[0] = 1;
    for (int i = 1; i < 39; i++) POW10[i] = POW10[i - 1] * 10;
    return PyModule_Create(&module);
}
