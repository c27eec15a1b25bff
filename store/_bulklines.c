/* A commit's parsed lines of the common shapes made into new records in C (store/bulkwrite.py's
 * BulkWrites.take), without a Python step per line:
 *
 *     node: {"labels": [name, ...]?, "external_key": name?, "properties": {name: scalar}?}
 *     edge: {"type": name, "src_key": name, "dst_key": name, "properties": {name: scalar}?}
 *
 * where a name is a non-empty ASCII str of at most 400 characters without NUL (check_name's common
 * case), labels are strictly increasing (as a record keeps them) and a scalar is None, a bool, an
 * int of 64 bits, a finite float or a str that is valid UTF-8. A line of any other shape, or one
 * whose key is taken or whose end is not known yet (or that may restate an edge the plane had
 * before), is not taken: the loop stops there and store/jsonl.py reads that line as before, so its
 * checks and error messages stay in one place. A line taken gets what the Python path gives it —
 * the same ids, mutation, entries (_bulk.c's node()/edge()) and tallies (counted per label and
 * type for the caller) — tests/property/test_bulk_import_parity.py holds the tables equal.
 *
 * lines(parsed, start, node_runs, edge_runs, plane, inv, next_node, next_edge, new_nodes_from,
 *       key_ids, known, mutations, wires, NodePut, EdgePut, label_counts, type_counts, scan=None)
 *     -> (stop, next_node, next_edge): parsed[start:stop] taken; each mutation appended to
 *     `mutations`, or — `mutations` None: a wired commit (WriteTx.wired), sealed from its wires
 *     alone — made as its wire only: every one's msgpack (its `to_wire()` packed) in one bytes
 *     appended to `wires` (None when `mutations` is not), for the commit record (store/log.py encode).
 *     A line `scan` (store/_bulkscan.c's Scan of the same lines) read is taken from its tokens, under
 *     the same rules, its key and ends by index into the scan's keys (looked up by _bulk.c's look_up):
 *     no dict read, no hashing; its `parsed` entry is None.
 * mutation_slots(NodePut, fields, EdgePut, fields): make those mutations by setting their slots
 *     (bulkwrite.py calls it once it checked them with native.slots_record); else they are called.
 */
#include <math.h>
#include <string.h>

#include "_bulk.h"

static PyObject *F_labels, *F_key, *F_props, *F_type, *F_src, *F_dst;

static int interned(void) {
    if (F_labels)
        return 0;
    F_labels = PyUnicode_InternFromString("labels");
    F_key = PyUnicode_InternFromString("external_key");
    F_props = PyUnicode_InternFromString("properties");
    F_type = PyUnicode_InternFromString("type");
    F_src = PyUnicode_InternFromString("src_key");
    F_dst = PyUnicode_InternFromString("dst_key");
    return F_labels && F_key && F_props && F_type && F_src && F_dst ? 0 : -1;
}

/* check_name's common case: a str, ASCII, 1-400 characters, no NUL */
static int plain_name(PyObject *s) {
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    return n > 0 && n <= 400 && !memchr(PyUnicode_DATA(s), 0, (size_t)n);
}

static int pack_be(Buf *b, unsigned char tag, uint64_t v, int width) {
    return put_byte(b, tag) < 0 ? -1 : put_be(b, v, width);
}

/* msgpack-python's form of a signed integer */
static int pack_int(Buf *b, long long v) {
    if (v >= 0)
        return pack_uint(b, (uint64_t)v);
    if (v >= -32)
        return put_byte(b, (unsigned char)(0xe0 | (v + 32)));
    if (v >= -128)
        return pack_be(b, 0xd0, (uint64_t)v, 1);
    if (v >= -32768)
        return pack_be(b, 0xd1, (uint64_t)v, 2);
    if (v >= -2147483648LL)
        return pack_be(b, 0xd2, (uint64_t)v, 4);
    return pack_be(b, 0xd3, (uint64_t)v, 8);
}

