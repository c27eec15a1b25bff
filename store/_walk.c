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
 * probe(txn, db, txn.id()) -> (txn id, dbi flags, DbObject flags, entries, depth, read-only)   for
 *     the guard; only the id when it is not the one expected (no other call on a misread MDB_txn)
 * records(Edge, Neighbor, Node, their field names ×3, finish, finish_node)   what a read returns,
 *     and how a record store/_records.c does not decode is made: finish(plane, edge id, other, direction,
 *     record) -> Neighbor, finish_node(plane, node id, record) -> Node
 * neighbors(txn, ((db, "out"|"in"), ...), edges_db, prefix, plane_group, inv_at, plane, table, key,
 *           limit) -> ([Neighbor, ...], table, key): at most `limit` rows in the Python walk's order
 *     from (table, key) on (0, b"": the start), and where the next call goes on (table ==
 *     len(tables): done): a hub's edges are made a batch at a time, as a caller iterates. None: not
 *     a read-only transaction of this layout (a write sees its own writes as it walks), or a key
 *     the Python path must judge
 * ends(txn, tables, prefix, inv_at, table, key, limit) -> ([other node id, ...], table, key) or None,
 *     as neighbors but from the adjacency alone (Snapshot.neighbor_ids)
 * node_by_key(txn, keys_db, nodes_db, plane, key, inv_at) -> Node, None when no node has the key at
 *     `at`, False when the Python path must answer (as neighbors' None); a write transaction's too
 *     (one seek each, on a cursor of its own)
 * node_id_by_key(txn, keys_db, plane, key, inv_at) -> the node's id, None or False, as node_by_key
 * has_version(txn, db, group, inv_at) -> whether group has a value at `at`, None when the Python path
 *     must answer (Snapshot.has_plane, has_node)
 * nodes_at(txn, nodes_db, plane_group, inv_at, plane, [node id, ...]) -> [Node | None, ...], None
 *     when the Python path must answer (Snapshot.nodes_at: a search's hits, an index build's nodes)
 * key_ids(txn, keys_db, inv_at, [key_group, ...]) -> [node id | None, ...], False when the Python path
 *     must answer; one cursor, a write transaction's too (an import's keys, store/bulkwrite.py)
 * vectors(Vector, "data", code)   records' vectors decoded in C (store/_records.c), as values._ext_hook
 * lmdb_api() -> capsule   LMDB's functions as bound, for store/_bulkrun.c's writes (store/_lmdb.h)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "_lmdb.h"
#include "_walk.h"

/* ---- LMDB's C API (lmdb.h, LMDB 0.9): only what the walk uses, beside store/_lmdb.h's */
typedef struct {
    unsigned int ms_psize, ms_depth;
    size_t ms_branch_pages, ms_leaf_pages, ms_overflow_pages, ms_entries;
} MDB_stat;

static int (*lm_cursor_open)(MDB_txn *, MDB_dbi, MDB_cursor **);
static void (*lm_cursor_close)(MDB_cursor *);
static int (*lm_cursor_get)(MDB_cursor *, MDB_val *, MDB_val *, int);
static int (*lm_cursor_put)(MDB_cursor *, MDB_val *, MDB_val *, unsigned int);
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
        {"mdb_strerror", (void **)&lm_strerror},       {"mdb_cursor_put", (void **)&lm_cursor_put},
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

static void wrote(PyObject *obj) { ((TransObject *)obj)->mutations++; }
static int key_id(MDB_cursor *cur, const char *group, size_t len, const char *inv_at, uint64_t *id, int *err);

/* lmdb_api() -> a capsule of store/_lmdb.h's LmdbApi: LMDB bound here, for another extension. */
static PyObject *lmdb_api(PyObject *self, PyObject *unused) {
    static LmdbApi api;
    if (!lm_cursor_open) {
        PyErr_SetString(PyExc_RuntimeError, "lmdb_api() before bind()");
        return NULL;
    }
    api = (LmdbApi){txn_of,        dbi_of,        wrote,         lm_cursor_open, lm_cursor_close,
                    lm_cursor_get, lm_cursor_put, lm_strerror, key_id};
    return PyCapsule_New(&api, LMDB_API_NAME, NULL);
}

static PyObject *lmdb_failed(const char *what, int rc) {
    PyErr_Format(lmdb_error, "%s: %s", what, lm_strerror(rc));
    return NULL;
}


