/* A node's neighbourhood read in one call on LMDB's own C API (drsg.store.native, Snapshot.neighbors).
 *
 * Why C: a 1-hop read seeks the adjacency and then each edge's record; in Python every step is a
 * py-lmdb call, a slice and a comparison (51 % of a 1-hop's time in the loop itself). Here the same
 * walk runs on the very LMDB code py-lmdb runs, on py-lmdb's own read transaction: the MDB_txn and
 * the MDB_dbi are taken out of py-lmdb's Transaction and _Database objects (their layouts are
 * py-lmdb 1.8.1's, lmdb/cpython.c built without HAVE_MEMSINK), and LMDB's functions are found in
 * py-lmdb's extension with dlopen(RTLD_NOLOAD) + dlsym. drsg.store.native checks the layout on a
 * real transaction before the first use and else keeps to the Python walk, the reference.
 *
 * bind(path, Transaction, _Database, Error)   find the functions; the types the objects must have
 * probe(txn, db) -> (txn id, dbi flags, DbObject flags, entries, depth, read-only)   for the guard
 * records(Edge, Neighbor, Node, their field names ×3, finish, finish_node)   what a read returns,
 *     and how a record this file does not decode is made: finish(plane, edge id, other, direction,
 *     record) -> Neighbor, finish_node(plane, node id, record) -> Node
 * neighbors(txn, ((db, "out"|"in"), ...), edges_db, prefix, plane_group, inv_at, plane)
 *     -> [Neighbor, ...] in the Python walk's order, or None: not a read-only transaction of this
 *        layout (a write sees its own writes as it walks: the Python path's)
 * node_by_key(txn, keys_db, nodes_db, key_group, plane_group, inv_at, plane) -> Node, None when no
 *     node has the key at `at`, False when the Python path must answer (as neighbors' None)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

/* ---- LMDB's C API (lmdb.h, LMDB 0.9): only what the walk uses */
typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef struct {
    size_t mv_size;
    void *mv_data;
} MDB_val;
typedef struct {
    unsigned int ms_psize, ms_depth;
    size_t ms_branch_pages, ms_leaf_pages, ms_overflow_pages, ms_entries;
} MDB_stat;
enum { MDB_GET_CURRENT = 4, MDB_NEXT = 8, MDB_SET_RANGE = 17 };
#define MDB_NOTFOUND (-30798)

static int (*lm_cursor_open)(MDB_txn *, MDB_dbi, MDB_cursor **);
static void (*lm_cursor_close)(MDB_cursor *);
static int (*lm_cursor_get)(MDB_cursor *, MDB_val *, MDB_val *, int);
static size_t (*lm_txn_id)(MDB_txn *);
static int (*lm_dbi_flags)(MDB_txn *, MDB_dbi, unsigned int *);
static int (*lm_stat)(MDB_txn *, MDB_dbi, MDB_stat *);
static char *(*lm_strerror)(int);

/* ---- py-lmdb 1.8.1's objects (lmdb/cpython.c: LmdbObject_HEAD, struct DbObject, struct TransObject) */
struct list_head {
    void *prev, *next;
};
#define LMDB_OBJECT_HEAD \
    PyObject_HEAD struct list_head siblings; \
    struct list_head children; \
    int valid;
typedef struct {
    LMDB_OBJECT_HEAD
    void *env;
    MDB_dbi dbi;
    unsigned int flags;
} DbObject;
typedef struct {
    LMDB_OBJECT_HEAD
    PyObject *weaklist;
    void *env;
    MDB_txn *txn;
    int flags;
    void *db;
    int mutations;
} TransObject;
enum { TRANS_RDONLY = 2, TRANS_SPARE = 4 };

static PyTypeObject *trans_type, *db_type;
static PyObject *lmdb_error;