/* 1: packed; 0: not a plain scalar (the line is not taken); -1: an error */
static int pack_scalar(Buf *b, PyObject *v) {
    if (v == Py_None)
        return put_byte(b, 0xc0) < 0 ? -1 : 1;
    if (v == Py_True || v == Py_False)
        return put_byte(b, v == Py_True ? 0xc3 : 0xc2) < 0 ? -1 : 1;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return 0; /* past 64 bits: the Python path refuses it by name */
        if (x == -1 && PyErr_Occurred())
            return -1;
        return pack_int(b, x) < 0 ? -1 : 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        uint64_t bits;
        if (!isfinite(d))
            return 0;
        memcpy(&bits, &d, 8);
        return pack_be(b, 0xcb, bits, 8) < 0 ? -1 : 1;
    }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) {
            PyErr_Clear(); /* a lone surrogate: the Python path names it */
            return 0;
        }
        return pack_str(b, s, n) < 0 ? -1 : 1;
    }
    return 0;
}

/* A line's "properties" as packed bytes (new reference), with the map the mutation holds in *map
 * (new reference; map NULL: no mutation object wants one); Py_None (new reference) when they are not
 * plain; NULL on an error. */
static PyObject *pack_props(PyObject *props, PyObject **map) {
    Buf b = {0};
    PyObject *out = NULL;
    if (map)
        *map = NULL;
    if (props == NULL || props == Py_None) {
        out = PyBytes_FromStringAndSize("\x80", 1);
        if (out && map && !(*map = PyDict_New()))
            Py_CLEAR(out);
        return out;
    }
    if (!PyDict_CheckExact(props))
        Py_RETURN_NONE;
    Py_ssize_t n = PyDict_GET_SIZE(props), pos = 0;
    int rc = n < 16 ? put_byte(&b, (unsigned char)(0x80 | n))
                    : n <= 0xffff ? pack_be(&b, 0xde, (uint64_t)n, 2) : pack_be(&b, 0xdf, (uint64_t)n, 4);
    PyObject *name, *value;
    while (rc >= 0 && PyDict_Next(props, &pos, &name, &value)) {
        if (!plain_name(name)) {
            rc = 0;
            break;
        }
        if (pack_str(&b, PyUnicode_DATA(name), PyUnicode_GET_LENGTH(name)) < 0 || (rc = pack_scalar(&b, value)) < 0) {
            rc = -1;
            break;
        }
        if (rc == 0)
            break;
    }
    if (rc > 0 || (rc == 0 && n == 0)) {
        out = PyBytes_FromStringAndSize(b.data, b.len);
        if (map)
            *map = Py_NewRef(props);
    } else if (rc == 0) {
        out = Py_None;
        Py_INCREF(out);
    }
    PyMem_Free(b.data);
    return out;
}

/* NodePut and EdgePut as store/bulkwrite.py checked them (native.slots_record): made as their
 * __init__ makes them — allocated, each slot set in field order — without a call into Python. */
static PyTypeObject *node_put_type, *edge_put_type;
static PyObject *node_put_slots[5], *edge_put_slots[6];

static int slots_of(PyObject *type, PyObject *names, PyObject **slots, Py_ssize_t n) {
    if (!PyType_Check(type) || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) != n) {
        PyErr_SetString(PyExc_TypeError, "mutation_slots(NodePut, its 5 fields, EdgePut, its 6 fields)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *slot = PyObject_GetAttr(type, PyTuple_GET_ITEM(names, i));
        if (!slot)
            return -1;
        if (!Py_IS_TYPE(slot, &PyMemberDescr_Type)) {
            Py_DECREF(slot);
            PyErr_Format(PyExc_TypeError, "%R is not a slot of %R", PyTuple_GET_ITEM(names, i), type);
            return -1;
        }
        Py_XSETREF(slots[i], slot);
    }
    return 0;
}

PyObject *mutation_slots(PyObject *self, PyObject *args) {
    PyObject *node_type, *node_names, *edge_type, *edge_names;
    if (!PyArg_ParseTuple(args, "OOOO", &node_type, &node_names, &edge_type, &edge_names))
        return NULL;
    node_put_type = edge_put_type = NULL; /* never half bound */
    if (slots_of(node_type, node_names, node_put_slots, 5) < 0 || slots_of(edge_type, edge_names, edge_put_slots, 6) < 0)
        return NULL;
    Py_INCREF(node_type);
    Py_INCREF(edge_type);
    node_put_type = (PyTypeObject *)node_type;
    edge_put_type = (PyTypeObject *)edge_type;
    Py_RETURN_NONE;
}

