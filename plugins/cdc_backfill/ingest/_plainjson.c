/*
 * A landing file of the common PostgreSQL record (events.debezium.plain_postgres) to Arrow buffers, in
 * one pass over its bytes: what ingest's Python workers spent about 10 us an event on (orjson's parse,
 * the event's objects, three JSON texts written again). Optional: without it, or for any file holding a
 * line it does not take, ingest parses the file in Python, which stays the reference; the tests check
 * that both give the same rows.
 *
 * parse(data) -> None, or (events, lines, ops, collection, key, before, after, position, ts, snapshot,
 *                          unchanged, shapes)
 *   None: a line is not that record, or not one this scanner is sure of (invalid JSON, a schema line,
 *   an escape where a name is read...): the caller parses the whole file in Python,
 *   because the stream's state (a key change's pairing) runs through the file.
 *   lines, ts: int64 values; ops: one byte an event; collection, key, position: (data, offsets);
 *   before, after, snapshot: (validity, data, offsets); unchanged: (list offsets, (data, offsets)), the
 *   columns whose value is Debezium's unavailable-value placeholder, taken out of after as the Python
 *   parser takes them; shapes: [(event, collection, key names, row names)] where the event's shape
 *   differs from the event before it.
 *
 * key, before and after are the line's own JSON texts, not written again: the same values (a string's
 * escapes as written, a number's digits as written) for the typed reader that reads them next.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BAIL 1
#define EVENT 2
#define MAX_DEPTH 64
#define MAX_NAMES 4096

typedef struct {
    const char *p;
    Py_ssize_t n;
} Span;

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int put(Buf *b, const void *src, Py_ssize_t n) {
    if (b->len + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *d = PyMem_Realloc(b->data, cap);
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* A variable-width Arrow column: its bytes, int32 offsets and (when it can be null) validity bits. */
typedef struct {
    Buf data, offsets, validity;
    Py_ssize_t count;
    int nullable;
} Col;

static int col_start(Col *c) {
    int32_t zero = 0;
    return put(&c->offsets, &zero, 4);
}

static int col_add(Col *c, const char *p, Py_ssize_t n, int valid) {
    if (c->nullable && (c->count & 7) == 0) {
        char z = 0;
        if (put(&c->validity, &z, 1)) return -1;
    }
    if (valid) {
        if (put(&c->data, p, n)) return -1;
        if (c->nullable) c->validity.data[c->count >> 3] |= (char)(1 << (c->count & 7));
    }
    if (c->data.len > INT32_MAX) return -1;
    int32_t end = (int32_t)c->data.len;
    c->count++;
    return put(&c->offsets, &end, 4);
}

static void col_free(Col *c) {
    PyMem_Free(c->data.data);
    PyMem_Free(c->offsets.data);
    PyMem_Free(c->validity.data);
}

/* ---- JSON, as orjson accepts it (anything else: BAIL, and Python decides) ---- */

static void ws(const char **pp, const char *e) {
    const char *p = *pp;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    *pp = p;
}

static int hex4(const char *p, const char *e, unsigned *out) {
    if (e - p < 4) return BAIL;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return BAIL;
    }
    *out = v;
    return 0;
}

/* A string at *pp ('"'): its raw content (between the quotes) and whether it holds an escape. Valid
   UTF-8 only, no control character, no lone surrogate: what orjson refuses is left to Python. */