/* The records a walk returns (drsg.store.records: slots dataclasses, no __post_init__, checked by
 * store/native.py), made as their __init__ would make them: allocated, then each slot set through
 * its member descriptor. `finish` is the Python path's own decoding, for a record this file does
 * not decode (an extension type, a shape other than [src, dst, type, props], damage): it makes the
 * Neighbor, or raises what the Python walk raises. */
#define EDGE_FIELDS 6 /* plane, id, src, dst, type, props */
#define NEIGHBOR_FIELDS 3 /* edge, node, direction */
#define NODE_FIELDS 5 /* plane, id, key, labels, props */
#define ALL_FIELDS (EDGE_FIELDS + NEIGHBOR_FIELDS + NODE_FIELDS)
static PyTypeObject *edge_type, *neighbor_type, *node_type;
static PyObject *slots[ALL_FIELDS], *finish, *finish_node;
#define edge_slots (slots)
#define neighbor_slots (slots + EDGE_FIELDS)
#define node_slots (slots + EDGE_FIELDS + NEIGHBOR_FIELDS)

#define SEQ 8
#define MAX_KEY 512 /* LMDB's default largest key is 511 bytes */

static PyObject *bind(PyObject *self, PyObject *args) {
    const char *path;
    PyObject *trans, *db, *error;
    if (!PyArg_ParseTuple(args, "sO!O!O", &path, &PyType_Type, &trans, &PyType_Type, &db, &error)) return NULL;
    void *lib = dlopen(path, RTLD_NOLOAD | RTLD_NOW);
    if (!lib) {
        PyErr_Format(PyExc_ImportError, "%s is not loaded", path);
        return NULL;
    }
    struct {
        const char *name;
        void **fn;
    } wanted[] = {
        {"mdb_cursor_open", (void **)&lm_cursor_open}, {"mdb_cursor_close", (void **)&lm_cursor_close},
        {"mdb_cursor_get", (void **)&lm_cursor_get},   {"mdb_txn_id", (void **)&lm_txn_id},
        {"mdb_dbi_flags", (void **)&lm_dbi_flags},     {"mdb_stat", (void **)&lm_stat},
        {"mdb_strerror", (void **)&lm_strerror},
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        *wanted[i].fn = dlsym(lib, wanted[i].name);
        if (!*wanted[i].fn) {
            lm_cursor_open = NULL; /* never half bound */
            PyErr_Format(PyExc_ImportError, "%s does not export %s", path, wanted[i].name);
            dlclose(lib);
            return NULL;
        }
    }
    dlclose(lib); /* RTLD_NOLOAD took a reference of its own; py-lmdb's import keeps the library */
    Py_INCREF(trans);
    Py_INCREF(db);
    Py_INCREF(error);
    Py_XSETREF(trans_type, (PyTypeObject *)trans);
    Py_XSETREF(db_type, (PyTypeObject *)db);
    Py_XSETREF(lmdb_error, error);
    Py_RETURN_NONE;
}

static MDB_txn *txn_of(PyObject *obj, int read_only) {
    if (!lm_cursor_open || Py_TYPE(obj) != trans_type) return NULL;
    TransObject *t = (TransObject *)obj;
    if (!t->valid || !t->txn || (t->flags & TRANS_SPARE)) return NULL;
    if (read_only && !(t->flags & TRANS_RDONLY)) return NULL;
    return t->txn;
}

static int dbi_of(PyObject *obj, MDB_dbi *dbi) {
    if (Py_TYPE(obj) != db_type || !((DbObject *)obj)->valid) return 0;
    *dbi = ((DbObject *)obj)->dbi;
    return 1;
}

static PyObject *lmdb_failed(const char *what, int rc) {
    PyErr_Format(lmdb_error, "%s: %s", what, lm_strerror(rc));
    return NULL;
}

