/* An import's new nodes and edges as the projection's (key, value) entries, made in C
 * (store/bulkwrite.py keeps them as each table's run; its Python encoding is the reference, and
 * tests/property/test_bulk_import_parity.py holds this module to the projection's entries).
 *
 * node(runs, plane, node_id, key, labels, inv, props) appends to runs = (nodes, keys, labels):
 *     (plane u32 | id u64 | inv, msgpack [key, labels, props])       key: str or None
 *     (plane u32 | key NUL | inv, id u64)                            when key is not None
 *     (plane u32 | label NUL | id u64 | inv, 0x01)                   for each label
 * edge(runs, plane, edge_id, src, dst, type, inv, props) appends to runs = (edges, out, in):
 *     (plane u32 | id u64 | inv, msgpack [src, dst, type, props])
 *     (plane u32 | src u64 | type NUL | id u64 | inv, dst u64)       out
 *     (plane u32 | dst u64 | type NUL | id u64 | inv, src u64)       in
 * The runs are store/_bulkrun.c's Run: entries in one buffer, sorted and written to LMDB from C.
 * key_groups(lines, plane_group) -> (keys, groups): the keys a commit's parsed lines name, sorted.
 * look_up(lines, txn, keys_db, plane_group, inv, known, scan, keymap, map_only): those keys looked up,
 *     into known (or False); a key the import's KeyMap holds (store/_bulkmap.c) without a seek, and
 *     with map_only (the plane held no key before the import) one it does not hold is absent.
 * lines(...): a commit's parsed lines of the common shapes as new records (store/_bulklines.c).
 * `props` is the properties already packed (kernel/values.pack); `inv` the commit's 8-byte ~seq.
 * The msgpack written is msgpack-python's Packer(use_bin_type=True)'s: the smallest form of each
 * unsigned integer, str8 for 32-255 bytes, fixarray up to 15 items.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_bulk.h"

void *room(void *array, Py_ssize_t *cap, Py_ssize_t n, size_t size, Py_ssize_t first, Py_ssize_t most) {
    Py_ssize_t want = *cap ? *cap : first;
    while (want < n)
        want *= 2;
    if (most && want > most)
        want = most;
    void *grown = PyMem_Realloc(array, (size_t)want * size);
    if (!grown)
        return PyErr_NoMemory();
    *cap = want;
    return grown;
}

int grow(Buf *b, Py_ssize_t more) {
    if (b->len + more <= b->cap)
        return 0;
    char *data = room(b->data, &b->cap, b->len + more, 1, 64, 0);
    if (!data)
        return -1;
    b->data = data;
    return 0;
}

int put(Buf *b, const void *src, Py_ssize_t n) {
    if (grow(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

int put_be(Buf *b, uint64_t v, int width) {
    unsigned char out[8];
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
    return put(b, out, width);
}

int put_byte(Buf *b, unsigned char c) { return put(b, &c, 1); }

/* msgpack-python's form of a non-negative integer */
int pack_uint(Buf *b, uint64_t v) {
    if (v < 0x80)
        return put_byte(b, (unsigned char)v);
    if (v <= 0xff)
        return put_byte(b, 0xcc) < 0 ? -1 : put_be(b, v, 1);
    if (v <= 0xffff)
        return put_byte(b, 0xcd) < 0 ? -1 : put_be(b, v, 2);
    if (v <= 0xffffffffULL)
        return put_byte(b, 0xce) < 0 ? -1 : put_be(b, v, 4);
    return put_byte(b, 0xcf) < 0 ? -1 : put_be(b, v, 8);
}

int pack_str(Buf *b, const char *s, Py_ssize_t n) {
    int rc;
    if (n < 32)
        rc = put_byte(b, (unsigned char)(0xa0 | n));
    else if (n <= 0xff)
        rc = put_byte(b, 0xd9) < 0 ? -1 : put_be(b, (uint64_t)n, 1);
    else if (n <= 0xffff)
        rc = put_byte(b, 0xda) < 0 ? -1 : put_be(b, (uint64_t)n, 2);
    else
        rc = put_byte(b, 0xdb) < 0 ? -1 : put_be(b, (uint64_t)n, 4);
    return rc < 0 ? -1 : put(b, s, n);
}

static int pack_array(Buf *b, Py_ssize_t n) {
    if (n < 16)
        return put_byte(b, (unsigned char)(0x90 | n));
    if (n <= 0xffff)
        return put_byte(b, 0xdc) < 0 ? -1 : put_be(b, (uint64_t)n, 2);
    return put_byte(b, 0xdd) < 0 ? -1 : put_be(b, (uint64_t)n, 4);
}

