/* One table's run of an import's new entries (store/bulkwrite.py), without a Python object an entry:
 * keys and values side by side in one buffer, sorted by key in place and written to LMDB through the
 * functions store/_walk.c bound in py-lmdb's extension (store/_lmdb.h), on py-lmdb's own write
 * transaction. Making a bytes and a tuple for each of an import's 1.8M entries, freeing them, and
 * py-lmdb's putmulti reading each back cost about a quarter of the import (tests/bench/RESULTS.md).
 *
 * Run()                      an empty run
 * run.add(key, value)        append an entry (node() and edge() in _bulk.c append from C: run_add)
 * len(run), run.entries()    [(key, value), ...] as appended or sorted: the tests', and py-lmdb's
 *                            putmulti where LMDB is not bound here
 * run.sort()                 by key, as bytes compare (a prefix first): a radix sort on the keys'
 *                            first 16 bytes, ties by the rest; a run in order already (new nodes'
 *                            and edges') is left after one pass; without the GIL
 * run.write(txn, db)         0: written, appended with MDB_APPEND when its first key lies past the
 *                            table's last, else put in key order; False: not bound here, or not
 *                            py-lmdb's objects (the caller writes entries()); else (LMDB's error code,
 *                            the entry it met it at): the caller raises py-lmdb's error for it (the
 *                            transaction is then failed, as after py-lmdb's own put)
 * write_runs(txn, pairs)     each (run, table) pair's run sorted and written as above, all in one
 *                            call without the GIL: 0, False (as write's) or (pair, code, entry)
 * run.clear()                empty it, keeping its memory for the next commit
 * run.cut(n)                 keep its first n entries as appended (not after a sort): a commit an
 *                            import made ahead of its transaction, taken back (store/bulkwrite.py)
 * run.nbytes()               the memory its entries take: their bytes and their slots
 * run.packed()               a new run of its entries sorted, their bytes laid out in that order:
 *                            read in key order, front to back (a sorted run's reads land all over
 *                            its buffer); this run is left sorted; without the GIL. An import's
 *                            adjacency held back across its transactions (store/importahead.py)
 * merged(runs)               a new packed run of packed runs' entries in one key order (no key twice
 *                            in all); without the GIL
 * write_merged(txn, db, runs)  packed runs merged into one key order and put into db as write()
 *                            puts one run (appended when the least key lies past the table's last):
 *                            0, False or (code, entry); without the GIL
 * bind_lmdb(capsule)         store/_walk.c's lmdb_api(), once drsg.store.native checked its layout
 * strerror(code)             LMDB's words for an error code write() returned
 */
#include <string.h>

#include "_bulk.h"
#include "_lmdb.h"

typedef struct {
    uint64_t head[2]; /* the key's first 16 bytes, big-endian, zero-padded: most comparisons end here,
                         without reading the key (a random place in data) */
    Py_ssize_t off;   /* the key's first byte in data; the value follows it */
    uint32_t klen, vlen;
} Item;

typedef struct {
    PyObject_HEAD Buf data;
    Item *items;
    Py_ssize_t n, cap;
} Run;

static const LmdbApi *lmdb;

/* room for n items in all (doubling, from 256): 0, or -1 (memory) */
static int items_room(Run *run, Py_ssize_t n) {
    if (n <= run->cap)
        return 0;
    Item *items = room(run->items, &run->cap, n, sizeof(Item), 256, 0);
    if (!items)
        return -1;
    run->items = items;
    return 0;
}

char *run_room(PyObject *obj, Py_ssize_t klen, Py_ssize_t vlen) {
    Run *run = (Run *)obj;
    if (klen > UINT32_MAX || vlen > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "an entry past 4 GiB");
        return NULL;
    }
    if (items_room(run, run->n + 1) < 0)
        return NULL;
    Py_ssize_t off = run->data.len;
    if (grow(&run->data, klen + vlen + 1) < 0) /* (+1: never NULL, for an empty entry too) */
        return NULL;
    run->data.len += klen + vlen;
    run->items[run->n++] = (Item){{0, 0}, off, (uint32_t)klen, (uint32_t)vlen};
    return run->data.data + off;
}