static PyObject *records(PyObject *self, PyObject *args) {
    PyObject *types[3], *names[3], *done, *done_node;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!OO", &PyType_Type, &types[0], &PyType_Type, &types[1], &PyType_Type,
                          &types[2], &PyTuple_Type, &names[0], &PyTuple_Type, &names[1], &PyTuple_Type, &names[2],
                          &done, &done_node))
        return NULL;
    const Py_ssize_t counts[3] = {EDGE_FIELDS, NEIGHBOR_FIELDS, NODE_FIELDS};
    PyObject *found[ALL_FIELDS];
    int n = 0;
    for (int t = 0; t < 3; t++) {
        if (PyTuple_GET_SIZE(names[t]) != counts[t]) {
            PyErr_SetString(PyExc_ValueError, "records() takes Edge's 6, Neighbor's 3 and Node's 5 field names");
            goto failed;
        }
        for (Py_ssize_t i = 0; i < counts[t]; i++, n++) {
            found[n] = PyObject_GetAttr(types[t], PyTuple_GET_ITEM(names[t], i));
            if (found[n] && Py_TYPE(found[n]) != &PyMemberDescr_Type) {
                PyErr_Format(PyExc_TypeError, "%R is not a slot of %R", PyTuple_GET_ITEM(names[t], i), types[t]);
                Py_CLEAR(found[n]);
            }
            if (!found[n]) goto failed;
        }
    }
    for (int i = 0; i < ALL_FIELDS; i++) Py_XSETREF(slots[i], found[i]);
    Py_XSETREF(edge_type, (PyTypeObject *)Py_NewRef(types[0]));
    Py_XSETREF(neighbor_type, (PyTypeObject *)Py_NewRef(types[1]));
    Py_XSETREF(node_type, (PyTypeObject *)Py_NewRef(types[2]));
    Py_XSETREF(finish, Py_NewRef(done));
    Py_XSETREF(finish_node, Py_NewRef(done_node));
    Py_RETURN_NONE;
failed:
    for (int j = 0; j < n; j++) Py_DECREF(found[j]);
    return NULL;
}

/* ---- msgpack, as msgpack.unpackb(raw=False, strict_map_key=False) reads it, for the types records
 * hold without an extension type. NULL (any Python error cleared by the caller): not decoded here. */
#define MAX_DEPTH 32

static int need(const unsigned char *p, const unsigned char *end, size_t n) { return (size_t)(end - p) >= n; }

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static PyObject *decode(const unsigned char **at, const unsigned char *end, int depth);

static PyObject *decode_items(const unsigned char **at, const unsigned char *end, int depth, uint64_t n, int map) {
    if (depth >= MAX_DEPTH || n > (uint64_t)(end - *at)) return NULL; /* each item takes a byte at least */
    if (!map) {
        PyObject *list = PyList_New((Py_ssize_t)n);
        if (!list) return NULL;
        for (uint64_t i = 0; i < n; i++) {
            PyObject *item = decode(at, end, depth + 1);
            if (!item) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
        return list;
    }
    PyObject *dict = PyDict_New();
    if (!dict) return NULL;
    for (uint64_t i = 0; i < n; i++) {
        PyObject *key = decode(at, end, depth + 1);
        PyObject *value = key ? decode(at, end, depth + 1) : NULL;
        int failed = !value || PyDict_SetItem(dict, key, value) < 0;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            Py_DECREF(dict);
            return NULL;
        }
    }
    return dict;
}

