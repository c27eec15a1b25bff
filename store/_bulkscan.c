/* A commit's raw lines read in C where they have the common shapes (store/readahead.py), so that the
 * C line loop (store/_bulklines.c) makes their records without msgspec's dict for each line:
 *
 *     node: {"labels": [name, ...]?, "external_key": name | null?, "properties": {name: scalar} | null?}
 *     edge: {"type": name, "src_key": name, "dst_key": name, "properties": {name: scalar} | null?}
 *
 * fields in any order, each once, JSON's whitespace anywhere between tokens. Every string is ASCII
 * without an escape or a control character (so its value is its bytes: a Span of the line); a scalar
 * is a string, true, false, null, an integer of at most 18 digits or a finite number with a fraction
 * or an exponent (read by CPython's own float parser). A line with anything else — another field, a
 * field twice, an escape, a non-ASCII byte, a nested value, a longer integer, no valid JSON — is
 * OTHER: read_ahead parses it with msgspec and the dict path handles it as before. A line taken here
 * must come out as msgspec's dict of it would (tests/property/test_import_scan.py).
 *
 * Scan(raws)       every line of raws (a list of bytes) scanned; holds them
 * Scan.of_records(records)  records in memory (what lines parse to) read as lines of those shapes
 * scan.kinds()     one byte a line: 0 OTHER, 1 a node, 2 an edge
 * The key names the lines name (Scan.occ) are looked up with a commit's dict lines by _bulk.c's look_up,
 * into Scan.keys: the commit's keys in C, each a line's end by index, no dict and no hashing.
 */
#include <math.h>
#include <string.h>

#include "_bulk.h"

/* whitespace and one expected byte, inlined where they are read: a line is a dozen tokens, and
 * these two calls each were a tenth of the scan (-O2 leaves a function called from many places a
 * call). Inlining the string readers too made node lines slower. */
#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

#define MAX_INT_DIGITS 18 /* every such integer fits in 64 bits; longer ones are msgspec's to read */
#define MAX_FLOAT_CHARS 64

typedef struct {
    const char *s, *end;
} Cursor;

INLINE void ws(Cursor *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
        c->s++;
}

INLINE int expect(Cursor *c, char ch) {
    ws(c);
    if (c->s < c->end && *c->s == ch) {
        c->s++;
        return 1;
    }
    return 0;
}

/* a string's bytes after its opening quote, up to the closing one (consumed): 1, or 0 if not plain */
static int string(Cursor *c, const char *line, Span *out) {
    const char *start = c->s;
    while (c->s < c->end) {
        unsigned char ch = (unsigned char)*c->s;
        if (ch == '"') {
            *out = (Span){(uint32_t)(start - line), (uint32_t)(c->s - start)};
            c->s++;
            return 1;
        }
        if (ch < 0x20 || ch > 0x7e || ch == '\\')
            return 0;
        c->s++;
    }
    return 0;
}

static int digits(Cursor *c) {
    const char *start = c->s;
    while (c->s < c->end && *c->s >= '0' && *c->s <= '9')
        c->s++;
    return (int)(c->s - start);
}

/* a JSON number as msgspec reads it: an int (no fraction, no exponent), else a float */
static int number(Cursor *c, const char *line, Tok *tok) {
    const char *start = c->s;
    if (c->s < c->end && *c->s == '-')
        c->s++;
    if (c->s >= c->end)
        return 0;
    int whole;
    if (*c->s == '0') {
        c->s++;
        whole = 1;
        if (c->s < c->end && *c->s >= '0' && *c->s <= '9')
            return 0; /* a leading zero: no JSON */
    } else if (!(whole = digits(c)))
        return 0;
    int is_float = 0;
    if (c->s < c->end && *c->s == '.') {
        c->s++;
        if (!digits(c))
            return 0;
        is_float = 1;
    }
    if (c->s < c->end && (*c->s == 'e' || *c->s == 'E')) {
        c->s++;
        if (c->s < c->end && (*c->s == '+' || *c->s == '-'))
            c->s++;
        if (!digits(c))
            return 0;
        is_float = 1;
    }
    Py_ssize_t n = c->s - start;
    tok->s = (Span){(uint32_t)(start - line), (uint32_t)n};
    if (!is_float) {
        if (whole > MAX_INT_DIGITS)
            return 0;
        long long v = 0;
        for (const char *p = start + (*start == '-'); p < c->s; p++)
            v = v * 10 + (*p - '0');
        tok->kind = TOK_INT;
        tok->v.i = *start == '-' ? -v : v;
        return 1;
    }
    if (n >= MAX_FLOAT_CHARS)
        return 0;
    char buf[MAX_FLOAT_CHARS];
    memcpy(buf, start, (size_t)n);
    buf[n] = 0;
    char *stop;
    double d = PyOS_string_to_double(buf, &stop, NULL); /* float()'s reading: correctly rounded */
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (stop != buf + n || !isfinite(d))
        return 0; /* past a double's range: the dict path refuses it by name */
    tok->kind = TOK_FLOAT;
    tok->v.d = d;
    return 1;
}