static PyObject *probe(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *db_obj;
    Py_ssize_t expected;
    if (!PyArg_ParseTuple(args, "OOn", &txn_obj, &db_obj, &expected)) return NULL;
    MDB_txn *txn = txn_of(txn_obj, 0);
    MDB_dbi dbi;
    if (!txn || !dbi_of(db_obj, &dbi)) {
        PyErr_SetString(PyExc_TypeError, "probe() takes a live py-lmdb Transaction and _Database, after bind()");
        return NULL;
    }
    size_t id = lm_txn_id(txn); /* the one read of what may not be an MDB_txn: nothing more if it is not */
    if (id != (size_t)expected) return Py_BuildValue("(nIInIO)", (Py_ssize_t)id, 0u, 0u, (Py_ssize_t)0, 0u, Py_False);
    unsigned int flags;
    MDB_stat st;
    int rc = lm_dbi_flags(txn, dbi, &flags);
    if (rc) return lmdb_failed("mdb_dbi_flags", rc);
    if ((rc = lm_stat(txn, dbi, &st))) return lmdb_failed("mdb_stat", rc);
    return Py_BuildValue("(nIInIO)", (Py_ssize_t)id, flags, ((DbObject *)db_obj)->flags,
                         (Py_ssize_t)st.ms_entries, st.ms_depth, txn_of(txn_obj, 1) ? Py_True : Py_False);
}

/* Where a walk stopped: the table, and the key to seek there next (empty: the table's start). */
typedef struct {
    Py_ssize_t table;
    size_t len;
    unsigned char key[MAX_KEY];
} Resume;

/* One adjacency table's walk: the Python path's loop (Snapshot.neighbors), step for step, from
 * `resume` on, until `out` holds `limit` rows. Returns 0 the table is done, 2 stopped at the limit
 * (`resume` says where to go on), -1 a Python error set, 1 a key the reference must judge (fall back). */
static int walk(MDB_txn *txn, MDB_dbi adj, MDB_cursor *edges, PyObject *plane, PyObject *direction,
                const Py_buffer *prefix, const unsigned char *plane_group, const unsigned char *inv_at, PyObject *out,
                Py_ssize_t limit, Resume *resume) {
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
    if (resume->len) { /* past every version of the last group a call decided (keys.SEQ_WIDTH of 0xff) */
        key.mv_size = resume->len;
        key.mv_data = resume->key;
    }
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
        PyObject *row;
        if (!edges) { /* ends only: the adjacency's value is the other end */
            row = PyLong_FromUnsignedLongLong(be(other.mv_data, 8));
            goto append;
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
        row = walk_neighbor_of(plane, be(sought + 4, 8), be(other.mv_data, 8), direction, record.mv_data,
                               record.mv_size);
    append:
        if (!row || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            result = -1;
            break;
        }
        Py_DECREF(row);
        if (PyList_GET_SIZE(out) >= limit) {
            memcpy(resume->key, decided, decided_len);
            memset(resume->key + decided_len, 0xff, SEQ);
            resume->len = decided_len + SEQ;
            result = 2;
            break;
        }
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

/* The tables' walks in turn from `resume` into one list of at most `limit` rows, with where to go on:
 * (rows, table, key), table == len(tables) when done; None: the Python path's to walk. edges_obj
 * NULL: the other ends only (no record read). */
static PyObject *walk_tables(PyObject *txn_obj, PyObject *tables, PyObject *edges_obj, const Py_buffer *prefix,
                             const Py_buffer *plane_group, const Py_buffer *inv_at, PyObject *plane, Resume *resume,
                             Py_ssize_t limit) {
    MDB_cursor *edges = NULL;
    MDB_txn *txn = txn_of(txn_obj, 1);
    MDB_dbi edges_dbi;
    if (!fixed(inv_at, SEQ, "inv_at") || (plane_group && !fixed(plane_group, 4, "plane_group"))) return NULL;
    if (limit < 1 || resume->table < 0) {
        PyErr_SetString(PyExc_ValueError, "a walk goes on from a table index >= 0, at most limit >= 1 rows a call");
        return NULL;
    }
    if (!txn || (edges_obj && (!walk_records_bound() || !dbi_of(edges_obj, &edges_dbi)))) Py_RETURN_NONE;
    int rc = edges_obj ? lm_cursor_open(txn, edges_dbi, &edges) : 0;
    if (rc) return lmdb_failed("mdb_cursor_open", rc);
    PyObject *out = PyList_New(0);
    int r = 0;
    for (; out && resume->table < PyTuple_GET_SIZE(tables); resume->table++, resume->len = 0) {
        PyObject *table = PyTuple_GET_ITEM(tables, resume->table);
        MDB_dbi adj;
        if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 2 || !dbi_of(PyTuple_GET_ITEM(table, 0), &adj)) {
            Py_SETREF(out, Py_NewRef(Py_None));
            break;
        }
        r = walk(txn, adj, edges, plane, PyTuple_GET_ITEM(table, 1), prefix, plane_group ? plane_group->buf : NULL,
                 inv_at->buf, out, limit, resume);
        if (r < 0) Py_CLEAR(out);
        if (r == 1) Py_SETREF(out, Py_NewRef(Py_None));
        if (r) break;
    }
    if (edges) lm_cursor_close(edges);
    if (!out || out == Py_None) return out;
    if (r != 2) resume->len = 0;
    PyObject *made = Py_BuildValue("(Nny#)", out, resume->table, (const char *)resume->key, (Py_ssize_t)resume->len);
    return made;
}

/* The resume key a caller hands back: at most MAX_KEY bytes. */
static int resume_of(Resume *resume, Py_ssize_t table, const Py_buffer *key) {
    if (key->len > MAX_KEY) {
        PyErr_SetString(PyExc_ValueError, "a resume key is at most 512 bytes");
        return 0;
    }
    resume->table = table;
    resume->len = (size_t)key->len;
    memcpy(resume->key, key->buf, key->len);
    return 1;
}

static PyObject *neighbors(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *tables, *edges_obj, *plane, *out = NULL;
    Py_buffer prefix, plane_group, inv_at, key;
    Py_ssize_t table, limit;
    Resume resume;
    if (!PyArg_ParseTuple(args, "OO!Oy*y*y*O!ny*n", &txn_obj, &PyTuple_Type, &tables, &edges_obj, &prefix,
                          &plane_group, &inv_at, &PyLong_Type, &plane, &table, &key, &limit))
        return NULL;
    if (resume_of(&resume, table, &key))
        out = walk_tables(txn_obj, tables, edges_obj, &prefix, &plane_group, &inv_at, plane, &resume, limit);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&plane_group);
    PyBuffer_Release(&inv_at);
    PyBuffer_Release(&key);
    return out;
}