static PyObject *decode(const unsigned char **at, const unsigned char *end, int depth) {
    const unsigned char *p = *at;
    if (!need(p, end, 1)) return NULL;
    unsigned char c = *p++;
    uint64_t n;
    int width;
    if (c <= 0x7f) {
        *at = p;
        return PyLong_FromLong(c);
    }
    if (c >= 0xe0) {
        *at = p;
        return PyLong_FromLong((signed char)c);
    }
    if (c >= 0x80 && c <= 0x8f) {
        *at = p;
        return decode_items(at, end, depth, c & 0x0f, 1);
    }
    if (c >= 0x90 && c <= 0x9f) {
        *at = p;
        return decode_items(at, end, depth, c & 0x0f, 0);
    }
    if (c >= 0xa0 && c <= 0xbf) {
        n = c & 0x1f;
        goto str;
    }
    switch (c) {
    case 0xc0: *at = p; Py_RETURN_NONE;
    case 0xc2: *at = p; Py_RETURN_FALSE;
    case 0xc3: *at = p; Py_RETURN_TRUE;
    case 0xc4: case 0xc5: case 0xc6: /* bin 8/16/32 */
        width = 1 << (c - 0xc4);
        if (!need(p, end, width)) return NULL;
        n = be(p, width);
        p += width;
        if (!need(p, end, n)) return NULL;
        *at = p + n;
        return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    case 0xca: { /* float 32 */
        if (!need(p, end, 4)) return NULL;
        uint32_t bits = (uint32_t)be(p, 4);
        float f;
        memcpy(&f, &bits, 4);
        *at = p + 4;
        return PyFloat_FromDouble((double)f);
    }
    case 0xcb: { /* float 64 */
        if (!need(p, end, 8)) return NULL;
        uint64_t bits = be(p, 8);
        double d;
        memcpy(&d, &bits, 8);
        *at = p + 8;
        return PyFloat_FromDouble(d);
    }
    case 0xcc: case 0xcd: case 0xce: case 0xcf: /* uint 8/16/32/64 */
        width = 1 << (c - 0xcc);
        if (!need(p, end, width)) return NULL;
        *at = p + width;
        return PyLong_FromUnsignedLongLong(be(p, width));
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: { /* int 8/16/32/64 */
        width = 1 << (c - 0xd0);
        if (!need(p, end, width)) return NULL;
        uint64_t u = be(p, width);
        int shift = 64 - 8 * width; /* sign-extend from `width` bytes */
        *at = p + width;
        return PyLong_FromLongLong(shift ? (long long)(u << shift) >> shift : (long long)u);
    }
    case 0xd9: case 0xda: case 0xdb: /* str 8/16/32 */
        width = 1 << (c - 0xd9);
        if (!need(p, end, width)) return NULL;
        n = be(p, width);
        p += width;
        goto str;
    case 0xdc: case 0xdd: case 0xde: case 0xdf: /* array 16/32, map 16/32 */
        width = c == 0xdc || c == 0xde ? 2 : 4;
        if (!need(p, end, width)) return NULL;
        *at = p + width;
        return decode_items(at, end, depth, be(p, width), c >= 0xde);
    default: /* extension types (vectors, described values) and 0xc1: the Python path's */
        return NULL;
    }
str:
    if (!need(p, end, n)) return NULL;
    *at = p + n;
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
}

/* A slots object made as its dataclass __init__ makes it: each field set in order. Steals `values`. */
static PyObject *make(PyTypeObject *type, PyObject **members, PyObject **values, int count) {
    PyObject *obj = type->tp_alloc(type, 0);
    for (int i = 0; i < count; i++) {
        if (obj && Py_TYPE(members[i])->tp_descr_set(members[i], obj, values[i]) < 0) Py_CLEAR(obj);
        Py_DECREF(values[i]);
    }
    return obj;
}

/* The Neighbor of one edge record: decoded here when it is [src, dst, type, props] in the types
 * above, else by `finish` (the Python path's decoding, or its error). */