/* 8 bytes from p on as a big-endian integer (one load and a byte swap where the compiler has one) */
static uint64_t load_be(const unsigned char *p) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
#endif
}

void run_seal(PyObject *obj) {
    Run *run = (Run *)obj;
    Item *item = &run->items[run->n - 1];
    const unsigned char *key = (const unsigned char *)run->data.data + item->off;
    if (item->klen >= 16) { /* (an adjacency key: two loads, no copy) */
        item->head[0] = load_be(key);
        item->head[1] = load_be(key + 8);
        return;
    }
    unsigned char first[16] = {0}; /* (zero-padded) */
    memcpy(first, key, item->klen);
    item->head[0] = load_be(first);
    item->head[1] = load_be(first + 8);
}

int run_add(PyObject *obj, const char *key, Py_ssize_t klen, const char *value, Py_ssize_t vlen) {
    char *at = run_room(obj, klen, vlen);
    if (!at)
        return -1;
    memcpy(at, key, (size_t)klen);
    memcpy(at + klen, value, (size_t)vlen);
    run_seal(obj);
    return 0;
}

int run_last_value(PyObject *obj, const char **value, Py_ssize_t *vlen) {
    Run *run = (Run *)obj;
    if (!run->n) {
        PyErr_SetString(PyExc_ValueError, "an empty run has no last entry");
        return -1;
    }
    Item *last = &run->items[run->n - 1];
    *value = run->data.data + last->off + last->klen;
    *vlen = last->vlen;
    return 0;
}

/* as bytes compare (a prefix first), for entries whose keys are at xbase + x->off and ybase + y->off:
 * heads that differ order as their bytes do (padding sorts first); equal heads mean equal first
 * bytes, so the rest is read 8 bytes at a time from there (memcmp's call was 8% of an import's
 * merge of its adjacency: an edge's keys share their head with the node's other edges') */