/* A `type` whose `n` slots get `values` (borrowed), as its __init__ would set them. */
static PyObject *made(PyTypeObject *type, PyObject **slots, PyObject **values, int n) {
    PyObject *obj = type->tp_alloc(type, 0);
    for (int i = 0; obj && i < n; i++)
        if (Py_TYPE(slots[i])->tp_descr_set(slots[i], obj, values[i]) < 0)
            Py_CLEAR(obj);
    return obj;
}

static int bump(PyObject *counts, PyObject *name, Py_ssize_t n) {
    PyObject *had = PyDict_GetItemWithError(counts, name);
    if (!had && PyErr_Occurred())
        return -1;
    PyObject *now = PyLong_FromLongLong(had ? PyLong_AsLongLong(had) + n : n);
    int rc = now ? PyDict_SetItem(counts, name, now) : -1;
    Py_XDECREF(now);
    return rc;
}

/* A run of one name's count (a label's, a type's: a file's lines mostly repeat the same), added to
 * its dict when another name comes or the loop ends. `name` is held: a scanned line's type may be
 * a str no mutation keeps (a wired commit makes none), freed before the run ends. */
typedef struct {
    PyObject *counts, *name;
    Py_ssize_t n;
} Tally;

static int tally_flush(Tally *t) {
    int rc = t->n ? bump(t->counts, t->name, t->n) : 0;
    t->n = 0;
    return rc;
}

static int tally(Tally *t, PyObject *name) { /* name: a plain (ASCII) name */
    if (t->n && (t->name == name || (PyUnicode_GET_LENGTH(t->name) == PyUnicode_GET_LENGTH(name) &&
                                     !memcmp(PyUnicode_DATA(t->name), PyUnicode_DATA(name),
                                             (size_t)PyUnicode_GET_LENGTH(name))))) {
        t->n++;
        return 0;
    }
    if (tally_flush(t) < 0)
        return -1;
    Py_INCREF(name);
    Py_XSETREF(t->name, name);
    t->n = 1;
    return 0;
}

/* The node a key names as the commit stands (*boxed: the id as the dict holds it, borrowed): -1 when
 * it names none or is not known yet. */
static long long key_node(PyObject *key_ids, PyObject *known, PyObject *key, PyObject **boxed) {
    PyObject *id = PyDict_GetItemWithError(key_ids, key);
    if (!id && !PyErr_Occurred())
        id = PyDict_GetItemWithError(known, key);
    if (!id || id == Py_None || !PyLong_CheckExact(id))
        return -1;
    *boxed = id;
    return PyLong_AsLongLong(id);
}

typedef struct {
    PyObject *node_runs, *edge_runs, *inv, *key_ids, *known, *mutations, *wires, *node_put, *edge_put, *labels, *types;
    PyObject *nruns[3], *eruns[3], *plane_id;
    Tally label_tally, type_tally;
    unsigned int plane;
    unsigned long long next_node, next_edge, new_nodes_from;
} Loop;

static Buf wire_buf; /* a call's wires are made here, one after another (the GIL is held) */

/* The NodePut of `values` (plane, id, key, labels, props; borrowed), new reference; None (new
 * reference) in a wired commit, which keeps its wire alone; NULL on an error. */
static PyObject *node_put(Loop *c, PyObject **values) {
    if (!c->mutations)
        return Py_NewRef(Py_None);
    if ((PyTypeObject *)c->node_put == node_put_type)
        return made(node_put_type, node_put_slots, values, 5);
    return PyObject_Vectorcall(c->node_put, values, 5, NULL);
}

/* The EdgePut of `values` (plane, NULL for the id: boxed here, src, dst, type, props), as node_put */
static PyObject *edge_put(Loop *c, PyObject **values) {
    if (!c->mutations)
        return Py_NewRef(Py_None);
    PyObject *id = PyLong_FromUnsignedLongLong(c->next_edge), *mutation = NULL;
    if (!id)
        return NULL;
    values[1] = id;
    if ((PyTypeObject *)c->edge_put == edge_put_type)
        mutation = made(edge_put_type, edge_put_slots, values, 6);
    else
        mutation = PyObject_Vectorcall(c->edge_put, values, 6, NULL);
    Py_DECREF(id);
    return mutation;
}