static int literal(Cursor *c, const char *word, Py_ssize_t n) {
    if (c->end - c->s < n || memcmp(c->s, word, (size_t)n))
        return 0;
    c->s += n;
    return 1;
}

static int add_tok(Scan *scan, Tok tok) {
    if (scan->ntoks == scan->captoks) {
        Tok *toks = room(scan->toks, &scan->captoks, scan->ntoks + 1, sizeof(Tok), 1024, 0);
        if (!toks)
            return -1;
        scan->toks = toks;
    }
    scan->toks[scan->ntoks++] = tok;
    return 0;
}

/* a scalar's token: 1, 0 if not plain, -1 on an error */
static int scalar(Scan *scan, Cursor *c, const char *line) {
    Tok tok = {0};
    ws(c);
    if (c->s >= c->end)
        return 0;
    char ch = *c->s;
    int ok;
    if (ch == '"') {
        c->s++;
        tok.kind = TOK_STR;
        ok = string(c, line, &tok.s);
    } else if (ch == 't') {
        tok.kind = TOK_TRUE;
        ok = literal(c, "true", 4);
    } else if (ch == 'f') {
        tok.kind = TOK_FALSE;
        ok = literal(c, "false", 5);
    } else if (ch == 'n') {
        tok.kind = TOK_NULL;
        ok = literal(c, "null", 4);
    } else
        ok = number(c, line, &tok);
    return !ok ? 0 : add_tok(scan, tok) < 0 ? -1 : 1;
}

static int quoted(Cursor *c, const char *line, Span *out) { return expect(c, '"') && string(c, line, out); }

/* "labels": [str, ...] */
static int labels(Scan *scan, Cursor *c, const char *line, ScanLine *l) {
    if (!expect(c, '['))
        return 0;
    l->labels = (uint32_t)scan->ntoks;
    if (expect(c, ']'))
        return 1;
    do {
        Tok tok = {TOK_STR};
        if (!quoted(c, line, &tok.s))
            return 0;
        if (add_tok(scan, tok) < 0)
            return -1;
        l->n_labels++;
    } while (expect(c, ','));
    return expect(c, ']');
}

/* "properties": {str: scalar, ...} or null */
static int props(Scan *scan, Cursor *c, const char *line, ScanLine *l) {
    ws(c);
    if (literal(c, "null", 4))
        return 1;
    if (!expect(c, '{'))
        return 0;
    l->props = (uint32_t)scan->ntoks;
    if (expect(c, '}'))
        return 1;
    do {
        Tok name = {TOK_STR};
        if (!quoted(c, line, &name.s) || !expect(c, ':'))
            return 0;
        if (add_tok(scan, name) < 0)
            return -1;
        int rc = scalar(scan, c, line);
        if (rc <= 0)
            return rc;
        l->n_props++;
    } while (expect(c, ','));
    return expect(c, '}');
}

static int add_occ(Scan *scan, const char *line, Span s, int32_t *at) {
    if (scan->nocc == scan->capocc) {
        Occ *occ = room(scan->occ, &scan->capocc, scan->nocc + 1, sizeof(Occ), 1024, 0);
        if (!occ)
            return -1;
        scan->occ = occ;
    }
    *at = (int32_t)scan->nocc;
    scan->occ[scan->nocc++] = (Occ){line + s.off, s.len, -1};
    return 0;
}

enum { F_LABELS = 1, F_KEY = 2, F_PROPS = 4, F_TYPE = 8, F_SRC = 16, F_DST = 32 };

/* by its length first: a compare of a constant length is a load or two, no call (a strlen and a
 * memcmp call for each field tried were ~2 % of upstream's import) */
static int field_of(const char *p, uint32_t len) {
    switch (len) {
    case 4: return memcmp(p, "type", 4) ? 0 : F_TYPE;
    case 6: return memcmp(p, "labels", 6) ? 0 : F_LABELS;
    case 7: return !memcmp(p, "src_key", 7) ? F_SRC : !memcmp(p, "dst_key", 7) ? F_DST : 0;
    case 10: return memcmp(p, "properties", 10) ? 0 : F_PROPS;
    case 12: return memcmp(p, "external_key", 12) ? 0 : F_KEY;
    default: return 0;
    }
}