static int compare_in(const char *xbase, const Item *x, const char *ybase, const Item *y) {
    if (x->head[0] != y->head[0]) return x->head[0] < y->head[0] ? -1 : 1;
    if (x->head[1] != y->head[1]) return x->head[1] < y->head[1] ? -1 : 1;
    const unsigned char *a = (const unsigned char *)xbase + x->off, *b = (const unsigned char *)ybase + y->off;
    size_t n = x->klen < y->klen ? x->klen : y->klen, i = n < 16 ? n : 16;
    for (; i + 8 <= n; i += 8) {
        uint64_t p = load_be(a + i), q = load_be(b + i);
        if (p != q) return p < q ? -1 : 1;
    }
    for (; i < n; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return (x->klen > y->klen) - (x->klen < y->klen);
}

static int compare(const char *base, const Item *x, const Item *y) { return compare_in(base, x, base, y); }

/* items[lo:hi] sorted into out[lo:hi] (out may be items; tmp: scratch, neither), compare inlined */
static void merge_sort(const char *base, Item *items, Item *out, Item *tmp, Py_ssize_t lo, Py_ssize_t hi) {
    if (hi - lo <= 12) { /* insertion sort: short ranges, where merging costs more than it saves */
        if (out != items)
            memcpy(out + lo, items + lo, (size_t)(hi - lo) * sizeof(Item));
        for (Py_ssize_t i = lo + 1; i < hi; i++) {
            Item x = out[i];
            Py_ssize_t j = i;
            for (; j > lo && compare(base, &x, &out[j - 1]) < 0; j--)
                out[j] = out[j - 1];
            out[j] = x;
        }
        return;
    }
    Py_ssize_t mid = lo + (hi - lo) / 2;
    Item *halves = out == items ? tmp : items; /* the halves sorted where out is not; out the scratch */
    merge_sort(base, items, halves, out, lo, mid);
    merge_sort(base, items, halves, out, mid, hi);
    Py_ssize_t a = lo, b = mid, o = lo;
    while (a < mid && b < hi)
        out[o++] = compare(base, &halves[b], &halves[a]) < 0 ? halves[b++] : halves[a++];
    while (a < mid) out[o++] = halves[a++];
    while (b < hi) out[o++] = halves[b++];
}

static unsigned head_byte(const Item *x, int b) { return (unsigned)(x->head[b / 8] >> (56 - 8 * (b % 8))) & 0xff; }

/* items sorted by key: an LSD radix sort on the 16-byte heads (a pass only for a byte that differs
 * somewhere: an out run's plane, high id bytes and type are one value), then each group of equal
 * heads by the rest of its keys. qsort's comparisons through a pointer were ~12% of an import. */
static void sort_items(const char *base, Item *items, Item *tmp, Py_ssize_t n) {
    uint64_t differ[2] = {0, 0}; /* the bits some head has unlike the first's: only their bytes are counted */
    for (Py_ssize_t i = 1; i < n; i++) {
        differ[0] |= items[i].head[0] ^ items[0].head[0];
        differ[1] |= items[i].head[1] ^ items[0].head[1];
    }
    int varies[16];
    for (int b = 0; b < 16; b++) varies[b] = (differ[b / 8] >> (56 - 8 * (b % 8))) & 0xff ? 1 : 0;
    size_t count[16][256] = {{0}};
    for (int b = 0; b < 16; b++)
        if (varies[b])
            for (Py_ssize_t i = 0; i < n; i++) count[b][head_byte(&items[i], b)]++;
    Item *src = items, *dst = tmp;
    for (int b = 15; b >= 0; b--) {
        if (!varies[b]) continue; /* one value: order unchanged */
        size_t at[256], sum = 0;
        for (int v = 0; v < 256; v++) {
            at[v] = sum;
            sum += count[b][v];
        }
        for (Py_ssize_t i = 0; i < n; i++) dst[at[head_byte(&src[i], b)]++] = src[i];
        Item *was = src;
        src = dst;
        dst = was;
    }
    if (src != items) memcpy(items, src, (size_t)n * sizeof(Item));
    for (Py_ssize_t i = 0, j; i < n; i = j) { /* keys sharing their first 16 bytes */
        for (j = i + 1; j < n && items[j].head[0] == items[i].head[0] && items[j].head[1] == items[i].head[1]; j++) {}
        if (j - i > 1) merge_sort(base, items, items, tmp, i, j);
    }
}

/* the run sorted (tmp: room for its items); one pass when it is in order already. No GIL needed. */
static void sort_run(Run *run, Item *tmp) {
    Py_ssize_t i = 1;
    while (i < run->n && compare(run->data.data, &run->items[i - 1], &run->items[i]) < 0)
        i++;
    if (i < run->n)
        sort_items(run->data.data, run->items, tmp, run->n);
}

static PyObject *run_sort(Run *self, PyObject *unused) {
    Item *tmp = self->n > 1 ? PyMem_Malloc((size_t)self->n * sizeof(Item)) : NULL; /* as qsort's merge sort took */
    if (self->n > 1 && !tmp)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS /* the run's own memory alone: an import's writer thread sorts while its reader reads */
    sort_run(self, tmp);
    Py_END_ALLOW_THREADS
    PyMem_Free(tmp);
    Py_RETURN_NONE;
}

static PyObject *run_cut(Run *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > self->n) {
        PyErr_Format(PyExc_ValueError, "cut(%zd) of a run of %zd entries", n, self->n);
        return NULL;
    }
    if (n < self->n) { /* (entries are appended: entry n's bytes begin where the first n's end) */
        self->data.len = self->items[n].off;
        self->n = n;
    }
    Py_RETURN_NONE;
}