static PyObject *neighbor_of(PyObject *plane, uint64_t edge_id, uint64_t other, PyObject *direction,
                             const unsigned char *record, size_t size) {
    const unsigned char *p = record, *end = record + size;
    PyObject *fields = NULL;
    if (size && *p == 0x94) { /* fixarray of 4 */
        p++;
        fields = decode_items(&p, end, 0, 4, 0);
        if (fields && p != end) Py_CLEAR(fields); /* trailing bytes: unpackb's ExtraData */
    }
    PyObject *id = PyLong_FromUnsignedLongLong(edge_id), *node = PyLong_FromUnsignedLongLong(other);
    if (!id || !node) {
        Py_XDECREF(fields);
        Py_XDECREF(id);
        Py_XDECREF(node);
        return NULL;
    }
    if (!fields) {
        PyErr_Clear();
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)record, (Py_ssize_t)size);
        PyObject *made = bytes ? PyObject_CallFunctionObjArgs(finish, plane, id, node, direction, bytes, NULL) : NULL;
        Py_XDECREF(bytes);
        Py_DECREF(id);
        Py_DECREF(node);
        return made;
    }
    PyObject *edge_values[EDGE_FIELDS] = {Py_NewRef(plane), id, NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) edge_values[2 + i] = Py_NewRef(PyList_GET_ITEM(fields, i));
    Py_DECREF(fields);
    PyObject *edge = make(edge_type, edge_slots, edge_values, EDGE_FIELDS);
    if (!edge) {
        Py_DECREF(node);
        return NULL;
    }
    PyObject *neighbor_values[NEIGHBOR_FIELDS] = {edge, node, Py_NewRef(direction)};
    return make(neighbor_type, neighbor_slots, neighbor_values, NEIGHBOR_FIELDS);
}

/* The Node of one node record: decoded here when it is [key, labels, props] in the types above,
 * else by `finish_node` (the Python path's node_of, or its error). */
static PyObject *node_of(PyObject *plane, uint64_t node_id, const unsigned char *record, size_t size) {
    const unsigned char *p = record, *end = record + size;
    PyObject *fields = NULL;
    if (size && *p == 0x93) { /* fixarray of 3 */
        p++;
        fields = decode_items(&p, end, 0, 3, 0);
        if (fields && p != end) Py_CLEAR(fields);
    }
    PyObject *id = PyLong_FromUnsignedLongLong(node_id);
    if (!id) {
        Py_XDECREF(fields);
        return NULL;
    }
    if (!fields) {
        PyErr_Clear();
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)record, (Py_ssize_t)size);
        PyObject *made = bytes ? PyObject_CallFunctionObjArgs(finish_node, plane, id, bytes, NULL) : NULL;
        Py_XDECREF(bytes);
        Py_DECREF(id);
        return made;
    }
    PyObject *values[NODE_FIELDS] = {Py_NewRef(plane), id, NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) values[2 + i] = Py_NewRef(PyList_GET_ITEM(fields, i));
    Py_DECREF(fields);
    return make(node_type, node_slots, values, NODE_FIELDS);
}

static PyObject *probe(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *db_obj;
    if (!PyArg_ParseTuple(args, "OO", &txn_obj, &db_obj)) return NULL;
    MDB_txn *txn = txn_of(txn_obj, 0);
    MDB_dbi dbi;
    if (!txn || !dbi_of(db_obj, &dbi)) {
        PyErr_SetString(PyExc_TypeError, "probe() takes a live py-lmdb Transaction and _Database, after bind()");
        return NULL;
    }
    unsigned int flags;
    MDB_stat st;
    int rc = lm_dbi_flags(txn, dbi, &flags);
    if (rc) return lmdb_failed("mdb_dbi_flags", rc);
    if ((rc = lm_stat(txn, dbi, &st))) return lmdb_failed("mdb_stat", rc);
    return Py_BuildValue("(nIInIO)", (Py_ssize_t)lm_txn_id(txn), flags, ((DbObject *)db_obj)->flags,
                         (Py_ssize_t)st.ms_entries, st.ms_depth, txn_of(txn_obj, 1) ? Py_True : Py_False);
}