/* An entry's bytes written in place (run_room): each returns where the next go. */
static char *be_to(char *p, uint64_t v, int width) {
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)(v & 0xff);
        v >>= 8;
    }
    return p + width;
}

static char *bytes_to(char *p, const void *src, Py_ssize_t n) {
    memcpy(p, src, (size_t)n);
    return p + n;
}

/* (plane | id | inv, record): a node's or an edge's record entry */
static int record_entry(PyObject *run, unsigned int plane, uint64_t id, const char *inv, const Buf *record) {
    char *p = run_room(run, 4 + 8 + 8, record->len);
    if (!p)
        return -1;
    bytes_to(bytes_to(be_to(be_to(p, plane, 4), id, 8), inv, 8), record->data, record->len);
    run_seal(run);
    return 0;
}

/* (plane | [end |] name NUL | [id |] inv, value): a key's entry (no end, no id: the value is the
 * node), a label's (no end) and an adjacency entry (end: its node; name: the edge's type) */
static int named_entry(PyObject *run, unsigned int plane, const uint64_t *end, const char *name, Py_ssize_t n,
                       const uint64_t *id, const char *inv, const char *value, Py_ssize_t vlen) {
    char *p = run_room(run, 4 + (end ? 8 : 0) + n + 1 + (id ? 8 : 0) + 8, vlen);
    if (!p)
        return -1;
    p = be_to(p, plane, 4);
    if (end)
        p = be_to(p, *end, 8);
    p = bytes_to(p, name, n);
    *p++ = 0;
    if (id)
        p = be_to(p, *id, 8);
    bytes_to(bytes_to(p, inv, 8), value, vlen);
    run_seal(run);
    return 0;
}

int runs_of(PyObject *runs, PyObject *out[3]) {
    if (!PyTuple_Check(runs) || PyTuple_GET_SIZE(runs) != 3) {
        PyErr_SetString(PyExc_TypeError, "runs must be a tuple of three Runs");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        out[i] = PyTuple_GET_ITEM(runs, i);
        if (!Py_IS_TYPE(out[i], &RunType)) {
            PyErr_SetString(PyExc_TypeError, "runs must be a tuple of three Runs");
            return -1;
        }
    }
    return 0;
}

static int check_inv(Py_buffer *inv) {
    if (inv->len != 8) {
        PyErr_SetString(PyExc_ValueError, "inv must be 8 bytes");
        return -1;
    }
    return 0;
}

/* The buffer a record is made in: kept from call to call (the GIL is held and nothing in here runs
 * Python code), so a line costs no allocation of its own; the entries are written in their runs. */
static Buf value_buf;

int node_entries(PyObject *runs[3], unsigned int plane, uint64_t node_id, const char *key_s, Py_ssize_t key_n,
                 PyObject *labels, const char *inv, const char *props, Py_ssize_t props_n) {
    Buf *v = &value_buf;
    Py_ssize_t n_labels = PyList_GET_SIZE(labels);
    /* the record */
    v->len = 0;
    if (put_byte(v, 0x93) < 0 || (key_s ? pack_str(v, key_s, key_n) : put_byte(v, 0xc0)) < 0 ||
        pack_array(v, n_labels) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n_labels; i++) {
        PyObject *label = PyList_GET_ITEM(labels, i);
        Py_ssize_t n;
        const char *s = PyUnicode_Check(label) ? PyUnicode_AsUTF8AndSize(label, &n) : NULL;
        if (!s) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "labels must be strs");
            return -1;
        }
        if (pack_str(v, s, n) < 0)
            return -1;
    }
    if (put(v, props, props_n) < 0 || record_entry(runs[0], plane, node_id, inv, v) < 0)
        return -1;
    char id_be[8];
    be_to(id_be, node_id, 8);
    if (key_s && named_entry(runs[1], plane, NULL, key_s, key_n, NULL, inv, id_be, 8) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n_labels; i++) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(labels, i), &n);
        if (named_entry(runs[2], plane, NULL, s, n, &node_id, inv, "\x01", 1) < 0)
            return -1;
    }
    return 0;
}