/* a new Run with room for n entries of `bytes` bytes in all, laid out by lay_out: NULL (an error set) */
static Run *new_packed(Py_ssize_t n, Py_ssize_t bytes) {
    Run *out = (Run *)RunType.tp_alloc(&RunType, 0);
    if (!out)
        return NULL;
    if (items_room(out, n) < 0 || grow(&out->data, bytes + 1) < 0) { /* (+1: never NULL) */
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* `item` (its key at base + item->off) appended to `out`, which has room for it: laid out */
static void lay_out(Run *out, const char *base, const Item *item) {
    Item *to = &out->items[out->n++];
    *to = *item;
    to->off = out->data.len;
    memcpy(out->data.data + to->off, base + item->off, (size_t)item->klen + item->vlen);
    out->data.len += (Py_ssize_t)item->klen + item->vlen;
}

static PyObject *run_packed(Run *self, PyObject *unused) {
    Item *tmp = self->n > 1 ? PyMem_Malloc((size_t)self->n * sizeof(Item)) : NULL;
    if (self->n > 1 && !tmp)
        return PyErr_NoMemory();
    Run *out = new_packed(self->n, self->data.len);
    if (out) {
        Py_BEGIN_ALLOW_THREADS /* the runs' own memory alone: an import's writer packs while its reader reads */
        if (self->n > 1)
            sort_run(self, tmp);
        for (Py_ssize_t i = 0; i < self->n; i++)
            lay_out(out, self->data.data, &self->items[i]);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(tmp);
    return (PyObject *)out;
}

static PyObject *run_nbytes(Run *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->data.len + self->n * (Py_ssize_t)sizeof(Item));
}

static PyObject *run_add_py(Run *self, PyObject *args) {
    Py_buffer key, value;
    if (!PyArg_ParseTuple(args, "y*y*", &key, &value))
        return NULL;
    int rc = run_add((PyObject *)self, key.buf, key.len, value.buf, value.len);
    PyBuffer_Release(&key);
    PyBuffer_Release(&value);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *run_entries(Run *self, PyObject *unused) {
    PyObject *out = PyList_New(self->n);
    for (Py_ssize_t i = 0; out && i < self->n; i++) {
        const char *k = self->data.data + self->items[i].off; /* (NULL while every entry is empty) */
        PyObject *key = PyBytes_FromStringAndSize(k, self->items[i].klen);
        PyObject *value = key ? PyBytes_FromStringAndSize(k ? k + self->items[i].klen : NULL, self->items[i].vlen) : NULL;
        PyObject *pair = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (!pair)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

static PyObject *run_clear(Run *self, PyObject *unused) {
    self->n = 0;
    self->data.len = 0;
    Py_RETURN_NONE;
}

/* a cursor on `dbi` for sorted puts from `first` (n bytes) on, and their flags: MDB_APPEND when the
 * table is empty or `first` lies past its last key. 0, or LMDB's error (no cursor then). */
static int cursor_for(MDB_txn *txn, MDB_dbi dbi, const char *first, size_t first_n, MDB_cursor **cur,
                      unsigned int *flags) {
    MDB_val k, v;
    *flags = 0;
    int rc = lmdb->cursor_open(txn, dbi, cur);
    if (rc)
        return rc;
    rc = lmdb->cursor_get(*cur, &k, &v, MDB_LAST);
    if (rc == MDB_NOTFOUND)
        rc = 0, *flags = MDB_APPEND; /* an empty table */
    else if (rc == 0) {
        int c = memcmp(first, k.mv_data, first_n < k.mv_size ? first_n : k.mv_size);
        if (c > 0 || (c == 0 && first_n > k.mv_size))
            *flags = MDB_APPEND; /* past the table's last key */
    }
    if (rc)
        lmdb->cursor_close(*cur);
    return rc;
}

/* the sorted run put into `dbi` (appended when its first key lies past the table's last): 0, or
 * LMDB's error with the entry it met it at in *at. Called without the GIL: LMDB's work alone. */
static int put_run(const Run *run, MDB_txn *txn, MDB_dbi dbi, Py_ssize_t *at) {
    const char *base = run->data.data;
    const Item *items = run->items;
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned int flags;
    *at = 0;
    int rc = cursor_for(txn, dbi, base + items[0].off, items[0].klen, &cur, &flags);
    if (rc)
        return rc;
    Py_ssize_t i = 0;
    for (; rc == 0 && i < run->n; i++) {
        k = (MDB_val){items[i].klen, (void *)(base + items[i].off)};
        v = (MDB_val){items[i].vlen, (void *)(base + items[i].off + items[i].klen)};
        rc = lmdb->cursor_put(cur, &k, &v, flags);
    }
    lmdb->cursor_close(cur);
    *at = i - 1;
    return rc;
}

static PyObject *run_write(Run *self, PyObject *args) {
    PyObject *txn_obj, *db_obj;
    if (!PyArg_ParseTuple(args, "OO", &txn_obj, &db_obj))
        return NULL;
    MDB_txn *txn = lmdb ? lmdb->txn_of(txn_obj, 0) : NULL;
    MDB_dbi dbi;
    if (!txn || !lmdb->dbi_of(db_obj, &dbi))
        Py_RETURN_FALSE;
    if (!self->n)
        return PyLong_FromLong(0);
    int rc;
    Py_ssize_t at;
    Py_BEGIN_ALLOW_THREADS /* LMDB's work alone, as py-lmdb's puts do; the run is this caller's */
    rc = put_run(self, txn, dbi, &at);
    Py_END_ALLOW_THREADS
    lmdb->wrote(txn_obj);
    return rc ? Py_BuildValue("(in)", rc, at) : PyLong_FromLong(0);
}

/* write_runs(txn, [(run, db), ...]) -> 0, False or (index, code, element): each run sorted and written
 * as run.sort() and run.write() do, all without the GIL at once — an import's writer thread would
 * otherwise wait for it between runs while the importer's thread holds it in a long C call */
PyObject *write_runs(PyObject *module, PyObject *args) {
    PyObject *txn_obj, *pairs;
    if (!PyArg_ParseTuple(args, "OO!", &txn_obj, &PyList_Type, &pairs))
        return NULL;
    MDB_txn *txn = lmdb ? lmdb->txn_of(txn_obj, 0) : NULL;
    Py_ssize_t count = PyList_GET_SIZE(pairs), most = 0, failed = -1, at = 0;
    if (!txn)
        Py_RETURN_FALSE;
    Run **runs = PyMem_Calloc((size_t)count + 1, sizeof(Run *));
    MDB_dbi *dbis = PyMem_Calloc((size_t)count + 1, sizeof(MDB_dbi));
    if (!runs || !dbis) {
        PyMem_Free(runs);
        PyMem_Free(dbis);
        return PyErr_NoMemory();
    }
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PyList_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 0), &RunType)) {
            PyErr_SetString(PyExc_TypeError, "write_runs() takes a list of (Run, table) pairs");
            goto done;
        }
        if (!lmdb->dbi_of(PyTuple_GET_ITEM(pair, 1), &dbis[i])) {
            out = Py_NewRef(Py_False);
            goto done;
        }
        runs[i] = (Run *)PyTuple_GET_ITEM(pair, 0);
        if (runs[i]->n > most) most = runs[i]->n;
    }
    Item *tmp = most > 1 ? PyMem_Malloc((size_t)most * sizeof(Item)) : NULL;
    if (most > 1 && !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS /* the runs are the writer's and LMDB's work is LMDB's: the caller holds both */
    for (Py_ssize_t i = 0; i < count && !rc; i++) {
        Run *run = runs[i];
        if (!run->n)
            continue;
        sort_run(run, tmp);
        rc = put_run(run, txn, dbis[i], &at);
        if (rc)
            failed = i;
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(tmp);
    lmdb->wrote(txn_obj);
    out = rc ? Py_BuildValue("(nin)", failed, rc, at) : PyLong_FromLong(0);
done:
    PyMem_Free(runs);
    PyMem_Free(dbis);
    return out;
}

/* Packed runs' entries in one key order: a tree of losers (each inner node keeps the run that lost
 * the match there, tree[0] the winner), so taking the least entry replays one path to the root —
 * a compare a level, half a heap's sift (which compares both children: ~40 % of the held
 * adjacency's merge). A run with no entry left loses every match. */
typedef struct {
    Run **runs;
    Py_ssize_t count;
    Py_ssize_t *pos, *tree; /* each run's next entry; the tree (leaf i is node count + i) */
} Merge;

/* whether run a's next entry comes before run b's */
static int before(const Merge *m, Py_ssize_t a, Py_ssize_t b) {
    const Run *x = m->runs[a], *y = m->runs[b];
    if (m->pos[b] == y->n) return m->pos[a] < x->n;
    if (m->pos[a] == x->n) return 0;
    return compare_in(x->data.data, &x->items[m->pos[a]], y->data.data, &y->items[m->pos[b]]) < 0;
}

/* the subtree at `node` played: its winner, each inner node left holding its loser */
static Py_ssize_t play(Merge *m, Py_ssize_t node) {
    if (node >= m->count) return node - m->count;
    Py_ssize_t a = play(m, 2 * node), b = play(m, 2 * node + 1);
    int a_wins = before(m, a, b);
    m->tree[node] = a_wins ? b : a;
    return a_wins ? a : b;
}

/* m over `list`'s packed Runs (the list holds them meanwhile): 0, or -1 with an error set (a list of
 * something else: TypeError; memory) */
static int merge_open(Merge *m, PyObject *list, const char *who) {
    Py_ssize_t count = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < count; i++)
        if (!Py_IS_TYPE(PyList_GET_ITEM(list, i), &RunType)) {
            PyErr_Format(PyExc_TypeError, "%s() takes a list of packed Runs", who);
            return -1;
        }
    *m = (Merge){PyMem_Calloc((size_t)count + 1, sizeof(Run *)), count, PyMem_Calloc((size_t)count + 1, sizeof(Py_ssize_t)),
                 PyMem_Calloc((size_t)count + 1, sizeof(Py_ssize_t))};
    if (!m->runs || !m->pos || !m->tree) {
        PyMem_Free(m->runs);
        PyMem_Free(m->pos);
        PyMem_Free(m->tree);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        m->runs[i] = (Run *)PyList_GET_ITEM(list, i);
    if (count)
        m->tree[0] = play(m, 1);
    return 0;
}

static void merge_close(Merge *m) {
    PyMem_Free(m->runs);
    PyMem_Free(m->pos);
    PyMem_Free(m->tree);
}

/* the least entry not yet taken and its run in *run, or NULL once every entry was: the winner's
 * entry, then its path replayed with the run's next */
static const Item *merge_next(Merge *m, const Run **run) {
    if (!m->count) return NULL;
    Py_ssize_t w = m->tree[0];
    if (m->pos[w] == m->runs[w]->n) return NULL;
    *run = m->runs[w];
    const Item *item = &m->runs[w]->items[m->pos[w]++];
    for (Py_ssize_t node = (w + m->count) / 2; node >= 1; node /= 2)
        if (before(m, m->tree[node], w)) {
            Py_ssize_t was = m->tree[node];
            m->tree[node] = w;
            w = was;
        }
    m->tree[0] = w;
    return item;
}

/* the merged entries put into dbi in one key order: put_run's flags and answer */
static int put_merged(Merge *m, MDB_txn *txn, MDB_dbi dbi, Py_ssize_t *at) {
    *at = 0;
    if (!m->count || m->pos[m->tree[0]] == m->runs[m->tree[0]]->n)
        return 0; /* (no entry) */
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned int flags;
    const Run *first = m->runs[m->tree[0]]; /* (its next entry is the least) */
    const Item *least = &first->items[m->pos[m->tree[0]]];
    int rc = cursor_for(txn, dbi, first->data.data + least->off, least->klen, &cur, &flags);
    if (rc)
        return rc;
    Py_ssize_t n = 0;
    const Run *run;
    for (const Item *item; rc == 0 && (item = merge_next(m, &run)); n++) {
        k = (MDB_val){item->klen, (void *)(run->data.data + item->off)};
        v = (MDB_val){item->vlen, (void *)(run->data.data + item->off + item->klen)};
        rc = lmdb->cursor_put(cur, &k, &v, flags);
    }
    lmdb->cursor_close(cur);
    *at = n - 1;
    return rc;
}

/* write_merged(txn, db, [run, ...]) -> 0, False or (code, entry): see the top */
PyObject *write_merged(PyObject *module, PyObject *args) {
    PyObject *txn_obj, *db_obj, *list;
    if (!PyArg_ParseTuple(args, "OOO!", &txn_obj, &db_obj, &PyList_Type, &list))
        return NULL;
    MDB_txn *txn = lmdb ? lmdb->txn_of(txn_obj, 0) : NULL;
    MDB_dbi dbi;
    if (!txn || !lmdb->dbi_of(db_obj, &dbi))
        Py_RETURN_FALSE;
    Merge m;
    if (merge_open(&m, list, "write_merged") < 0)
        return NULL;
    int rc;
    Py_ssize_t at;
    Py_BEGIN_ALLOW_THREADS /* LMDB's work and the runs' memory alone, as write() */
    rc = put_merged(&m, txn, dbi, &at);
    Py_END_ALLOW_THREADS
    lmdb->wrote(txn_obj);
    merge_close(&m);
    return rc ? Py_BuildValue("(in)", rc, at) : PyLong_FromLong(0);
}

/* merged([run, ...]) -> Run: see the top */
PyObject *merged(PyObject *module, PyObject *list) {
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "merged() takes a list of packed Runs");
        return NULL;
    }
    Merge m;
    if (merge_open(&m, list, "merged") < 0)
        return NULL;
    Py_ssize_t n = 0, bytes = 0;
    for (Py_ssize_t i = 0; i < m.count; i++) {
        n += m.runs[i]->n;
        bytes += m.runs[i]->data.len;
    }
    Run *out = new_packed(n, bytes);
    if (out) {
        Py_BEGIN_ALLOW_THREADS /* the runs' memory and the new run's alone */
        const Run *run;
        for (const Item *item; (item = merge_next(&m, &run));)
            lay_out(out, run->data.data, item);
        Py_END_ALLOW_THREADS
    }
    merge_close(&m);
    return (PyObject *)out;
}

static Py_ssize_t run_len(Run *self) { return self->n; }

static PyObject *run_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Run() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);
}