static PyObject *ends(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *tables, *out = NULL;
    Py_buffer prefix, inv_at, key;
    Py_ssize_t table, limit;
    Resume resume;
    if (!PyArg_ParseTuple(args, "OO!y*y*ny*n", &txn_obj, &PyTuple_Type, &tables, &prefix, &inv_at, &table, &key,
                          &limit))
        return NULL;
    if (resume_of(&resume, table, &key))
        out = walk_tables(txn_obj, tables, NULL, &prefix, NULL, &inv_at, NULL, &resume, limit);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&inv_at);
    PyBuffer_Release(&key);
    return out;
}

/* A key's lookups are the reads users make most, so they are called without an argument tuple
 * (METH_FASTCALL) and with the plane and the key as given: the key's group, store/keys.py's
 * key_group (the plane's 4 bytes big-endian, the key's UTF-8, a NUL), is made here and sought by
 * key_id. Any argument the Python path must judge (a plane out of range, a key that is no str or
 * does not encode, too long a key) answers KEY_PYTHON, and that path raises its own error. A write
 * transaction is read too (a write checks a key before it takes it, and resolves its edges' keys),
 * its own writes included, as the Python path's cursor reads them.
 * args: txn, keys db, plane, key, inv_at; *txn_out: args[0]'s MDB_txn (NULL: not one). */
