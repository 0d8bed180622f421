/* A COPY ... TO STDOUT received whole into one buffer without the GIL (cdc_backfill.pg.copyout).

psycopg2's copy_expert hands every row of a COPY to a Python write() call, with the GIL held: for a
snapshot chunk of 65,536 rows that was a third of the reader's own CPU, taken from the thread landing
the chunk before. Here libpq's calls run on psycopg2's own connection (its PGconn pointer) and libpq:
the functions are looked up by Python in the library psycopg2 was linked with and handed over once,
so nothing here links libpq or needs its headers. The statement runs outside psycopg2, as a
transaction of its own (the caller, copyout.py, sends it here only when psycopg2 has none open).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

/* libpq's ExecStatusType values used here (libpq-fe.h, stable since PostgreSQL 7.4) */
#define PGRES_COMMAND_OK 1
#define PGRES_COPY_OUT 3

static PGresult *(*pq_exec)(PGconn *, const char *);
static int (*pq_result_status)(const PGresult *);
static char *(*pq_error_message)(const PGconn *);
static void (*pq_clear)(PGresult *);
static int (*pq_get_copy_data)(PGconn *, char **, int);
static void (*pq_freemem)(void *);
static PGresult *(*pq_get_result)(PGconn *);
static char *(*pq_cmd_tuples)(PGresult *);
static char *(*pq_result_error_field)(const PGresult *, int);
#define PG_DIAG_SQLSTATE 'C'

/* the SQLSTATE of a failed result, where it has one */
static void sqlstate_of(const PGresult *r, char *state) {
    const char *c = r ? pq_result_error_field(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(state, 6, "%s", c ? c : "");
}

/* bind(addresses): libpq's functions, in the order of cdc_backfill.pg.copyout.LIBPQ_FUNCTIONS */
static PyObject *bind(PyObject *self, PyObject *args) {
    unsigned long long a[9];
    if (!PyArg_ParseTuple(args, "(KKKKKKKKK)", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8]))
        return NULL;
    for (int i = 0; i < 9; i++)
        if (!a[i]) { PyErr_SetString(PyExc_ValueError, "a libpq function was not found"); return NULL; }
    pq_exec = (PGresult * (*)(PGconn *, const char *))(uintptr_t)a[0];
    pq_result_status = (int (*)(const PGresult *))(uintptr_t)a[1];
    pq_error_message = (char *(*)(const PGconn *))(uintptr_t)a[2];
    pq_clear = (void (*)(PGresult *))(uintptr_t)a[3];
    pq_get_copy_data = (int (*)(PGconn *, char **, int))(uintptr_t)a[4];
    pq_freemem = (void (*)(void *))(uintptr_t)a[5];
    pq_get_result = (PGresult * (*)(PGconn *))(uintptr_t)a[6];
    pq_cmd_tuples = (char *(*)(PGresult *))(uintptr_t)a[7];
    pq_result_error_field = (char *(*)(const PGresult *, int))(uintptr_t)a[8];
    Py_RETURN_NONE;
}

/* copy_out(pgconn_ptr, statement) -> (bytes, rows, "") or (None, error message, SQLSTATE) */
static PyObject *copy_out(PyObject *self, PyObject *args) {
    unsigned long long ptr;
    const char *sql;
    if (!PyArg_ParseTuple(args, "Ky", &ptr, &sql)) return NULL;
    if (!pq_exec) { PyErr_SetString(PyExc_RuntimeError, "copy_out before bind"); return NULL; }
    PGconn *conn = (PGconn *)(uintptr_t)ptr;
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    if (!out) return PyErr_NoMemory();
    long long rows = -1;
    char err[1024] = {0}, state[6] = {0};
    int ok = 1, nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    PGresult *r = pq_exec(conn, sql);
    if (pq_result_status(r) != PGRES_COPY_OUT) {
        snprintf(err, sizeof err, "%s", pq_error_message(conn));
        sqlstate_of(r, state);
        ok = 0;
    }
    pq_clear(r);
    while (ok) {
        char *buf = NULL;
        int n = pq_get_copy_data(conn, &buf, 0);
        if (n > 0) {
            /* out of memory: the rest is read and dropped, for a COPY left unread never ends */
            if (!nomem && len + (size_t)n > cap) {
                while (len + (size_t)n > cap) cap *= 2;
                char *grown = realloc(out, cap);
                if (grown) out = grown; else nomem = 1;
            }
            if (!nomem) {
                memcpy(out + len, buf, (size_t)n);
                len += (size_t)n;
            }
            pq_freemem(buf);
        } else if (n == -1) {
            break; /* the COPY is done: its result follows */
        } else {
            snprintf(err, sizeof err, "%s", pq_error_message(conn));
            ok = 0;
        }
    }
    /* read every result to the end, so the connection is ready for the next statement */
    while ((r = pq_get_result(conn)) != NULL) {
        if (ok && pq_result_status(r) != PGRES_COMMAND_OK) {
            snprintf(err, sizeof err, "%s", pq_error_message(conn));
            sqlstate_of(r, state);
            ok = 0;
        } else if (ok) {
            rows = atoll(pq_cmd_tuples(r));
        }
        pq_clear(r);
    }
    Py_END_ALLOW_THREADS
    if (nomem) { free(out); return PyErr_NoMemory(); }
    if (!ok) {
        free(out);
        size_t e = strlen(err);
        while (e && (err[e - 1] == '\n' || err[e - 1] == ' ')) err[--e] = '\0';
        return Py_BuildValue("(Oss)", Py_None, err, state);
    }
    PyObject *b = PyBytes_FromStringAndSize(out, (Py_ssize_t)len);
    free(out);
    if (!b) return NULL;
    return Py_BuildValue("(NLs)", b, rows, "");
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "libpq's functions by address, once"},
    {"copy_out", copy_out, METH_VARARGS, "a COPY TO STDOUT received whole: (bytes, rows, '') or (None, error, SQLSTATE)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_copyout", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__copyout(void) { return PyModule_Create(&module); }