static uint64_t u64_at(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* One adjacency table's walk: the Python path's loop (Snapshot.neighbors), step for step. Returns
 * 0 done, -1 a Python error set, 1 a key the reference must judge (fall back). */
static int walk(MDB_txn *txn, MDB_dbi adj, MDB_cursor *edges, PyObject *plane, PyObject *direction,
                const Py_buffer *prefix, const unsigned char *plane_group, const unsigned char *inv_at, PyObject *out) {
    MDB_cursor *cur;
    int rc = lm_cursor_open(txn, adj, &cur);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        return -1;
    }
    unsigned char decided[MAX_KEY];
    size_t decided_len = (size_t)-1; /* none yet */
    int result = 0;
    MDB_val key = {(size_t)prefix->len, prefix->buf}, other;
    for (rc = lm_cursor_get(cur, &key, &other, MDB_SET_RANGE); rc == 0; rc = lm_cursor_get(cur, &key, &other, MDB_NEXT)) {
        const unsigned char *k = key.mv_data;
        if (key.mv_size < (size_t)prefix->len || memcmp(k, prefix->buf, prefix->len) != 0) break;
        if (key.mv_size < 2 * SEQ || key.mv_size > MAX_KEY) {
            result = 1;
            break;
        }
        size_t group_len = key.mv_size - SEQ;
        if (group_len == decided_len && memcmp(k, decided, group_len) == 0) continue;
        if (memcmp(k + group_len, inv_at, SEQ) < 0) continue; /* a version newer than `at` */
        memcpy(decided, k, group_len);
        decided_len = group_len;
        if (other.mv_size == 0) continue; /* deleted at `at` */
        if (other.mv_size < 8) {
            result = 1;
            break;
        }
        /* the edge's record in force at `at`: plane + the adjacency key's last 8 group bytes (the edge id) */
        unsigned char sought[4 + 8 + SEQ];
        memcpy(sought, plane_group, 4);
        memcpy(sought + 4, k + group_len - 8, 8);
        memcpy(sought + 12, inv_at, SEQ);
        MDB_val edge_key = {sizeof(sought), sought}, record;
        int found = lm_cursor_get(edges, &edge_key, &record, MDB_SET_RANGE);
        if (found == MDB_NOTFOUND) continue;
        if (found) {
            lmdb_failed("mdb_cursor_get", found);
            result = -1;
            break;
        }
        if (record.mv_size == 0 || edge_key.mv_size != sizeof(sought) || memcmp(edge_key.mv_data, sought, 12) != 0)
            continue;
        PyObject *row = neighbor_of(plane, u64_at(sought + 4), u64_at(other.mv_data), direction, record.mv_data,
                                    record.mv_size);
        if (!row || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            result = -1;
            break;
        }
        Py_DECREF(row);
    }
    if (result == 0 && rc != 0 && rc != MDB_NOTFOUND) {
        lmdb_failed("mdb_cursor_get", rc);
        result = -1;
    }
    lm_cursor_close(cur);
    return result;
}

static int fixed(const Py_buffer *view, Py_ssize_t len, const char *what) {
    if (view->len != len) {
        PyErr_Format(PyExc_ValueError, "%s must be %zd bytes", what, len);
        return 0;
    }
    return 1;
}

static PyObject *neighbors(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *tables, *edges_obj, *plane;
    Py_buffer prefix, plane_group, inv_at;
    if (!PyArg_ParseTuple(args, "OO!Oy*y*y*O!", &txn_obj, &PyTuple_Type, &tables, &edges_obj, &prefix, &plane_group,
                          &inv_at, &PyLong_Type, &plane))
        return NULL;
    PyObject *out = NULL;
    MDB_cursor *edges = NULL;
    MDB_txn *txn = txn_of(txn_obj, 1);
    MDB_dbi edges_dbi;
    if (!fixed(&plane_group, 4, "plane_group") || !fixed(&inv_at, SEQ, "inv_at")) goto done;
    if (!txn || !finish || !dbi_of(edges_obj, &edges_dbi)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    int rc = lm_cursor_open(txn, edges_dbi, &edges);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        goto done;
    }
    if (!(out = PyList_New(0))) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tables); i++) {
        PyObject *table = PyTuple_GET_ITEM(tables, i);
        MDB_dbi adj;
        if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 2 || !dbi_of(PyTuple_GET_ITEM(table, 0), &adj)) {
            Py_SETREF(out, Py_NewRef(Py_None));
            break;
        }
        int r = walk(txn, adj, edges, plane, PyTuple_GET_ITEM(table, 1), &prefix, plane_group.buf, inv_at.buf, out);
        if (r < 0) {
            Py_CLEAR(out);
            break;
        }
        if (r > 0) {
            Py_SETREF(out, Py_NewRef(Py_None));
            break;
        }
    }