PyObject *node(PyObject *self, PyObject *args) {
    PyObject *runs, *key, *labels, *run[3];
    unsigned int plane;
    unsigned long long node_id;
    Py_buffer inv, props;
    if (!PyArg_ParseTuple(args, "OIKOO!y*y*", &runs, &plane, &node_id, &key, &PyList_Type, &labels, &inv, &props))
        return NULL;
    PyObject *result = NULL;
    const char *key_s = NULL;
    Py_ssize_t key_n = 0;
    if (runs_of(runs, run) < 0 || check_inv(&inv) < 0)
        goto done;
    if (key != Py_None) {
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "key must be a str or None");
            goto done;
        }
        if (!(key_s = PyUnicode_AsUTF8AndSize(key, &key_n)))
            goto done;
    }
    if (node_entries(run, plane, node_id, key_s, key_n, labels, inv.buf, props.buf, props.len) == 0)
        result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&inv);
    PyBuffer_Release(&props);
    return result;
}

int edge_entries(PyObject *runs[3], unsigned int plane, uint64_t edge_id, uint64_t src, uint64_t dst, const char *t,
                 Py_ssize_t tn, const char *inv, const char *props, Py_ssize_t props_n) {
    Buf *v = &value_buf;
    v->len = 0;
    if (put_byte(v, 0x94) < 0 || pack_uint(v, src) < 0 || pack_uint(v, dst) < 0 || pack_str(v, t, tn) < 0 ||
        put(v, props, props_n) < 0 || record_entry(runs[0], plane, edge_id, inv, v) < 0)
        return -1;
    char end_be[8];
    be_to(end_be, dst, 8);
    if (named_entry(runs[1], plane, &src, t, tn, &edge_id, inv, end_be, 8) < 0)
        return -1;
    be_to(end_be, src, 8);
    return named_entry(runs[2], plane, &dst, t, tn, &edge_id, inv, end_be, 8);
}

PyObject *edge(PyObject *self, PyObject *args) {
    PyObject *runs, *type, *run[3];
    unsigned int plane;
    unsigned long long edge_id, src, dst;
    Py_buffer inv, props;
    if (!PyArg_ParseTuple(args, "OIKKKUy*y*", &runs, &plane, &edge_id, &src, &dst, &type, &inv, &props))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t tn;
    const char *t;
    if (runs_of(runs, run) < 0 || check_inv(&inv) < 0 || !(t = PyUnicode_AsUTF8AndSize(type, &tn)))
        goto done;
    if (edge_entries(run, plane, edge_id, src, dst, t, tn, inv.buf, props.buf, props.len) == 0)
        result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&inv);
    PyBuffer_Release(&props);
    return result;
}

/* line_keys(line, names) -> count: the strs a parsed line names as its "external_key", "src_key"
 * and "dst_key" (borrowed: the line holds them) into names; 0 for a line that is no dict, -1 on an
 * error. The one reading of a line's keys key_groups and look_up share. */
static int line_keys(PyObject *line, PyObject *names[3]) {
    static const char *spelled[] = {"external_key", "src_key", "dst_key"};
    static PyObject *fields[3]; /* interned once: a dict lookup by them hashes nothing */
    int count = 0;
    if (!PyDict_CheckExact(line)) return 0;
    for (int f = 0; f < 3; f++) {
        if (!fields[f] && !(fields[f] = PyUnicode_InternFromString(spelled[f]))) return -1;
        PyObject *name = PyDict_GetItemWithError(line, fields[f]); /* borrowed */
        if (!name && PyErr_Occurred()) return -1;
        if (name && PyUnicode_CheckExact(name)) names[count++] = name;
    }
    return count;
}

/* key_groups(lines, plane_group) -> ([key, ...], [group, ...]): the keys the parsed lines name
 * (a dict's "external_key", "src_key" and "dst_key" that are strs), each once, in code-point order
 * (their UTF-8 bytes' order), with each one's keys.key_group (plane_group | UTF-8 | NUL). A key that
 * is no valid UTF-8 (a lone surrogate) is left out: the line's own lookup meets it. */