static int field(const char *line, Span s) { return field_of(line + s.off, s.len); }

/* A line's (or a record's) kind from the fields it had (`seen`), its key's and ends' occurrences
 * added: the rule both readers share. `key`: NULL when there is none or it is null. */
static int line_kind(Scan *scan, const char *line, int seen, const Span *key, Span src, Span dst, ScanLine *l) {
    if (seen & F_TYPE) {
        if (seen != (F_TYPE | F_SRC | F_DST | (seen & F_PROPS)))
            return LINE_OTHER;
        if (add_occ(scan, line, src, &l->src) < 0 || add_occ(scan, line, dst, &l->dst) < 0)
            return -1;
        return LINE_EDGE;
    }
    if (seen & (F_SRC | F_DST))
        return LINE_OTHER;
    if ((seen & F_KEY) && key && add_occ(scan, line, *key, &l->key) < 0)
        return -1;
    return LINE_NODE;
}

/* One line: its kind (OTHER when it is not of the shapes above), -1 on an error. The tokens it added
 * stay when it is OTHER: nothing reads them. */
static int scan_line(Scan *scan, const char *line, Py_ssize_t len, ScanLine *l) {
    Cursor c = {line, line + len};
    Span key = {0}, src = {0}, dst = {0};
    int seen = 0, key_null = 0;
    *l = (ScanLine){line, LINE_OTHER, -1, -1, -1, {0, 0}, 0, 0, 0, 0};
    if (len > UINT32_MAX || !expect(&c, '{'))
        return LINE_OTHER;
    if (!expect(&c, '}')) {
        do {
            Span name;
            if (!quoted(&c, line, &name) || !expect(&c, ':'))
                return LINE_OTHER;
            int f = field(line, name), rc = 1;
            if (!f || (seen & f))
                return LINE_OTHER; /* another field, or one twice (the last would count) */
            seen |= f;
            if (f == F_LABELS)
                rc = labels(scan, &c, line, l);
            else if (f == F_PROPS)
                rc = props(scan, &c, line, l);
            else if (f == F_KEY) {
                ws(&c);
                key_null = literal(&c, "null", 4);
                rc = key_null || quoted(&c, line, &key);
            } else
                rc = quoted(&c, line, f == F_TYPE ? &l->type : f == F_SRC ? &src : &dst);
            if (rc <= 0)
                return rc < 0 ? -1 : LINE_OTHER;
        } while (expect(&c, ','));
        if (!expect(&c, '}'))
            return LINE_OTHER;
    }
    ws(&c);
    if (c.s != c.end)
        return LINE_OTHER;
    return line_kind(scan, line, seen, key_null ? NULL : &key, src, dst, l);
}

PyObject *ascii_str(const char *s, Py_ssize_t n) {
    PyObject *str = PyUnicode_New(n, 127);
    if (str)
        memcpy(PyUnicode_DATA(str), s, (size_t)n);
    return str;
}

PyObject *scan_name(Scan *scan, const char *s, Py_ssize_t n) {
    for (int i = 0; i < scan->nnames; i++) {
        PyObject *name = scan->names[i];
        if (PyUnicode_GET_LENGTH(name) == n && !memcmp(PyUnicode_DATA(name), s, (size_t)n))
            return Py_NewRef(name);
    }
    PyObject *name = ascii_str(s, n);
    if (name && scan->nnames < (int)(sizeof scan->names / sizeof scan->names[0]))
        scan->names[scan->nnames++] = Py_NewRef(name);
    return name;
}

static void forget_keys(Scan *scan);

int scan_keys_add(Scan *scan, Py_ssize_t nkeys) {
    forget_keys(scan);
    Key *keys = PyMem_Calloc((size_t)(nkeys ? nkeys : 1), sizeof(Key));
    if (!keys) {
        PyErr_NoMemory();
        return -1;
    }
    scan->keys = keys;
    scan->nkeys = 0;
    return 0;
}

static void forget_keys(Scan *scan) {
    for (Py_ssize_t i = 0; i < scan->nkeys; i++)
        Py_XDECREF(scan->keys[i].boxed);
    PyMem_Free(scan->keys);
    scan->keys = NULL;
    scan->nkeys = 0;
    scan->resolved = 0;
    for (Py_ssize_t i = 0; i < scan->nocc; i++)
        scan->occ[i].key = -1;
}