static int key_lookup(PyObject *const *args, MDB_txn **txn_out, unsigned char plane_group[4], uint64_t *id) {
    PyObject *inv = args[4];
    if (!PyBytes_Check(inv) || PyBytes_GET_SIZE(inv) != SEQ) {
        PyErr_SetString(PyExc_ValueError, "inv_at must be 8 bytes");
        return KEY_FAILED;
    }
    MDB_txn *txn = *txn_out = txn_of(args[0], 0);
    MDB_dbi keys_dbi;
    unsigned long plane = PyLong_CheckExact(args[2]) ? PyLong_AsUnsignedLong(args[2]) : (unsigned long)-1;
    Py_ssize_t len = 0;
    const char *key = PyUnicode_CheckExact(args[3]) ? PyUnicode_AsUTF8AndSize(args[3], &len) : NULL;
    if (!key || plane > 0xFFFFFFFFUL || !txn || !dbi_of(args[1], &keys_dbi) || 4 + (size_t)len + 1 > MAX_KEY) {
        PyErr_Clear(); /* (a negative or huge plane, a key that does not encode) */
        return KEY_PYTHON;
    }
    unsigned char group[MAX_KEY];
    for (int i = 0; i < 4; i++) group[i] = plane_group[i] = (unsigned char)(plane >> (24 - 8 * i));
    memcpy(group + 4, key, (size_t)len);
    group[4 + len] = 0;
    MDB_cursor *cur;
    int rc = lm_cursor_open(txn, keys_dbi, &cur);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        return KEY_FAILED;
    }
    int got = key_id(cur, (const char *)group, 4 + (size_t)len + 1, PyBytes_AS_STRING(inv), id, &rc);
    lm_cursor_close(cur);
    if (got == KEY_FAILED) lmdb_failed("mdb_cursor_get", rc);
    return got;
}

static int arity(const char *name, Py_ssize_t nargs, Py_ssize_t expected) {
    if (nargs == expected) return 1;
    PyErr_Format(PyExc_TypeError, "%s expects %zd arguments, got %zd", name, expected, nargs);
    return 0;
}

static PyObject *node_id_by_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    MDB_txn *txn;
    unsigned char plane_group[4];
    uint64_t id;
    if (!arity("node_id_by_key", nargs, 5)) return NULL;
    switch (key_lookup(args, &txn, plane_group, &id)) {
    case KEY_FOUND: return PyLong_FromUnsignedLongLong(id);
    case KEY_NONE: Py_RETURN_NONE;
    case KEY_PYTHON: Py_RETURN_FALSE;
    default: return NULL;
    }
}

/* The value of `group` (`len` bytes) in force at `inv_at`, one seek (Snapshot.version): KEY_FOUND
 * and *value; KEY_NONE when absent or a tombstone; KEY_FAILED and *err; KEY_PYTHON when the group
 * is too long to seek here. */
static int version_at(MDB_cursor *cur, const char *group, size_t len, const char *inv_at, MDB_val *value, int *err) {
    unsigned char sought[MAX_KEY];
    if (len + SEQ > MAX_KEY - 1) return KEY_PYTHON;
    memcpy(sought, group, len);
    memcpy(sought + len, inv_at, SEQ);
    MDB_val key = {len + SEQ, sought};
    int rc = lm_cursor_get(cur, &key, value, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND ||
        (rc == 0 && (value->mv_size == 0 || key.mv_size != len + SEQ || memcmp(key.mv_data, group, len) != 0)))
        return KEY_NONE;
    if (rc) {
        *err = rc;
        return KEY_FAILED;
    }
    return KEY_FOUND;
}

/* has_version(txn, db, group, inv_at): whether `group` has a value at `at` (a version in force that
 * is no tombstone): Snapshot.version(...) is not None, without the value. A write checks the plane
 * it writes into this way each commit. None: the Python path's to answer (not a transaction or
 * table of this layout, not bytes, too long a group). */
static PyObject *has_version(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity("has_version", nargs, 4)) return NULL;
    MDB_txn *txn = txn_of(args[0], 0);
    MDB_dbi dbi;
    PyObject *group = args[2], *inv = args[3];
    if (!txn || !dbi_of(args[1], &dbi) || !PyBytes_CheckExact(group) || !PyBytes_CheckExact(inv) ||
        PyBytes_GET_SIZE(inv) != SEQ)
        Py_RETURN_NONE;
    MDB_cursor *cur;
    int rc = lm_cursor_open(txn, dbi, &cur);
    if (rc) return lmdb_failed("mdb_cursor_open", rc);
    MDB_val value;
    int got = version_at(cur, PyBytes_AS_STRING(group), (size_t)PyBytes_GET_SIZE(group), PyBytes_AS_STRING(inv),
                         &value, &rc);
    lm_cursor_close(cur);
    switch (got) {
    case KEY_FOUND: Py_RETURN_TRUE;
    case KEY_NONE: Py_RETURN_FALSE;
    case KEY_PYTHON: Py_RETURN_NONE;
    default: return lmdb_failed("mdb_cursor_get", rc);
    }
}