/* Append `mutation` (stolen; NULL: failed already; None in a wired commit, which keeps no objects)
 * to the commit's, once its entries are made (`made` 0); in a wired commit, its wire, msgpack [op,
 * plane, id, ...the record's fields], to wire_buf: the record just appended to `run` is msgpack
 * [...its fields], so the wire is a header and the record past its array byte. */
static int emit(Loop *c, PyObject *mutation, int made, PyObject *run, const char *op, unsigned long long id) {
    int rc = mutation && made == 0 && (!c->mutations || PyList_Append(c->mutations, mutation) == 0) ? 0 : -1;
    Py_XDECREF(mutation);
    if (rc < 0 || !c->wires)
        return rc;
    const char *record;
    Py_ssize_t n;
    Buf *b = &wire_buf;
    if (run_last_value(run, &record, &n) < 0 || put_byte(b, (unsigned char)(*record + 3)) < 0 ||
        pack_str(b, op, 8) < 0 || pack_uint(b, c->plane) < 0 || pack_uint(b, id) < 0 || put(b, record + 1, n - 1) < 0)
        return -1;
    return 0;
}

/* A new node's NodePut (or, wired, none), its entries and wire, its key given out (`key`: a str, or
 * NULL; `s`/`n` its ASCII bytes) and its labels tallied: both node paths' tail. 1, or -1 on an error.
 * `id` is c->next_node boxed; the next node's id follows. All arguments borrowed. */
static int put_node(Loop *c, PyObject *id, PyObject *key, const char *s, Py_ssize_t n, PyObject *label_list,
                    PyObject *map, PyObject *packed) {
    PyObject *values[5] = {c->plane_id, id, key ? key : Py_None, label_list, map};
    PyObject *mutation = node_put(c, values);
    if (!mutation ||
        emit(c, mutation,
             node_entries(c->nruns, c->plane, c->next_node, s, n, label_list, PyBytes_AS_STRING(c->inv),
                          PyBytes_AS_STRING(packed), PyBytes_GET_SIZE(packed)),
             c->nruns[0], "node.put", c->next_node) < 0 ||
        (key && PyDict_SetItem(c->key_ids, key, id) < 0))
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(label_list); i++)
        if (tally(&c->label_tally, PyList_GET_ITEM(label_list, i)) < 0)
            return -1;
    c->next_node++;
    return 1;
}

/* 1: taken; 0: left for the Python path; -1: an error */
static int take_node(Loop *c, PyObject *obj) {
    PyObject *labels = PyDict_GetItemWithError(obj, F_labels), *key = NULL, *props = NULL;
    if (!labels && PyErr_Occurred())
        return -1;
    if (!(key = PyDict_GetItemWithError(obj, F_key)) && PyErr_Occurred())
        return -1;
    if (!(props = PyDict_GetItemWithError(obj, F_props)) && PyErr_Occurred())
        return -1;
    if ((labels != NULL) + (key != NULL) + (props != NULL) != PyDict_GET_SIZE(obj))
        return 0; /* another field ("id", or one unknown) */
    if (labels) {
        if (!PyList_CheckExact(labels))
            return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(labels); i++) {
            PyObject *label = PyList_GET_ITEM(labels, i);
            if (!plain_name(label))
                return 0;
            if (i && strcmp(PyUnicode_DATA(PyList_GET_ITEM(labels, i - 1)), PyUnicode_DATA(label)) >= 0)
                return 0; /* not as a record keeps them: sorted without repeats */
        }
    }
    if (key == Py_None)
        key = NULL;
    if (key && (!plain_name(key) || PyDict_GetItemWithError(c->key_ids, key) || PyErr_Occurred()))
        return PyErr_Occurred() ? -1 : 0;
    if (key) {
        PyObject *found = PyDict_GetItemWithError(c->known, key);
        if (!found || found != Py_None)
            return PyErr_Occurred() ? -1 : 0; /* taken, or not looked up */
    }
    PyObject *map = NULL, *packed = pack_props(props, c->mutations ? &map : NULL);
    if (!packed || packed == Py_None) {
        Py_XDECREF(packed);
        return packed ? 0 : -1;
    }
    PyObject *label_list = labels ? (Py_INCREF(labels), labels) : PyList_New(0);
    PyObject *id = PyLong_FromUnsignedLongLong(c->next_node);
    int rc = label_list && id
                 ? put_node(c, id, key, key ? PyUnicode_DATA(key) : NULL, key ? PyUnicode_GET_LENGTH(key) : 0,
                            label_list, map, packed)
                 : -1;
    Py_XDECREF(label_list);
    Py_XDECREF(id);
    Py_DECREF(packed);
    Py_XDECREF(map);
    return rc;
}