static PyObject *scan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *raws;
    if ((kwargs && PyDict_GET_SIZE(kwargs)) || !PyArg_ParseTuple(args, "O!", &PyList_Type, &raws))
        return NULL;
    Scan *scan = (Scan *)type->tp_alloc(type, 0);
    if (!scan || !(scan->raws = PyList_AsTuple(raws)))
        goto fail;
    scan->n = PyTuple_GET_SIZE(scan->raws);
    if (!(scan->lines = PyMem_Calloc((size_t)(scan->n ? scan->n : 1), sizeof(ScanLine)))) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < scan->n; i++) {
        PyObject *raw = PyTuple_GET_ITEM(scan->raws, i);
        if (!PyBytes_Check(raw)) {
            PyErr_SetString(PyExc_TypeError, "Scan() takes a list of bytes");
            goto fail;
        }
        int kind = scan_line(scan, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), &scan->lines[i]);
        if (kind < 0)
            goto fail;
        scan->lines[i].kind = (unsigned char)kind;
    }
    return (PyObject *)scan;
fail:
    Py_XDECREF(scan);
    return NULL;
}

static void scan_dealloc(Scan *scan) {
    forget_keys(scan);
    for (int i = 0; i < scan->nnames; i++)
        Py_DECREF(scan->names[i]);
    PyMem_Free(scan->lines);
    PyMem_Free(scan->toks);
    PyMem_Free(scan->occ);
    Py_XDECREF(scan->raws);
    Py_TYPE(scan)->tp_free((PyObject *)scan);
}

static PyObject *scan_kinds(Scan *scan, PyObject *unused) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, scan->n);
    if (out)
        for (Py_ssize_t i = 0; i < scan->n; i++)
            PyBytes_AS_STRING(out)[i] = (char)scan->lines[i].kind;
    return out;
}

/* ---- records in memory (store/readahead.py's RecordLines): each what a line parses to, read here
 * as scan_line reads a line of the same shapes — the same tokens, their strings' bytes copied into
 * one text the Scan holds (a Span of it, as of a line's), so the C line loop takes them as it takes
 * a file's. A record of any other shape (a value of another type or a subclass, a string that is
 * not printable ASCII without a quote or a backslash, an int past 64 bits, NaN) is OTHER: the
 * dict path reads the record itself. */

/* a str as the scan reads a plain string: its bytes (n: how many), or NULL */
static const char *plain_text(PyObject *s, Py_ssize_t *n) {
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s))
        return NULL;
    const char *p = (const char *)PyUnicode_DATA(s);
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
            return NULL;
    }
    *n = len;
    return p;
}

/* a str's bytes appended to `text` as a Span of the line that begins at `base`: 1, 0 if not plain, -1 */
static int text_span(Buf *text, Py_ssize_t base, PyObject *s, Span *out) {
    Py_ssize_t n;
    const char *p = plain_text(s, &n);
    if (!p || text->len - base + n > UINT32_MAX)
        return 0;
    *out = (Span){(uint32_t)(text->len - base), (uint32_t)n};
    return put(text, p, n) < 0 ? -1 : 1;
}

static int record_scalar(Scan *scan, Buf *text, Py_ssize_t base, PyObject *v) {
    Tok tok = {0};
    if (v == Py_None)
        tok.kind = TOK_NULL;
    else if (v == Py_True || v == Py_False)
        tok.kind = v == Py_True ? TOK_TRUE : TOK_FALSE;
    else if (PyLong_CheckExact(v)) {
        int overflow;
        tok.kind = TOK_INT;
        tok.v.i = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (tok.v.i == -1 && PyErr_Occurred())
            return -1;
        if (overflow)
            return 0;
    } else if (PyFloat_CheckExact(v)) {
        tok.kind = TOK_FLOAT;
        tok.v.d = PyFloat_AS_DOUBLE(v);
        if (!isfinite(tok.v.d))
            return 0;
    } else {
        tok.kind = TOK_STR;
        int rc = text_span(text, base, v, &tok.s);
        if (rc <= 0)
            return rc;
    }
    return add_tok(scan, tok) < 0 ? -1 : 1;
}

static int record_labels(Scan *scan, Buf *text, Py_ssize_t base, PyObject *labels, ScanLine *l) {
    if (!PyList_CheckExact(labels))
        return 0;
    l->labels = (uint32_t)scan->ntoks;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(labels); i++) {
        Tok tok = {TOK_STR};
        int rc = text_span(text, base, PyList_GET_ITEM(labels, i), &tok.s);
        if (rc <= 0)
            return rc;
        if (add_tok(scan, tok) < 0)
            return -1;
        l->n_labels++;
    }
    return 1;
}