/* The key index's version in force at `at` (group + inv_at), then the node's record at `at`. */
static PyObject *node_by_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    MDB_txn *txn;
    unsigned char plane_group[4];
    uint64_t id;
    MDB_dbi nodes_dbi;
    if (!arity("node_by_key", nargs, 6)) return NULL;
    PyObject *const key_args[5] = {args[0], args[1], args[3], args[4], args[5]};
    if (!walk_records_bound() || !dbi_of(args[2], &nodes_dbi)) Py_RETURN_FALSE;
    int got = key_lookup(key_args, &txn, plane_group, &id);
    if (got != KEY_FOUND) {
        if (got == KEY_FAILED) return NULL;
        return Py_NewRef(got == KEY_NONE ? Py_None : Py_False);
    }
    MDB_cursor *cur;
    int rc = lm_cursor_open(txn, nodes_dbi, &cur); /* (the transaction key_lookup found) */
    if (rc) return lmdb_failed("mdb_cursor_open", rc);
    unsigned char at[4 + 8 + SEQ];
    memcpy(at, plane_group, 4);
    for (int i = 0; i < 8; i++) at[4 + i] = (unsigned char)(id >> (56 - 8 * i));
    memcpy(at + 12, PyBytes_AS_STRING(args[5]), SEQ);
    MDB_val node_key = {sizeof(at), at}, record;
    PyObject *out;
    rc = lm_cursor_get(cur, &node_key, &record, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND || (rc == 0 && (record.mv_size == 0 || node_key.mv_size != sizeof(at) ||
                                           memcmp(node_key.mv_data, at, 12) != 0)))
        out = Py_NewRef(Py_None);
    else if (rc)
        out = lmdb_failed("mdb_cursor_get", rc);
    else
        out = walk_node_of(args[3], id, record.mv_data, record.mv_size);
    lm_cursor_close(cur);
    return out;
}

/* Each node's record at `at` (plane_group + id + inv_at), through one cursor: Snapshot.nodes_at's
 * loop. None in the list: no node with that id at `at`; None for the whole call: the Python path's
 * (not a read-only transaction of this layout, an id that is not an int). */
static PyObject *nodes_at(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *nodes_obj, *plane, *ids, *out = NULL;
    Py_buffer plane_group, inv_at;
    if (!PyArg_ParseTuple(args, "OOy*y*O!O!", &txn_obj, &nodes_obj, &plane_group, &inv_at, &PyLong_Type, &plane,
                          &PyList_Type, &ids))
        return NULL;
    MDB_cursor *cur = NULL;
    MDB_txn *txn = txn_of(txn_obj, 1);
    MDB_dbi nodes_dbi;
    if (!fixed(&plane_group, 4, "plane_group") || !fixed(&inv_at, SEQ, "inv_at")) goto done;
    Py_ssize_t count = PyList_GET_SIZE(ids);
    for (Py_ssize_t i = 0; i < count; i++)
        if (!PyLong_CheckExact(PyList_GET_ITEM(ids, i))) txn = NULL;
    if (!txn || !walk_records_bound() || !dbi_of(nodes_obj, &nodes_dbi)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    int rc = lm_cursor_open(txn, nodes_dbi, &cur);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        goto done;
    }
    out = PyList_New(count);
    unsigned char at[4 + 8 + SEQ];
    memcpy(at, plane_group.buf, 4);
    memcpy(at + 12, inv_at.buf, SEQ);
    for (Py_ssize_t i = 0; out && i < count; i++) {
        PyObject *row = Py_None;
        unsigned long long id = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(ids, i));
        if (id == (unsigned long long)-1 && PyErr_Occurred()) { /* below 0 or past MAX_ID: no such node */
            PyErr_Clear();
            goto put;
        }
        for (int b = 0; b < 8; b++) at[4 + b] = (unsigned char)(id >> (56 - 8 * b));
        MDB_val key = {sizeof(at), at}, record;
        rc = lm_cursor_get(cur, &key, &record, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND) goto put;
        if (rc) {
            lmdb_failed("mdb_cursor_get", rc);
            Py_CLEAR(out);
            break;
        }
        if (record.mv_size == 0 || key.mv_size != sizeof(at) || memcmp(key.mv_data, at, 12) != 0) goto put;
        row = walk_node_of(plane, id, record.mv_data, record.mv_size);
        if (!row) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, row);
        continue;
    put:
        PyList_SET_ITEM(out, i, Py_NewRef(row));
    }
done:
    if (cur) lm_cursor_close(cur);
    PyBuffer_Release(&plane_group);
    PyBuffer_Release(&inv_at);
    return out;
}