static PyObject *key_groups(PyObject *self, PyObject *args) {
    PyObject *lines, *names = NULL, *order = NULL, *groups = NULL, *out = NULL, *named[3];
    Py_buffer prefix;
    if (!PyArg_ParseTuple(args, "O!y*", &PyList_Type, &lines, &prefix)) return NULL;
    Buf k = {0};
    if (!(names = PySet_New(NULL))) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        int count = line_keys(PyList_GET_ITEM(lines, i), named);
        if (count < 0) goto done;
        for (int f = 0; f < count; f++)
            if (PySet_Add(names, named[f]) < 0) goto done;
    }
    if (!(order = PySequence_List(names)) || PyList_Sort(order) < 0 || !(groups = PyList_New(0))) goto done;
    PyObject *kept = PyList_New(0);
    if (!kept) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
        PyObject *name = PyList_GET_ITEM(order, i);
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(name, &n);
        if (!s) {
            PyErr_Clear();
            continue;
        }
        k.len = 0;
        if (put(&k, prefix.buf, prefix.len) < 0 || put(&k, s, n) < 0 || put_byte(&k, 0) < 0) {
            Py_DECREF(kept);
            goto done;
        }
        PyObject *group = PyBytes_FromStringAndSize(k.data, k.len);
        if (!group || PyList_Append(groups, group) < 0 || PyList_Append(kept, name) < 0) {
            Py_XDECREF(group);
            Py_DECREF(kept);
            goto done;
        }
        Py_DECREF(group);
    }
    out = PyTuple_Pack(2, kept, groups);
    Py_DECREF(kept);
done:
    PyMem_Free(k.data);
    Py_XDECREF(names);
    Py_XDECREF(order);
    Py_XDECREF(groups);
    PyBuffer_Release(&prefix);
    return out;
}

/* look_up(lines, txn, keys_db, plane_group, inv, known, scan, keymap, map_only) -> bool: key_groups'
 * keys, each looked up as store/_walk.c's key_ids looks it up (one cursor, in key order) unless
 * `keymap` (a KeyMap, or None: _bulkmap.c) holds it — or, `map_only`, absent if it does not: the
 * caller knows the map holds every key there is (a seek of each of upstream's 100k new node keys
 * cost ~0.05 s) — put straight into `known`
 * (key -> node id, or None): no group bytes, no lists of keys and ids, no zip. `scan` (a Scan, or
 * None): the keys its lines name too, their answers kept in the scan (Scan.keys, each line's by
 * index: store/_bulkscan.c) — each asked of `keymap` first, and only those it misses sorted with the
 * others (on upstream's edge commits every end is the map's: sorting them bought nothing). False when the Python path must answer (LMDB
 * not bound, not py-lmdb's objects, a key it must judge, an LMDB error: its own read raises
 * py-lmdb's), with `known` perhaps partly filled (the Python path overwrites) and the scan's keys
 * not resolved. */
typedef struct {
    uint64_t head; /* the first 8 bytes, big-endian, zero-padded: most keys compare as one integer */
    const char *s;
    Py_ssize_t n;
    PyObject *name; /* borrowed: its line holds it; NULL: a scanned line's (occ) */
    int32_t occ;    /* its occurrence in the Scan, else -1 */
} Name;