static int record_props(Scan *scan, Buf *text, Py_ssize_t base, PyObject *props, ScanLine *l) {
    if (props == Py_None)
        return 1;
    if (!PyDict_CheckExact(props))
        return 0;
    l->props = (uint32_t)scan->ntoks;
    Py_ssize_t pos = 0;
    PyObject *name, *value;
    while (PyDict_Next(props, &pos, &name, &value)) {
        Tok tok = {TOK_STR};
        int rc = text_span(text, base, name, &tok.s);
        if (rc <= 0)
            return rc;
        if (add_tok(scan, tok) < 0)
            return -1;
        if ((rc = record_scalar(scan, text, base, value)) <= 0)
            return rc;
        l->n_props++;
    }
    return 1;
}

/* One record as scan_line reads a line: its kind, -1 on an error. Its text begins at `base`; the
 * line's text and its occurrences' bytes hold offsets into `text` until of_records sets them. */
static int scan_record(Scan *scan, Buf *text, PyObject *record, ScanLine *l) {
    Py_ssize_t base = text->len;
    Span key = {0}, src = {0}, dst = {0};
    int seen = 0, key_null = 0;
    *l = (ScanLine){(const char *)(uintptr_t)base, LINE_OTHER, -1, -1, -1, {0, 0}, 0, 0, 0, 0};
    if (!PyDict_CheckExact(record))
        return LINE_OTHER;
    Py_ssize_t pos = 0;
    PyObject *name, *value;
    while (PyDict_Next(record, &pos, &name, &value)) {
        Py_ssize_t n;
        const char *p = plain_text(name, &n);
        int f = p ? field_of(p, (uint32_t)n) : 0, rc;
        if (!f)
            return LINE_OTHER; /* another field (a dict holds none twice) */
        seen |= f;
        if (f == F_LABELS)
            rc = record_labels(scan, text, base, value, l);
        else if (f == F_PROPS)
            rc = record_props(scan, text, base, value, l);
        else if (f == F_KEY)
            rc = (key_null = value == Py_None) ? 1 : text_span(text, base, value, &key);
        else
            rc = text_span(text, base, value, f == F_TYPE ? &l->type : f == F_SRC ? &src : &dst);
        if (rc <= 0)
            return rc < 0 ? -1 : LINE_OTHER;
    }
    /* (the line's text is an offset until the text is the Scan's) */
    return line_kind(scan, (const char *)(uintptr_t)base, seen, key_null ? NULL : &key, src, dst, l);
}

static PyObject *scan_of_records(PyObject *unused, PyObject *records) {
    if (!PyList_CheckExact(records)) {
        PyErr_SetString(PyExc_TypeError, "Scan.of_records() takes a list");
        return NULL;
    }
    Buf text = {0};
    Scan *scan = (Scan *)ScanType.tp_alloc(&ScanType, 0);
    if (!scan)
        return NULL;
    scan->n = PyList_GET_SIZE(records);
    if (!(scan->lines = PyMem_Calloc((size_t)(scan->n ? scan->n : 1), sizeof(ScanLine)))) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < scan->n; i++) {
        int kind = scan_record(scan, &text, PyList_GET_ITEM(records, i), &scan->lines[i]);
        if (kind < 0)
            goto fail;
        scan->lines[i].kind = (unsigned char)kind;
    }
    PyObject *held = PyBytes_FromStringAndSize(text.data, text.len);
    if (!held || !(scan->raws = PyTuple_Pack(1, held))) {
        Py_XDECREF(held);
        goto fail;
    }
    Py_DECREF(held); /* (the tuple holds it) */
    const char *data = PyBytes_AS_STRING(held);
    for (Py_ssize_t i = 0; i < scan->n; i++)
        scan->lines[i].text = data + (uintptr_t)scan->lines[i].text;
    for (Py_ssize_t i = 0; i < scan->nocc; i++)
        scan->occ[i].s = data + (uintptr_t)scan->occ[i].s;
    PyMem_Free(text.data);
    return (PyObject *)scan;
fail:
    PyMem_Free(text.data);
    Py_DECREF(scan);
    return NULL;
}

static PyMethodDef scan_methods[] = {
    {"kinds", (PyCFunction)scan_kinds, METH_NOARGS, "one byte a line: 0 for the dict path, 1 a node, 2 an edge"},
    {"of_records", (PyCFunction)scan_of_records, METH_O | METH_STATIC,
     "records in memory (a list of what lines parse to) read as Scan reads lines of the same shapes"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ScanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "drsg.store._bulk.Scan",
    .tp_basicsize = sizeof(Scan),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A commit's raw lines of the common shapes, read in C.",
    .tp_new = scan_new,
    .tp_dealloc = (destructor)scan_dealloc,
    .tp_methods = scan_methods,
};