/* The node id each key's group names at `inv_at` (Snapshot.version of the keys table, read as an id),
 * through one cursor: an import's keys, in its write transaction (the cursor is closed before it
 * returns), sorted by the caller so that each seek lands near the last. None in the list: no node
 * holds that key; False for the whole call: the Python path's to answer. */
static int key_id(MDB_cursor *cur, const char *group, size_t len, const char *inv_at, uint64_t *id, int *err) {
    MDB_val value;
    int got = version_at(cur, group, len, inv_at, &value, err);
    if (got != KEY_FOUND) return got;
    if (value.mv_size != 8) return KEY_PYTHON; /* not an id: the reference's to judge */
    *id = be(value.mv_data, 8);
    return KEY_FOUND;
}

static PyObject *key_ids(PyObject *self, PyObject *args) {
    PyObject *txn_obj, *keys_obj, *groups, *out = NULL;
    Py_buffer inv_at;
    if (!PyArg_ParseTuple(args, "OOy*O!", &txn_obj, &keys_obj, &inv_at, &PyList_Type, &groups)) return NULL;
    MDB_cursor *cur = NULL;
    MDB_txn *txn = txn_of(txn_obj, 0);
    MDB_dbi keys_dbi;
    Py_ssize_t n = PyList_GET_SIZE(groups);
    if (!fixed(&inv_at, SEQ, "inv_at")) goto done;
    if (!txn || !dbi_of(keys_obj, &keys_dbi)) {
        out = Py_NewRef(Py_False);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *group = PyList_GET_ITEM(groups, i);
        if (!PyBytes_Check(group) || PyBytes_GET_SIZE(group) + SEQ > MAX_KEY - 1) {
            out = Py_NewRef(Py_False);
            goto done;
        }
    }
    int rc = lm_cursor_open(txn, keys_dbi, &cur);
    if (rc) {
        lmdb_failed("mdb_cursor_open", rc);
        goto done;
    }
    PyObject *ids = PyList_New(n);
    if (!ids) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *group = PyList_GET_ITEM(groups, i), *id;
        uint64_t found = 0; /* (set when key_id finds it) */
        int got = key_id(cur, PyBytes_AS_STRING(group), (size_t)PyBytes_GET_SIZE(group), inv_at.buf, &found, &rc);
        if (got == KEY_NONE)
            id = Py_NewRef(Py_None);
        else if (got == KEY_FAILED) {
            Py_DECREF(ids);
            lmdb_failed("mdb_cursor_get", rc);
            goto done;
        } else if (got == KEY_PYTHON) {
            Py_DECREF(ids);
            out = Py_NewRef(Py_False);
            goto done;
        } else if (!(id = PyLong_FromUnsignedLongLong(found))) {
            Py_DECREF(ids);
            goto done;
        }
        PyList_SET_ITEM(ids, i, id);
    }
    out = ids;
done:
    if (cur) lm_cursor_close(cur);
    PyBuffer_Release(&inv_at);
    return out;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "Find LMDB's functions in py-lmdb's loaded extension; the types to accept."},
    {"records", walk_records, METH_VARARGS, "The Edge and Neighbor types, their field names, and the Python decoding."},
    {"probe", probe, METH_VARARGS, "What the layout guard compares with py-lmdb's own answers."},
    {"neighbors", neighbors, METH_VARARGS, "A node's adjacency walk with each edge's record, at one seq."},
    {"ends", ends, METH_VARARGS, "The other end of each of a node's edges at one seq, from the adjacency alone."},
    {"node_by_key", (PyCFunction)(void (*)(void))node_by_key, METH_FASTCALL, "The node a key names at one seq, or None."},
    {"node_id_by_key", (PyCFunction)(void (*)(void))node_id_by_key, METH_FASTCALL,
     "The id of the node a key names at one seq, or None."},
    {"has_version", (PyCFunction)(void (*)(void))has_version, METH_FASTCALL,
     "Whether a group has a value (no tombstone) at one seq; None: the Python path's to answer."},
    {"nodes_at", nodes_at, METH_VARARGS, "Each node's record at one seq (None: no such node), one cursor."},
    {"key_ids", key_ids, METH_VARARGS, "The node id each key's group names at one seq, or None; one cursor."},
    {"lmdb_api", lmdb_api, METH_NOARGS, "LMDB's functions and py-lmdb's objects read as bound, as a capsule."},
    {"vectors", walk_vectors, METH_VARARGS, "The vector type and slot a vector extension decodes to."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_walk", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