static int string(const char **pp, const char *e, Span *raw, int *escaped) {
    const unsigned char *p = (const unsigned char *)*pp + 1, *end = (const unsigned char *)e;
    *escaped = 0;
    raw->p = (const char *)p;
    while (p < end) {
        unsigned char ch = *p;
        if (ch == '"') {
            raw->n = (const char *)p - raw->p;
            *pp = (const char *)p + 1;
            return 0;
        }
        if (ch < 0x20) return BAIL;
        if (ch == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return BAIL;
            unsigned char x = p[1];
            if (x == 'u') {
                unsigned cp;
                if (hex4((const char *)p + 2, e, &cp)) return BAIL;
                p += 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return BAIL;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4((const char *)p + 2, e, &lo))
                        return BAIL;
                    if (lo < 0xDC00 || lo > 0xDFFF) return BAIL;
                    p += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", x) || x == 0) return BAIL;
            p += 2;
            continue;
        }
        if (ch < 0x80) { p++; continue; }
        /* UTF-8: no overlong form, no surrogate, nothing beyond U+10FFFF */
        int len;
        unsigned lo = 0x80, hi = 0xBF;
        if (ch >= 0xC2 && ch <= 0xDF) len = 2;
        else if (ch >= 0xE0 && ch <= 0xEF) {
            len = 3;
            if (ch == 0xE0) lo = 0xA0;
            if (ch == 0xED) hi = 0x9F;
        } else if (ch >= 0xF0 && ch <= 0xF4) {
            len = 4;
            if (ch == 0xF0) lo = 0x90;
            if (ch == 0xF4) hi = 0x8F;
        } else return BAIL;
        if (end - p < len || p[1] < lo || p[1] > hi) return BAIL;
        for (int i = 2; i < len; i++)
            if (p[i] < 0x80 || p[i] > 0xBF) return BAIL;
        p += len;
    }
    return BAIL;
}

/* A number at *pp. *integer: no fraction or exponent, then *value holds it when it is not negative and
   fits 63 bits (*exact). A float whose exponent or digits could overflow a double is left to Python
   (orjson refuses it, Python's json reads it as infinity). */
static int number(const char **pp, const char *e, int *integer, int *exact, uint64_t *value) {
    const char *p = *pp;
    int negative = 0, digits = 0;
    uint64_t v = 0;
    *integer = 1;
    *exact = 1;
    if (p < e && *p == '-') { negative = 1; p++; }
    if (p >= e || *p < '0' || *p > '9') return BAIL;
    if (*p == '0') { p++; digits = 1; }
    else
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 18) v = v * 10 + (uint64_t)(*p - '0');
            digits++;
            p++;
        }
    if (p < e && *p == '.') {
        *integer = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9') return BAIL;
        while (p < e && *p >= '0' && *p <= '9') { p++; digits++; }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        int exp_digits = 0;
        while (p < e && *p >= '0' && *p <= '9') { p++; exp_digits++; }
        if (exp_digits == 0 || exp_digits > 2) return BAIL;
    }
    if (!*integer && digits > 300) return BAIL;
    if (*integer && digits > 18) *exact = 0;
    if (negative) *exact = 0;
    *value = v;
    *pp = p;
    return 0;
}

static int value_skip(const char **pp, const char *e, int depth);

static int literal(const char **pp, const char *e, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(e - *pp) < n || memcmp(*pp, word, n) != 0) return BAIL;
    *pp += n;
    return 0;
}

/* The members of an object at *pp ('{'): ``next`` gives each member's name and leaves the cursor at its
   value; 0 after the last (the '}' consumed). */
typedef struct {
    const char **pp;
    const char *e;
    int first;
} Members;

static int members_open(Members *m, const char **pp, const char *e) {
    if (*pp >= e || **pp != '{') return BAIL;
    (*pp)++;
    m->pp = pp;
    m->e = e;
    m->first = 1;
    return 0;
}

/* 1: a member (name in *name, cursor at its value); 0: the object's end; BAIL + 1 = 2: a bail. */
static int members_next(Members *m, Span *name, int *escaped) {
    const char *e = m->e;
    ws(m->pp, e);
    if (*m->pp >= e) return 2;
    if (**m->pp == '}') {
        (*m->pp)++;
        return 0;
    }
    if (!m->first) {
        if (**m->pp != ',') return 2;
        (*m->pp)++;
        ws(m->pp, e);
    }
    m->first = 0;
    if (*m->pp >= e || **m->pp != '"' || string(m->pp, e, name, escaped)) return 2;
    ws(m->pp, e);
    if (*m->pp >= e || **m->pp != ':') return 2;
    (*m->pp)++;
    ws(m->pp, e);
    return 1;
}