/* as bytes compare (a prefix first): heads that differ order as their bytes do (padding sorts first) */
static int by_name(const void *a, const void *b) {
    const Name *x = a, *y = b;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    int c = memcmp(x->s, y->s, (size_t)(x->n < y->n ? x->n : y->n));
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static unsigned name_byte(const Name *x, int b) { return (unsigned)(x->head >> (56 - 8 * b)) & 0xff; }

/* names sorted as by_name orders them: an LSD radix sort on the 8-byte heads (a pass only for a byte
 * that differs somewhere: a plane's keys mostly share their first), then each group of equal heads
 * by qsort. qsort's calls through a pointer for every name were ~6% of an import. 0, or -1 (memory). */
static int sort_names(Name *names, Py_ssize_t n) {
    Name *tmp = n > 1 ? PyMem_Malloc((size_t)n * sizeof(Name)) : NULL;
    if (n > 1 && !tmp) {
        PyErr_NoMemory();
        return -1;
    }
    size_t count[8][256] = {{0}};
    for (Py_ssize_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) count[b][name_byte(&names[i], b)]++;
    Name *src = names, *dst = tmp;
    for (int b = 7; b >= 0 && n > 1; b--) {
        if (count[b][name_byte(&names[0], b)] == (size_t)n) continue; /* one value: order unchanged */
        size_t at[256], sum = 0;
        for (int v = 0; v < 256; v++) {
            at[v] = sum;
            sum += count[b][v];
        }
        for (Py_ssize_t i = 0; i < n; i++) dst[at[name_byte(&src[i], b)]++] = src[i];
        Name *was = src;
        src = dst;
        dst = was;
    }
    if (src != names) memcpy(names, src, (size_t)n * sizeof(Name));
    PyMem_Free(tmp);
    for (Py_ssize_t i = 0, j; i < n; i = j) { /* names sharing their first 8 bytes */
        for (j = i + 1; j < n && names[j].head == names[i].head; j++) {}
        if (j - i > 1) qsort(names + i, (size_t)(j - i), sizeof(Name), by_name);
    }
    return 0;
}

static int add_name(Name **names, Py_ssize_t *count, Py_ssize_t *cap, Name name) {
    if (*count == *cap) {
        Name *grown = room(*names, cap, *count + 1, sizeof(Name), 1024, 0);
        if (!grown)
            return -1;
        *names = grown;
    }
    uint64_t head = 0;
    for (int b = 0; b < 8; b++) head = head << 8 | (b < name.n ? (unsigned char)name.s[b] : 0);
    name.head = head;
    (*names)[(*count)++] = name;
    return 0;
}

static PyObject *look_up(PyObject *self, PyObject *args) {
    PyObject *lines, *txn_obj, *db_obj, *known, *scan_obj = Py_None, *map_obj = Py_None, *out = NULL, *named[3];
    Py_buffer prefix, inv;
    int map_only = 0;
    if (!PyArg_ParseTuple(args, "O!OOy*y*O!|OOp", &PyList_Type, &lines, &txn_obj, &db_obj, &prefix, &inv, &PyDict_Type,
                          &known, &scan_obj, &map_obj, &map_only))
        return NULL;
    Scan *scan = Py_IS_TYPE(scan_obj, &ScanType) ? (Scan *)scan_obj : NULL;
    PyObject *map = Py_IS_TYPE(map_obj, &KeyMapType) ? map_obj : NULL;
    map_only = map_only && map; /* (without a map, every key is sought) */
    const LmdbApi *api = bulk_lmdb();
    MDB_txn *txn = api && inv.len == 8 ? api->txn_of(txn_obj, 0) : NULL;
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    Name *names = NULL;
    Py_ssize_t count = 0, cap = 0;
    Buf k = {0};
    if (!txn || !api->dbi_of(db_obj, &dbi)) {
        out = Py_NewRef(Py_False);
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        int keys = line_keys(PyList_GET_ITEM(lines, i), named);
        if (keys < 0) goto done;
        for (int f = 0; f < keys; f++) {
            PyObject *name = named[f];
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(name, &n);
            if (!s) { /* a lone surrogate: the line's own lookup meets it */
                PyErr_Clear();
                continue;
            }
            if (add_name(&names, &count, &cap, (Name){0, s, n, name, -1}) < 0) goto done;
        }
    }
    uint64_t id = 0;
    if (scan) {
        if (scan->resolved) { /* (once a commit: a second call finds them again) */
            PyErr_SetString(PyExc_ValueError, "the scan's keys are looked up already");
            goto done;
        }
        if (scan_keys_add(scan, count + scan->nocc) < 0) goto done; /* (a key for each name at most) */
        enum { AHEAD = 8 }; /* names prefetched ahead of the one probed: ~a miss's latency of probes */
        for (Py_ssize_t i = 0; map && i < AHEAD && i < scan->nocc; i++)
            keymap_prefetch(map, scan->occ[i].s, scan->occ[i].n);
        for (Py_ssize_t i = 0; i < scan->nocc; i++) {
            Occ *occ = &scan->occ[i];
            if (map && i + AHEAD < scan->nocc) keymap_prefetch(map, occ[AHEAD].s, occ[AHEAD].n);
            if (map && keymap_get(map, occ->s, occ->n, &id)) { /* made by this import: no seek, no sort */
                occ->key = (int32_t)scan->nkeys;
                scan->keys[scan->nkeys++] = (Key){occ->s, occ->n, KEY_IN_FILE, id, NULL};
            } else if (add_name(&names, &count, &cap, (Name){0, occ->s, occ->n, NULL, (int32_t)i}) < 0)
                goto done;
        }
    }
    if (sort_names(names, count) < 0) goto done; /* each seek lands near the last */
    int rc = api->cursor_open(txn, dbi, &cur);
    if (rc) {
        cur = NULL;
        out = Py_NewRef(Py_False);
        goto done;
    }
    int got = KEY_NONE, in_known = 0; /* the answer for names[i]'s name; whether known has it */
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!i || by_name(&names[i - 1], &names[i]) != 0) { /* a name not met before: seek it */
            if (map && names[i].occ < 0 && keymap_get(map, names[i].s, names[i].n, &id)) { /* (a scan's: asked) */
                got = KEY_FOUND; /* made by this import in a committed transaction: no seek */
            } else if (map_only) {
                got = KEY_NONE; /* the plane held no key before the import, and the map has all it made */
            } else {
                k.len = 0;
                if (put(&k, prefix.buf, prefix.len) < 0 || put(&k, names[i].s, names[i].n) < 0 || put_byte(&k, 0) < 0)
                    goto done;
                got = api->key_id(cur, k.data, (size_t)k.len, inv.buf, &id, &rc);
            }
            if (got == KEY_PYTHON || got == KEY_FAILED) {
                out = Py_NewRef(Py_False);
                goto done;
            }
            in_known = 0;
            if (scan) /* one entry a distinct name the map missed: a node line's key is given out once */
                scan->keys[scan->nkeys++] = (Key){names[i].s, names[i].n, got == KEY_FOUND ? KEY_IN_FILE : KEY_ABSENT,
                                                  got == KEY_FOUND ? id : 0, NULL};
        }
        if (names[i].occ >= 0) {
            scan->occ[names[i].occ].key = (int32_t)(scan->nkeys - 1);
            continue;
        }
        if (in_known) continue; /* a repeat */
        PyObject *value = got == KEY_FOUND ? PyLong_FromUnsignedLongLong(id) : Py_NewRef(Py_None);
        int set = value ? PyDict_SetItem(known, names[i].name, value) : -1;
        Py_XDECREF(value);
        if (set < 0) goto done;
        in_known = 1;
    }
    if (scan) scan->resolved = 1;
    out = Py_NewRef(Py_True);