/* A new edge's EdgePut (or, wired, none), its entries and wire, and its type tallied: both edge
 * paths' tail (`s`/`n`: the type's ASCII bytes). 1, or -1 on an error. All arguments borrowed. */
static int put_edge(Loop *c, long long src, long long dst, PyObject *src_id, PyObject *dst_id, PyObject *type,
                    const char *s, Py_ssize_t n, PyObject *map, PyObject *packed) {
    PyObject *values[6] = {c->plane_id, NULL, src_id, dst_id, type, map}, *mutation = edge_put(c, values);
    if (!mutation ||
        emit(c, mutation,
             edge_entries(c->eruns, c->plane, c->next_edge, (uint64_t)src, (uint64_t)dst, s, n,
                          PyBytes_AS_STRING(c->inv), PyBytes_AS_STRING(packed), PyBytes_GET_SIZE(packed)),
             c->eruns[0], "edge.put", c->next_edge) < 0 ||
        tally(&c->type_tally, type) < 0)
        return -1;
    c->next_edge++;
    return 1;
}

static int take_edge(Loop *c, PyObject *obj) {
    PyObject *type = PyDict_GetItemWithError(obj, F_type), *src_key, *dst_key, *props;
    if (!(src_key = PyDict_GetItemWithError(obj, F_src)) || !(dst_key = PyDict_GetItemWithError(obj, F_dst)))
        return PyErr_Occurred() ? -1 : 0;
    if (!(props = PyDict_GetItemWithError(obj, F_props)) && PyErr_Occurred())
        return -1;
    if (!type || 3 + (props != NULL) != PyDict_GET_SIZE(obj) || !plain_name(type) || !plain_name(src_key) ||
        !plain_name(dst_key))
        return 0;
    PyObject *src_id = NULL, *dst_id = NULL;
    long long src = key_node(c->key_ids, c->known, src_key, &src_id);
    long long dst = key_node(c->key_ids, c->known, dst_key, &dst_id);
    if (PyErr_Occurred())
        return -1;
    if (src < 0 || dst < 0)
        return 0;
    if ((unsigned long long)src < c->new_nodes_from && (unsigned long long)dst < c->new_nodes_from)
        return 0; /* both ends were there before: the line may restate an edge */
    PyObject *map = NULL, *packed = pack_props(props, c->mutations ? &map : NULL);
    if (!packed || packed == Py_None) {
        Py_XDECREF(packed);
        return packed ? 0 : -1;
    }
    int rc = put_edge(c, src, dst, src_id, dst_id, type, PyUnicode_DATA(type), PyUnicode_GET_LENGTH(type), map,
                      packed);
    Py_DECREF(packed);
    Py_XDECREF(map);
    return rc;
}

/* check_name's common case for a scanned name (ASCII without NUL already): 1-400 characters */
static int plain_span(Py_ssize_t n) { return n > 0 && n <= 400; }

/* A scanned line's properties as the dict msgspec would make of them (*map, new reference; NULL for
 * none or null: pack_props' own empty map). 1, 0 when a name is not plain or comes twice (the dict
 * path's: the last would count), -1 on an error. */