done:
    if (edges) lm_cursor_close(edges);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&plane_group);
    PyBuffer_Release(&inv_at);
    return out;
}

/* The key index's version in force at `at` (group + inv_at), then the node's record at `at`. */
static PyObject *node_by_key(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *keys_obj, *nodes_obj, *plane;
    Py_buffer group, plane_group, inv_at;
    if (!PyArg_ParseTuple(args, "OOOy*y*y*O!", &txn_obj, &keys_obj, &nodes_obj, &group, &plane_group, &inv_at,
                          &PyLong_Type, &plane))
        return NULL;
    PyObject *out = NULL;
    MDB_cursor *cur = NULL;
    MDB_txn *txn = txn_of(txn_obj, 1);
    MDB_dbi keys_dbi, nodes_dbi;
    unsigned char sought[MAX_KEY];
    if (!fixed(&plane_group, 4, "plane_group") || !fixed(&inv_at, SEQ, "inv_at")) goto done;
    if (!txn || !finish_node || !dbi_of(keys_obj, &keys_dbi) || !dbi_of(nodes_obj, &nodes_dbi) ||
        group.len + SEQ > MAX_KEY - 1) {
        out = Py_NewRef(Py_False); /* the reference's to answer */
        goto done;
    }
    int rc = lm_cursor_open(txn, keys_dbi, &cur);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        goto done;
    }
    memcpy(sought, group.buf, group.len);
    memcpy(sought + group.len, inv_at.buf, SEQ);
    MDB_val key = {(size_t)group.len + SEQ, sought}, value;
    rc = lm_cursor_get(cur, &key, &value, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND || (rc == 0 && (value.mv_size == 0 || key.mv_size != (size_t)group.len + SEQ ||
                                           memcmp(key.mv_data, group.buf, group.len) != 0))) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (rc) {
        lmdb_failed("mdb_cursor_get", rc);
        goto done;
    }
    if (value.mv_size < 8) {
        out = Py_NewRef(Py_False);
        goto done;
    }
    uint64_t node_id = u64_at(value.mv_data);
    lm_cursor_close(cur);
    cur = NULL;
    if ((rc = lm_cursor_open(txn, nodes_dbi, &cur))) {
        lmdb_failed("mdb_cursor_open", rc);
        goto done;
    }
    unsigned char at[4 + 8 + SEQ];
    memcpy(at, plane_group.buf, 4);
    memcpy(at + 4, value.mv_data, 8);
    memcpy(at + 12, inv_at.buf, SEQ);
    MDB_val node_key = {sizeof(at), at}, record;
    rc = lm_cursor_get(cur, &node_key, &record, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND || (rc == 0 && (record.mv_size == 0 || node_key.mv_size != sizeof(at) ||
                                           memcmp(node_key.mv_data, at, 12) != 0))) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (rc) {
        lmdb_failed("mdb_cursor_get", rc);
        goto done;
    }
    out = node_of(plane, node_id, record.mv_data, record.mv_size);
done:
    if (cur) lm_cursor_close(cur);
    PyBuffer_Release(&group);
    PyBuffer_Release(&plane_group);
    PyBuffer_Release(&inv_at);
    return out;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "Find LMDB's functions in py-lmdb's loaded extension; the types to accept."},
    {"records", records, METH_VARARGS, "The Edge and Neighbor types, their field names, and the Python decoding."},
    {"probe", probe, METH_VARARGS, "What the layout guard compares with py-lmdb's own answers."},
    {"neighbors", neighbors, METH_VARARGS, "A node's adjacency walk with each edge's record, at one seq."},
    {"node_by_key", node_by_key, METH_VARARGS, "The node a key names at one seq, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_walk", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