static int value_skip(const char **pp, const char *e, int depth) {
    if (*pp >= e || depth > MAX_DEPTH) return BAIL;
    char ch = **pp;
    if (ch == '"') {
        Span s;
        int esc;
        return string(pp, e, &s, &esc);
    }
    if (ch == '{') {
        Members m;
        Span name;
        int esc, r;
        members_open(&m, pp, e);
        while ((r = members_next(&m, &name, &esc)) == 1)
            if (value_skip(pp, e, depth + 1)) return BAIL;
        return r ? BAIL : 0;
    }
    if (ch == '[') {
        (*pp)++;
        ws(pp, e);
        if (*pp < e && **pp == ']') { (*pp)++; return 0; }
        for (;;) {
            ws(pp, e);
            if (value_skip(pp, e, depth + 1)) return BAIL;
            ws(pp, e);
            if (*pp >= e) return BAIL;
            if (**pp == ']') { (*pp)++; return 0; }
            if (**pp != ',') return BAIL;
            (*pp)++;
        }
    }
    if (ch == 't') return literal(pp, e, "true");
    if (ch == 'f') return literal(pp, e, "false");
    if (ch == 'n') return literal(pp, e, "null");
    int integer, exact;
    uint64_t v;
    return number(pp, e, &integer, &exact, &v);
}