static int scanned_props(Scan *scan, const ScanLine *l, PyObject **map) {
    *map = NULL;
    if (!l->n_props)
        return 1;
    PyObject *props = PyDict_New();
    if (!props)
        return -1;
    for (uint32_t i = 0; i < l->n_props; i++) {
        const Tok *name = &scan->toks[l->props + 2 * i], *tok = name + 1;
        if (!plain_span(name->s.len)) {
            Py_DECREF(props);
            return 0;
        }
        const char *s = l->text + tok->s.off;
        PyObject *key = scan_name(scan, l->text + name->s.off, name->s.len), *value;
        switch (tok->kind) {
        case TOK_STR: value = ascii_str(s, tok->s.len); break;
        case TOK_INT: value = PyLong_FromLongLong(tok->v.i); break;
        case TOK_FLOAT: value = PyFloat_FromDouble(tok->v.d); break;
        case TOK_TRUE: value = Py_NewRef(Py_True); break;
        case TOK_FALSE: value = Py_NewRef(Py_False); break;
        default: value = Py_NewRef(Py_None);
        }
        int rc = key && value ? PyDict_SetItem(props, key, value) : -1;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (rc < 0) {
            Py_DECREF(props);
            return -1;
        }
    }
    if (PyDict_GET_SIZE(props) != (Py_ssize_t)l->n_props) {
        Py_DECREF(props);
        return 0;
    }
    *map = props;
    return 1;
}

/* What pack_props makes of scanned_props' dict, packed from the tokens (no dict, no values: a wired
 * commit keeps no mutation object): the same bytes, since with no name twice the dict holds the
 * tokens in their order. 1, 0 when pack_props would not take them, -1 on an error. */
static int packed_tokens(Scan *scan, const ScanLine *l, Buf *b) {
    const Tok *toks = scan->toks + l->props;
    Py_ssize_t n = l->n_props;
    b->len = 0;
    if (n >= 16 ? pack_be(b, 0xde, (uint64_t)n, 2) < 0 : put_byte(b, (unsigned char)(0x80 | n)) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Tok *name = &toks[2 * i], *tok = name + 1;
        const char *s = l->text + name->s.off;
        if (!plain_span(name->s.len))
            return 0;
        for (Py_ssize_t j = 0; j < i; j++) /* a name twice: the dict path's (the last would count) */
            if (toks[2 * j].s.len == name->s.len && !memcmp(l->text + toks[2 * j].s.off, s, name->s.len))
                return 0;
        int rc = pack_str(b, s, name->s.len);
        switch (tok->kind) {
        case TOK_STR: rc = rc < 0 ? -1 : pack_str(b, l->text + tok->s.off, tok->s.len); break;
        case TOK_INT: rc = rc < 0 ? -1 : pack_int(b, tok->v.i); break;
        case TOK_FLOAT: {
            uint64_t bits;
            memcpy(&bits, &tok->v.d, 8);
            rc = rc < 0 ? -1 : pack_be(b, 0xcb, bits, 8);
            break;
        }
        case TOK_TRUE: rc = rc < 0 ? -1 : put_byte(b, 0xc3); break;
        case TOK_FALSE: rc = rc < 0 ? -1 : put_byte(b, 0xc2); break;
        default: rc = rc < 0 ? -1 : put_byte(b, 0xc0);
        }
        if (rc < 0)
            return -1;
    }
    return 1;
}

static Buf props_buf; /* packed_tokens' (the GIL is held) */

/* pack_props of a scanned line's properties: packed bytes and *map (new references; map NULL: none
 * wanted), Py_None (new reference) when not plain, NULL on an error */