done:
    if (cur) api->cursor_close(cur);
    PyMem_Free(k.data);
    PyMem_Free(names);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&inv);
    return out;
}

/* seek_order([str, ...]) -> [str, ...]: the strs in the order look_up seeks keys in (sort_names'),
 * repeats kept: for the tests, against Python's order of their UTF-8 bytes. */
static PyObject *seek_order(PyObject *self, PyObject *strs) {
    if (!PyList_Check(strs)) {
        PyErr_SetString(PyExc_TypeError, "seek_order() takes a list of strs");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(strs), count = 0, cap = 0;
    Name *names = NULL;
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
        PyObject *name = PyList_GET_ITEM(strs, i);
        const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
        if (!s) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "seek_order() takes a list of strs");
            goto done;
        }
        if (add_name(&names, &count, &cap, (Name){0, s, len, name, -1}) < 0) goto done;
    }
    if (sort_names(names, count) < 0 || !(out = PyList_New(count))) goto done;
    for (Py_ssize_t i = 0; i < count; i++) PyList_SET_ITEM(out, i, Py_NewRef(names[i].name));
done:
    PyMem_Free(names);
    return out;
}

static PyMethodDef methods[] = {
    {"seek_order", seek_order, METH_O, "strs in the order look_up seeks keys in (the tests')"},
    {"bind_lmdb", bind_lmdb, METH_O, "LMDB's functions as store/_walk.c bound them (its lmdb_api())"},
    {"strerror", lmdb_strerror, METH_O, "LMDB's words for an error code"},
    {"write_runs", write_runs, METH_VARARGS, "runs sorted and written, all without the GIL at once (_bulkrun.c)"},
    {"write_merged", write_merged, METH_VARARGS, "packed runs merged and written without the GIL (_bulkrun.c)"},
    {"merged", merged, METH_O, "packed runs merged into a new packed run without the GIL (_bulkrun.c)"},
    {"mutation_slots", mutation_slots, METH_VARARGS, "NodePut and EdgePut made by setting their slots"},
    {"look_up", look_up, METH_VARARGS, "the keys parsed lines name, looked up in one sorted pass, into a dict"},
    {"key_groups", key_groups, METH_VARARGS, "the keys parsed lines name, sorted, with their key groups"},
    {"node", node, METH_VARARGS, "a new node's entries, appended to (nodes, keys, labels)"},
    {"edge", edge, METH_VARARGS, "a new edge's entries, appended to (edges, out, in)"},
    {"lines", lines, METH_VARARGS, "a commit's lines of the common shapes as new records (store/_bulklines.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bulk", "An import's entries made in C.", -1, methods};

PyMODINIT_FUNC PyInit__bulk(void) {
    if (PyType_Ready(&RunType) < 0 || PyType_Ready(&ScanType) < 0 || PyType_Ready(&KeyMapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddObjectRef(m, "Run", (PyObject *)&RunType) < 0 ||
              PyModule_AddObjectRef(m, "Scan", (PyObject *)&ScanType) < 0 ||
              PyModule_AddObjectRef(m, "KeyMap", (PyObject *)&KeyMapType) < 0))
        Py_CLEAR(m);
    return m;
}