static int is(Span s, int escaped, const char *word) {
    return !escaped && (size_t)s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

/* A string's value (its escapes read) equals an ASCII word. */
static int string_equals(Span raw, int escaped, const char *word) {
    if (!escaped) return is(raw, 0, word);
    const char *p = raw.p, *e = raw.p + raw.n;
    size_t i = 0, n = strlen(word);
    while (p < e) {
        unsigned ch = (unsigned char)*p;
        if (ch == '\\') {
            char x = p[1];
            if (x == 'u') {
                if (hex4(p + 2, e, &ch)) return 0;
                p += 6;
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                ch = (unsigned char)to[strchr(from, x) - from];
                p += 2;
            }
        } else p++;
        if (i >= n || ch != (unsigned char)word[i]) return 0;
        i++;
    }
    return i == n;
}

/* ---- one record ---- */

#define UNAVAILABLE "__debezium_unavailable_value"
#define UNAVAILABLE_B64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

typedef struct {
    Span names[MAX_NAMES];
    int count;
} Names;

/* An after row's members: each one's text (name and value) and whether its value is Debezium's
   unavailable-value placeholder (a TOASTed column the change left as it was). */
typedef struct {
    Span text[MAX_NAMES];
    unsigned char placeholder[MAX_NAMES];
    int placeholders;
} Members_of;

/* An object's raw text, and its member names when ``names`` is given; with ``members``, each member's
   text and whether its value is the placeholder in any of its forms (a text, its base64, a list of the
   text). Names with escapes are a bail: they are compared as bytes. */
static int row(const char **pp, const char *e, Span *raw, Names *names, Members_of *members) {
    Members m;
    Span name;
    int esc, r;
    raw->p = *pp;
    if (members_open(&m, pp, e)) return BAIL;
    if (names) names->count = 0;
    if (members) members->placeholders = 0;
    while ((r = members_next(&m, &name, &esc)) == 1) {
        int at = names ? names->count : 0, placeholder = 0;
        if (names) {
            if (esc || names->count >= MAX_NAMES) return BAIL;
            names->names[names->count++] = name;
        }
        if (members && **pp == '"') {
            Span s;
            int sesc;
            if (string(pp, e, &s, &sesc)) return BAIL;
            placeholder = string_equals(s, sesc, UNAVAILABLE) || string_equals(s, sesc, UNAVAILABLE_B64);
        } else {
            if (members && **pp == '[') {
                const char *q = *pp + 1;
                ws(&q, e);
                if (q < e && *q == '"') {
                    Span s;
                    int sesc;
                    if (string(&q, e, &s, &sesc)) return BAIL;
                    ws(&q, e);
                    placeholder = q < e && *q == ']' && string_equals(s, sesc, UNAVAILABLE);
                }
            }
            if (value_skip(pp, e, 1)) return BAIL;
        }
        if (members && names) {
            members->text[at].p = name.p - 1;  /* the name's opening quote: names here have no escape */
            members->text[at].n = *pp - (name.p - 1);
            members->placeholder[at] = (unsigned char)placeholder;
            members->placeholders += placeholder;
        }
    }
    if (r) return BAIL;
    raw->n = *pp - raw->p;
    return 0;
}

/* An optional non-negative integer field: 0 absent or null (*present = 0), 0 with *v, or a bail. */
static int uint_field(const char **pp, const char *e, int *present, uint64_t *v) {
    if (**pp == 'n') {
        *present = 0;
        return literal(pp, e, "null");
    }
    int integer, exact;
    if (number(pp, e, &integer, &exact, v) || !integer || !exact) return BAIL;
    *present = 1;
    return 0;
}

typedef struct {
    char op;
    Span key, before, after, schema, table, snapshot;
    int has_before, has_after, has_snapshot, has_lsn, has_tx;
    uint64_t position[2], lsn, tx, ts;
    Names key_names, before_names, after_names;
    Members_of after_members;
    Names kept;  /* the after row's names less its placeholders' */
} Event;

#define SEEN(bit) do { if (seen & (bit)) return BAIL; seen |= (bit); } while (0)

static int source(const char **pp, const char *e, Event *ev, int *has_commit, uint64_t *commit) {
    Members m;
    Span name;
    int esc, r, seen = 0, connector = 0, has_ts = 0;
    if (members_open(&m, pp, e)) return BAIL;
    *has_commit = 0;
    ev->has_lsn = ev->has_tx = ev->has_snapshot = 0;
    ev->schema.p = ev->table.p = NULL;
    while ((r = members_next(&m, &name, &esc)) == 1) {
        if (esc) {
            if (value_skip(pp, e, 1)) return BAIL;
            if (string_equals(name, esc, "connector") || string_equals(name, esc, "commit_lsn") ||
                string_equals(name, esc, "lsn") || string_equals(name, esc, "schema") ||
                string_equals(name, esc, "table") || string_equals(name, esc, "ts_ms") ||
                string_equals(name, esc, "txId") || string_equals(name, esc, "snapshot"))
                return BAIL;
            continue;
        }
        Span s;
        int sesc;
        if (is(name, 0, "connector")) {
            SEEN(1);
            if (**pp != '"' || string(pp, e, &s, &sesc) || !is(s, sesc, "postgresql")) return BAIL;
            connector = 1;
        } else if (is(name, 0, "commit_lsn")) {
            SEEN(2);
            if (uint_field(pp, e, has_commit, commit)) return BAIL;
        } else if (is(name, 0, "lsn")) {
            SEEN(4);
            if (uint_field(pp, e, &ev->has_lsn, &ev->lsn)) return BAIL;
        } else if (is(name, 0, "schema") || is(name, 0, "table")) {
            int table = name.n == 5;
            SEEN(table ? 8 : 16);
            if (**pp != '"' || string(pp, e, &s, &sesc) || sesc || s.n == 0) return BAIL;
            *(table ? &ev->table : &ev->schema) = s;
        } else if (is(name, 0, "ts_ms")) {
            SEEN(32);
            if (uint_field(pp, e, &has_ts, &ev->ts) || !has_ts) return BAIL;
        } else if (is(name, 0, "txId")) {
            SEEN(64);
            if (uint_field(pp, e, &ev->has_tx, &ev->tx)) return BAIL;
        } else if (is(name, 0, "snapshot")) {
            SEEN(128);
            if (**pp == '"') {
                if (string(pp, e, &s, &sesc) || sesc) return BAIL;
                for (Py_ssize_t i = 0; i < s.n; i++)
                    if ((unsigned char)s.p[i] >= 0x80) return BAIL;
                ev->snapshot = s;
                ev->has_snapshot = 1;
            } else if (**pp == 't' || **pp == 'f') {
                const char *word = **pp == 't' ? "true" : "false";
                if (literal(pp, e, word)) return BAIL;
                ev->snapshot.p = word;
                ev->snapshot.n = (Py_ssize_t)strlen(word);
                ev->has_snapshot = 1;
            } else if (literal(pp, e, "null")) return BAIL;
        } else if (value_skip(pp, e, 1)) return BAIL;
    }
    if (r || !connector || !has_ts || !ev->schema.p || !ev->table.p) return BAIL;
    return 0;
}

/* One line: EVENT (in *ev), 0 for a tombstone (no event), or BAIL. */
static int record(const char *p, const char *e, Event *ev) {
    Members top, val;
    Span name;
    int esc, r, seen = 0, tombstone = 0, has_commit = 0, has_part = 0, has_off = 0, op_seen = 0;
    uint64_t commit = 0, part = 0, off = 0;
    const char *value_at = NULL;
    const char **pp = &p;
    ev->key.p = NULL;
    ev->op = 0;
    ev->has_before = ev->has_after = 0;
    ev->key_names.count = ev->before_names.count = ev->after_names.count = 0;
    ws(pp, e);
    if (members_open(&top, pp, e)) return BAIL;
    while ((r = members_next(&top, &name, &esc)) == 1) {
        if (esc) return BAIL;  /* a record's own names are plain: anything else, Python reads */
        if (is(name, 0, "op") || is(name, 0, "payload") || is(name, 0, "key_schema") ||
            is(name, 0, "value_schema"))
            return BAIL;
        if (is(name, 0, "key")) {
            SEEN(1);
            if (**pp == '{') {
                if (row(pp, e, &ev->key, &ev->key_names, NULL)) return BAIL;
            } else {
                ev->key.p = NULL;
                if (value_skip(pp, e, 1)) return BAIL;
            }
        } else if (is(name, 0, "value")) {
            SEEN(2);
            value_at = *pp;
            if (**pp == 'n') {
                if (literal(pp, e, "null")) return BAIL;
                tombstone = 1;
                continue;
            }
            if (members_open(&val, pp, e)) return BAIL;
            int vseen = 0, has_source = 0;
            while ((r = members_next(&val, &name, &esc)) == 1) {
                if (esc) return BAIL;
                if (is(name, 0, "before") || is(name, 0, "after")) {
                    int after = name.n == 5;
                    if (vseen & (after ? 1 : 2)) return BAIL;
                    vseen |= after ? 1 : 2;
                    if (**pp == 'n') {
                        if (literal(pp, e, "null")) return BAIL;
                    } else if (**pp == '{') {
                        if (after) {
                            if (row(pp, e, &ev->after, &ev->after_names, &ev->after_members)) return BAIL;
                            ev->has_after = 1;
                        } else {
                            if (row(pp, e, &ev->before, &ev->before_names, NULL)) return BAIL;
                            ev->has_before = 1;
                        }
                    } else return BAIL;
                } else if (is(name, 0, "source")) {
                    if (vseen & 4) return BAIL;
                    vseen |= 4;
                    if (source(pp, e, ev, &has_commit, &commit)) return BAIL;
                    has_source = 1;
                } else if (is(name, 0, "op")) {
                    if (vseen & 8) return BAIL;
                    vseen |= 8;
                    Span s;
                    int sesc;
                    if (**pp != '"' || string(pp, e, &s, &sesc) || sesc || s.n != 1) return BAIL;
                    if (!strchr("cudr", s.p[0])) return BAIL;
                    ev->op = s.p[0];
                    op_seen = 1;
                } else if (value_skip(pp, e, 1)) return BAIL;
            }
            if (r || !has_source || !op_seen) return BAIL;
        } else if (is(name, 0, "partition")) {
            SEEN(4);
            if (uint_field(pp, e, &has_part, &part) || !has_part) return BAIL;
        } else if (is(name, 0, "offset")) {
            SEEN(8);
            if (uint_field(pp, e, &has_off, &off) || !has_off) return BAIL;
        } else if (value_skip(pp, e, 1)) return BAIL;
    }
    if (r) return BAIL;
    ws(pp, e);
    if (*pp != e || !value_at) return BAIL;
    if (tombstone) return 0;  /* a tombstone: no event, the stream's state untouched */
    if (!ev->key.p) return BAIL;
    if (ev->key_names.count == 2 && ((is(ev->key_names.names[0], 0, "payload") &&
                                      is(ev->key_names.names[1], 0, "schema")) ||
                                     (is(ev->key_names.names[0], 0, "schema") &&
                                      is(ev->key_names.names[1], 0, "payload"))))
        return BAIL;  /* a {schema, payload} wrapper */
    if (has_commit) {
        if (!ev->has_lsn) return BAIL;
        ev->position[0] = commit;
        ev->position[1] = ev->lsn;
    } else if (seen & 8) {
        ev->position[0] = part;
        ev->position[1] = off;
    } else return BAIL;
    if (!ev->has_after && ev->op != 'd') return BAIL;
    return EVENT;
}

/* ---- the file ---- */

typedef struct {
    /* a key change's delete: the last delete's place (collection, lsn, txId) and position */
    int open;
    char collection[512];
    Py_ssize_t collection_n;
    uint64_t lsn, tx, position[2];
    int has_tx;
} Pairing;

static int collection_of(const Event *ev, char *out, Py_ssize_t cap, Py_ssize_t *n) {
    int dotted = memchr(ev->schema.p, '.', ev->schema.n) || memchr(ev->table.p, '.', ev->table.n);
    Py_ssize_t need = ev->schema.n + ev->table.n + 1 + (dotted ? 4 : 0);
    if (need > cap) return BAIL;
    char *o = out;
    if (dotted) *o++ = '"';
    memcpy(o, ev->schema.p, ev->schema.n);
    o += ev->schema.n;
    if (dotted) *o++ = '"';
    *o++ = '.';
    if (dotted) *o++ = '"';
    memcpy(o, ev->table.p, ev->table.n);
    o += ev->table.n;
    if (dotted) *o++ = '"';
    *n = o - out;
    return 0;
}

static int position_key(Col *c, const uint64_t *elements, int count) {
    unsigned char out[9 * 4];
    Py_ssize_t n = 0;
    for (int i = 0; i < count; i++) {
        uint64_t v = elements[i];
        int size = 0;
        while (size < 8 && (v >> (8 * size))) size++;
        out[n++] = (unsigned char)size;
        for (int b = size - 1; b >= 0; b--) out[n++] = (unsigned char)(v >> (8 * b));
    }
    return col_add(c, (const char *)out, n, 1);
}

static PyObject *names_tuple(const Names *names, int sorted) {
    PyObject *t = PyList_New(names->count);
    if (!t) return NULL;
    for (int i = 0; i < names->count; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(names->names[i].p, names->names[i].n, NULL);
        if (!s) { Py_DECREF(t); return NULL; }
        PyList_SET_ITEM(t, i, s);
    }
    if (sorted && PyList_Sort(t)) { Py_DECREF(t); return NULL; }
    PyObject *out = PyList_AsTuple(t);
    Py_DECREF(t);
    return out;
}

static int distinct(const Names *names) {
    for (int i = 0; i < names->count; i++)
        for (int j = 0; j < i; j++)
            if (names->names[i].n == names->names[j].n &&
                memcmp(names->names[i].p, names->names[j].p, names->names[i].n) == 0)
                return 0;
    return 1;
}

/* The shape's signature: collection, key names, row names, each name ended by a 0 byte. */
static int signature(Buf *b, const char *coll, Py_ssize_t coll_n, const Names *key, const Names *row) {
    b->len = 0;
    char z = 0, one = 1;
    if (put(b, coll, coll_n) || put(b, &z, 1)) return -1;
    for (int i = 0; i < key->count; i++)
        if (put(b, key->names[i].p, key->names[i].n) || put(b, &z, 1)) return -1;
    if (put(b, &one, 1)) return -1;
    for (int i = 0; i < row->count; i++)
        if (put(b, row->names[i].p, row->names[i].n) || put(b, &z, 1)) return -1;
    return 0;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", b->len); }

static PyObject *parse(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    if (view.len > INT32_MAX) {  /* Arrow's int32 offsets: the Python parser flushes its rows in batches */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    const char *d = view.buf, *end = d + view.len;
    PyObject *result = NULL, *shapes = PyList_New(0);
    Event *ev = PyMem_Calloc(1, sizeof(Event));
    Pairing pair = {0};
    Buf lines = {0}, ops = {0}, ts = {0}, sig = {0}, last_sig = {0}, last_before = {0}, rebuilt = {0},
        unchanged_at = {0};
    Col coll = {0}, key = {0}, before = {.nullable = 1}, after = {.nullable = 1}, position = {0},
        snapshot = {.nullable = 1}, unchanged = {0};
    Col *cols[] = {&coll, &key, &before, &after, &position, &snapshot, &unchanged};
    int bail = 0, failed = !shapes || !ev;
    for (int i = 0; i < 7 && !failed; i++) failed = col_start(cols[i]);
    int32_t listed = 0;  /* the unchanged columns' names so far: their list column's offsets */
    failed = failed || put(&unchanged_at, &listed, 4);
    int64_t lineno = 0;
    char name[512];
    Py_ssize_t name_n;
    const char *p = d;
    while (!failed && !bail && p < end) {
        /* a line, as bytes.splitlines() cuts them: at \n, \r\n or \r */
        const char *s = p, *e = p;
        while (e < end && *e != '\n' && *e != '\r') e++;
        p = e + (e < end) + (e + 1 < end && e[0] == '\r' && e[1] == '\n');
        lineno++;
        const char *q = s;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\v' || *q == '\f')) q++;
        if (q == e) continue;  /* blank: skipped, counted */
        int got = record(s, e, ev);
        if (got == BAIL) { bail = 1; break; }
        if (got != EVENT) continue;
        if (collection_of(ev, name, sizeof name, &name_n)) { bail = 1; break; }
        uint64_t elements[3] = {ev->position[0], ev->position[1], 0};
        int count = 2;
        if ((ev->op == 'd' || ev->op == 'c') && ev->has_lsn) {
            /* events.positions.PgStream.pair (without an lsn: no pairing, and the state stays) */
            if (ev->op == 'd') {
                pair.open = 1;
                memcpy(pair.collection, name, name_n);
                pair.collection_n = name_n;
                pair.lsn = ev->lsn;
                pair.has_tx = ev->has_tx;
                pair.tx = ev->tx;
                pair.position[0] = elements[0];
                pair.position[1] = elements[1];
                count = 3;
            } else {
                if (pair.open && pair.collection_n == name_n && !memcmp(pair.collection, name, name_n) &&
                    pair.lsn == ev->lsn && pair.has_tx == ev->has_tx && (!ev->has_tx || pair.tx == ev->tx)) {
                    elements[0] = pair.position[0];
                    elements[1] = pair.position[1];
                    elements[2] = 1;
                    count = 3;
                }
                pair.open = 0;
            }
        }
        const Names *row_names = ev->has_after ? &ev->after_names : &ev->before_names;
        static const Names no_names;
        if (!ev->has_after && !ev->has_before) row_names = &no_names;
        Span after_text = ev->after;
        if (ev->has_after && ev->after_members.placeholders) {
            /* events.debezium._toast: the placeholders' columns leave the row and are listed unchanged */
            const Members_of *m = &ev->after_members;
            if (!distinct(&ev->after_names)) { bail = 1; break; }
            ev->kept.count = 0;
            rebuilt.len = 0;
            failed = put(&rebuilt, "{", 1);
            for (int i = 0; i < ev->after_names.count && !failed; i++) {
                if (m->placeholder[i]) {
                    failed = col_add(&unchanged, ev->after_names.names[i].p, ev->after_names.names[i].n, 1);
                    listed++;
                    continue;
                }
                if (ev->kept.count) failed = put(&rebuilt, ",", 1);
                ev->kept.names[ev->kept.count++] = ev->after_names.names[i];
                failed = failed || put(&rebuilt, m->text[i].p, m->text[i].n);
            }
            if (failed || put(&rebuilt, "}", 1)) { failed = 1; break; }
            after_text.p = rebuilt.data;
            after_text.n = rebuilt.len;
            row_names = &ev->kept;
        }
        if (signature(&sig, name, name_n, &ev->key_names, row_names)) { failed = 1; break; }
        if (sig.len != last_sig.len || memcmp(sig.data, last_sig.data, sig.len)) {
            if (!distinct(&ev->key_names) || !distinct(row_names)) { bail = 1; break; }
            PyObject *k = names_tuple(&ev->key_names, 0), *r = names_tuple(row_names, 0);
            PyObject *entry = k && r ? Py_BuildValue("(Ls#OO)", (long long)key.count, name, name_n, k, r) : NULL;
            Py_XDECREF(k);
            Py_XDECREF(r);
            if (!entry || PyList_Append(shapes, entry)) { Py_XDECREF(entry); failed = 1; break; }
            Py_DECREF(entry);
            Buf t = last_sig;
            last_sig = sig;
            sig = t;
        }
        if (ev->has_before) {
            /* a before row's names are no part of the shape, but as bytes they must be distinct too */
            if (signature(&sig, "", 0, &no_names, &ev->before_names)) { failed = 1; break; }
            if (sig.len != last_before.len || memcmp(sig.data, last_before.data, sig.len)) {
                if (!distinct(&ev->before_names)) { bail = 1; break; }
                Buf t = last_before;
                last_before = sig;
                sig = t;
            }
        }
        char op = ev->op;
        int64_t ln = lineno, t = (int64_t)ev->ts;
        char snap[64];
        Py_ssize_t snap_n = ev->has_snapshot ? ev->snapshot.n : 0;
        if (snap_n > (Py_ssize_t)sizeof snap) { bail = 1; break; }
        for (Py_ssize_t i = 0; i < snap_n; i++) {
            char ch = ev->snapshot.p[i];
            snap[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
        }
        failed = put(&lines, &ln, 8) || put(&ops, &op, 1) || put(&ts, &t, 8) ||
                 col_add(&coll, name, name_n, 1) || col_add(&key, ev->key.p, ev->key.n, 1) ||
                 col_add(&before, ev->before.p, ev->before.n, ev->has_before) ||
                 col_add(&after, after_text.p, after_text.n, ev->has_after) || put(&unchanged_at, &listed, 4) ||
                 position_key(&position, elements, count) ||
                 col_add(&snapshot, snap, snap_n, ev->has_snapshot);
    }
    if (failed) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
    } else if (bail) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *parts[3][3];
        Col *nullable[] = {&before, &after, &snapshot};
        for (int i = 0; i < 3; i++) {
            parts[i][0] = bytes_of(&nullable[i]->validity);
            parts[i][1] = bytes_of(&nullable[i]->data);
            parts[i][2] = bytes_of(&nullable[i]->offsets);
        }
        result = Py_BuildValue(
            "(nNNNN(NNN)(NNN)NN(NNN)NO)", key.count, bytes_of(&lines), bytes_of(&ops),
            Py_BuildValue("(NN)", bytes_of(&coll.data), bytes_of(&coll.offsets)),
            Py_BuildValue("(NN)", bytes_of(&key.data), bytes_of(&key.offsets)), parts[0][0], parts[0][1],
            parts[0][2], parts[1][0], parts[1][1], parts[1][2],
            Py_BuildValue("(NN)", bytes_of(&position.data), bytes_of(&position.offsets)), bytes_of(&ts),
            parts[2][0], parts[2][1], parts[2][2],
            Py_BuildValue("(N(NN))", bytes_of(&unchanged_at), bytes_of(&unchanged.data), bytes_of(&unchanged.offsets)),
            shapes);
    }
    for (int i = 0; i < 7; i++) col_free(cols[i]);
    PyMem_Free(rebuilt.data);
    PyMem_Free(unchanged_at.data);
    PyMem_Free(lines.data);
    PyMem_Free(ops.data);
    PyMem_Free(ts.data);
    PyMem_Free(sig.data);
    PyMem_Free(last_sig.data);
    PyMem_Free(last_before.data);
    PyMem_Free(ev);
    Py_XDECREF(shapes);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", parse, METH_O, "a landing file of the common PostgreSQL record to Arrow buffers, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plainjson", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__plainjson(void) { return PyModule_Create(&module); }