static PyObject *scanned_packed(Scan *scan, const ScanLine *l, PyObject **map) {
    if (!map && l->n_props <= 64) { /* (the names compared pairwise: a few) */
        int rc = packed_tokens(scan, l, &props_buf);
        return rc < 0 ? NULL : rc ? PyBytes_FromStringAndSize(props_buf.data, props_buf.len) : Py_NewRef(Py_None);
    }
    PyObject *props;
    int rc = scanned_props(scan, l, &props);
    if (rc <= 0) {
        if (map)
            *map = NULL;
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *packed = pack_props(props, map);
    Py_XDECREF(props);
    return packed;
}

/* take_node for a scanned line: its key and labels by their spans, its key's state in the scan */
static int take_scanned_node(Loop *c, Scan *scan, const ScanLine *l) {
    const Tok *labels = scan->toks + l->labels;
    for (uint32_t i = 0; i < l->n_labels; i++) {
        if (!plain_span(labels[i].s.len))
            return 0;
        if (i) { /* sorted without repeats, as a record keeps them */
            const Span a = labels[i - 1].s, b = labels[i].s;
            int cmp = memcmp(l->text + a.off, l->text + b.off, a.len < b.len ? a.len : b.len);
            if (cmp > 0 || (cmp == 0 && a.len >= b.len))
                return 0;
        }
    }
    Key *key = NULL;
    const Occ *occ = l->key >= 0 ? &scan->occ[l->key] : NULL;
    if (occ) {
        if (!scan->resolved || occ->key < 0 || !plain_span(occ->n))
            return 0;
        key = &scan->keys[occ->key];
        if (key->state != KEY_ABSENT)
            return 0; /* in the file, or made by this commit already */
    }
    PyObject *k = occ ? ascii_str(occ->s, occ->n) : Py_NewRef(Py_None);
    if (!k)
        return -1;
    if (occ) { /* given out by the Python path in this commit? */
        PyObject *had = PyDict_GetItemWithError(c->key_ids, k);
        if (had || PyErr_Occurred()) {
            Py_DECREF(k);
            return had ? 0 : -1;
        }
    }
    PyObject *map = NULL, *packed = scanned_packed(scan, l, c->mutations ? &map : NULL);
    if (!packed || packed == Py_None) {
        Py_DECREF(k);
        Py_XDECREF(packed);
        return packed ? 0 : -1;
    }
    PyObject *label_list = PyList_New(l->n_labels);
    for (uint32_t i = 0; label_list && i < l->n_labels; i++) {
        PyObject *label = scan_name(scan, l->text + labels[i].s.off, labels[i].s.len);
        if (!label)
            Py_CLEAR(label_list);
        else
            PyList_SET_ITEM(label_list, i, label);
    }
    PyObject *id = PyLong_FromUnsignedLongLong(c->next_node);
    unsigned long long given = c->next_node;
    int rc = label_list && id ? put_node(c, id, occ ? k : NULL, occ ? occ->s : NULL, occ ? occ->n : 0, label_list,
                                         map, packed)
                              : -1;
    if (rc > 0 && key)
        *key = (Key){key->s, key->n, KEY_GIVEN, given, Py_NewRef(id)};
    Py_XDECREF(label_list);
    Py_XDECREF(id);
    Py_DECREF(k);
    Py_DECREF(packed);
    Py_XDECREF(map);
    return rc;
}

/* A scanned end's node (*boxed: its id, borrowed from the scan), -1 when not known here */
static long long scanned_end(Scan *scan, int32_t at, PyObject **boxed) { /* boxed NULL: not wanted */
    const Occ *occ = &scan->occ[at];
    if (occ->key < 0 || !plain_span(occ->n))
        return -1;
    Key *key = &scan->keys[occ->key];
    if (key->state == KEY_ABSENT)
        return -1;
    if (!boxed)
        return (long long)key->id;
    if (!key->boxed && !(key->boxed = PyLong_FromUnsignedLongLong(key->id)))
        return -2;
    *boxed = key->boxed;
    return (long long)key->id;
}

/* take_edge for a scanned line: its ends by index into the scan's keys, no dict */
static int take_scanned_edge(Loop *c, Scan *scan, const ScanLine *l) {
    if (!scan->resolved || !plain_span(l->type.len))
        return 0;
    PyObject *src_id = NULL, *dst_id = NULL; /* (boxed only for a mutation object) */
    long long src = scanned_end(scan, l->src, c->mutations ? &src_id : NULL);
    long long dst = src == -2 ? -2 : scanned_end(scan, l->dst, c->mutations ? &dst_id : NULL);
    if (src == -2 || dst == -2)
        return -1;
    if (src < 0 || dst < 0)
        return 0;
    if ((unsigned long long)src < c->new_nodes_from && (unsigned long long)dst < c->new_nodes_from)
        return 0; /* both ends were there before: the line may restate an edge */
    PyObject *map = NULL, *packed = scanned_packed(scan, l, c->mutations ? &map : NULL);
    if (!packed || packed == Py_None) {
        Py_XDECREF(packed);
        return packed ? 0 : -1;
    }
    PyObject *type = scan_name(scan, l->text + l->type.off, l->type.len);
    int rc = type ? put_edge(c, src, dst, src_id, dst_id, type, l->text + l->type.off, l->type.len, map, packed)
                  : -1;
    Py_XDECREF(type);
    Py_DECREF(packed);
    Py_XDECREF(map);
    return rc;
}

PyObject *lines(PyObject *self, PyObject *args) {
    PyObject *parsed, *scan_obj = Py_None;
    Py_ssize_t start;
    Loop c;
    if (!PyArg_ParseTuple(args, "O!nO!O!IO!KKKO!O!OOOOO!O!|O", &PyList_Type, &parsed, &start, &PyTuple_Type,
                          &c.node_runs, &PyTuple_Type, &c.edge_runs, &c.plane, &PyBytes_Type, &c.inv, &c.next_node,
                          &c.next_edge, &c.new_nodes_from, &PyDict_Type, &c.key_ids, &PyDict_Type, &c.known,
                          &c.mutations, &c.wires, &c.node_put, &c.edge_put, &PyDict_Type,
                          &c.labels, &PyDict_Type, &c.types, &scan_obj) ||
        interned() < 0 || runs_of(c.node_runs, c.nruns) < 0 || runs_of(c.edge_runs, c.eruns) < 0)
        return NULL;
    if (PyBytes_GET_SIZE(c.inv) != 8) {
        PyErr_SetString(PyExc_ValueError, "inv must be 8 bytes");
        return NULL;
    }
    c.mutations = c.mutations == Py_None ? NULL : c.mutations; /* None: a wired commit, its wires alone */
    c.wires = c.wires == Py_None ? NULL : c.wires;
    if ((c.mutations && !PyList_CheckExact(c.mutations)) || (c.wires && !PyList_CheckExact(c.wires)) ||
        !c.mutations == !c.wires) {
        PyErr_SetString(PyExc_TypeError, "one of mutations and wires is a list, the other None");
        return NULL;
    }
    wire_buf.len = 0;
    if (!(c.plane_id = PyLong_FromUnsignedLong(c.plane)))
        return NULL;
    c.label_tally = (Tally){c.labels, NULL, 0};
    c.type_tally = (Tally){c.types, NULL, 0};
    Py_ssize_t i = start < 0 ? 0 : start;
    int rc = 1;
    Scan *scan = Py_IS_TYPE(scan_obj, &ScanType) ? (Scan *)scan_obj : NULL;
    for (; i < PyList_GET_SIZE(parsed); i++) {
        if (scan && i < scan->n && scan->lines[i].kind != LINE_OTHER) {
            const ScanLine *l = &scan->lines[i];
            rc = l->kind == LINE_EDGE ? take_scanned_edge(&c, scan, l) : take_scanned_node(&c, scan, l);
            if (rc <= 0)
                break;
            continue;
        }
        PyObject *obj = PyList_GET_ITEM(parsed, i);
        if (!PyDict_CheckExact(obj))
            break;
        int has_type = PyDict_Contains(obj, F_type);
        rc = has_type < 0 ? -1 : has_type ? take_edge(&c, obj) : take_node(&c, obj);
        if (rc <= 0)
            break;
    }
    Py_DECREF(c.plane_id);
    if (rc >= 0 && (tally_flush(&c.label_tally) < 0 || tally_flush(&c.type_tally) < 0))
        rc = -1;
    if (rc >= 0 && c.wires && wire_buf.len) { /* the wires of every line taken, as one */
        PyObject *wires = PyBytes_FromStringAndSize(wire_buf.data, wire_buf.len);
        if (!wires || PyList_Append(c.wires, wires) < 0)
            rc = -1;
        Py_XDECREF(wires);
    }
    Py_XDECREF(c.label_tally.name);
    Py_XDECREF(c.type_tally.name);
    if (rc < 0)
        return NULL;
    return Py_BuildValue("(nKK)", i, c.next_node, c.next_edge);
}