static void run_dealloc(Run *self) {
    PyMem_Free(self->data.data);
    PyMem_Free(self->items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef run_methods[] = {
    {"add", (PyCFunction)run_add_py, METH_VARARGS, "append an entry"},
    {"sort", (PyCFunction)run_sort, METH_NOARGS, "sort the entries by key, in place"},
    {"entries", (PyCFunction)run_entries, METH_NOARGS, "the entries as (key, value) pairs"},
    {"clear", (PyCFunction)run_clear, METH_NOARGS, "empty the run"},
    {"cut", (PyCFunction)run_cut, METH_O, "keep the first n entries as appended (before a sort)"},
    {"nbytes", (PyCFunction)run_nbytes, METH_NOARGS, "the memory its entries take"},
    {"packed", (PyCFunction)run_packed, METH_NOARGS, "a new run of its entries sorted and laid out in key order"},
    {"write", (PyCFunction)run_write, METH_VARARGS, "write the sorted run into a table: 0, False or LMDB's error"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods run_sequence = {.sq_length = (lenfunc)run_len};

PyTypeObject RunType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "drsg.store._bulk.Run",
    .tp_basicsize = sizeof(Run),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One table's run of an import's new entries, kept in one buffer.",
    .tp_new = run_new,
    .tp_dealloc = (destructor)run_dealloc,
    .tp_methods = run_methods,
    .tp_as_sequence = &run_sequence,
};

const LmdbApi *bulk_lmdb(void) { return lmdb; }

PyObject *lmdb_strerror(PyObject *self, PyObject *code) {
    int rc = (int)PyLong_AsLong(code);
    if (rc == -1 && PyErr_Occurred())
        return NULL;
    if (!lmdb) {
        PyErr_SetString(PyExc_RuntimeError, "strerror() before bind_lmdb()");
        return NULL;
    }
    return PyUnicode_DecodeUTF8(lmdb->strerror(rc), (Py_ssize_t)strlen(lmdb->strerror(rc)), "replace");
}

PyObject *bind_lmdb(PyObject *self, PyObject *capsule) {
    const LmdbApi *api = PyCapsule_GetPointer(capsule, LMDB_API_NAME);
    if (!api)
        return NULL;
    lmdb = api;
    Py_RETURN_NONE;
}
