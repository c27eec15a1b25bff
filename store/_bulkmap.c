/* The keys an import made, kept for the whole import (store/jsonl.py), so that a later commit's lines
 * naming them are answered without an LMDB seek (look_up in _bulk.c asks it first). Upstream's edge
 * commits name ~18k keys each, all made by the import's node lines: their seeks were ~13 % of it.
 *
 * KeyMap(max_keys)           an empty map that holds at most max_keys keys and 32 * max_keys bytes of
 *                            their names (past either, a key made is not kept: its lines seek it, the
 *                            same answer)
 * map.add(key_ids)          the keys a commit gave out (BulkWrites.key_ids: str -> id, the C loop's
 *                            too), held as pending: not answered yet
 * map.publish()              the pending keys answered from now on: their LMDB transaction committed
 * map.drop()                 the pending keys forgotten: their transaction is run again (map full)
 * map.get(name)              a published key's node id, or None (the tests')
 * len(map)                   the published keys
 * map.complete               whether it holds every key it was given (False once one was left out:
 *                            the map full, or a key no look-up could ask for): an import reads keys
 *                            from it alone, ahead of its transaction, only while it is
 *
 * Only keys this import made are kept, and only once their transaction committed: no other writer
 * touches them meanwhile (a staged write's commits lie past the head, under its mark: store/staging.py),
 * and the import under --on-conflict error never deletes or re-keys a node, so each answer is the one
 * a seek would give (tests/property/test_import_key_map.py holds them equal). */
#include <string.h>

#include "_bulk.h"

enum { NAME_BYTES = 32 }; /* the names' bytes a key may use, on average */

typedef struct {
    uint64_t hash, id;
    Py_ssize_t off, len; /* the name's bytes in the arena */
} Entry;

enum { INLINE = 15, LONG = 0xff }; /* a name of up to INLINE bytes is kept in its slot too */

/* A published key's slot, open addressing: its answer and, for a short name, the name itself, so a
 * probe reads one slot — not the slot, then its entry, then the arena (three dependent cache misses,
 * ~6 % of upstream's import); two slots a cache line. */
typedef struct {
    uint32_t entry; /* the entry's index + 1; 0: empty */
    uint32_t tag;   /* the hash's high half: another name's slot is passed without reading its name */
    uint64_t id;
    uint8_t len;           /* the name's length when inline, else LONG (compared in its entry and the arena) */
    char name[INLINE];
} Slot;

typedef struct {
    PyObject_HEAD Buf arena; /* every name's bytes, back to back */
    Entry *entries;
    Py_ssize_t count, published, cap, max_keys;
    Py_ssize_t arena_published; /* the arena's length when the last publish ended */
    int left_out;               /* a key given was not kept (see complete) */
    Slot *slots;                /* at most half full */
    size_t nslots;
} KeyMap;

static uint64_t hash_of(const char *s, Py_ssize_t n) { /* FNV-1a: names are short */
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* whether a[:n] and b[:n] are equal, n <= 16: two loads from each end, overlapping (memcmp's call
 * was ~8 % of upstream's edge lines: each names two keys of a few bytes) */
static int same_short(const char *a, const char *b, size_t n) {
    if (n >= 8) {
        uint64_t x, y, z, w;
        memcpy(&x, a, 8), memcpy(&y, b, 8), memcpy(&z, a + n - 8, 8), memcpy(&w, b + n - 8, 8);
        return x == y && z == w;
    }
    if (n >= 4) {
        uint32_t x, y, z, w;
        memcpy(&x, a, 4), memcpy(&y, b, 4), memcpy(&z, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
        return x == y && z == w;
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* whether `slot` holds the name s[:n] of hash h (tag and len: h's high half and its slot length) */
static int holds(const KeyMap *map, const Slot *slot, const char *s, Py_ssize_t n, uint32_t tag, uint8_t len) {
    if (slot->tag != tag || slot->len != len) return 0;
    if (len != LONG) return same_short(slot->name, s, (size_t)n);
    const Entry *e = &map->entries[slot->entry - 1];
    return e->len == n && memcmp(map->arena.data + e->off, s, (size_t)n) == 0;
}

static uint8_t slot_len(Py_ssize_t n) { return n <= INLINE ? (uint8_t)n : LONG; }

int keymap_get(PyObject *map_obj, const char *s, Py_ssize_t n, uint64_t *id) {
    KeyMap *map = (KeyMap *)map_obj;
    if (!map->nslots) return 0;
    uint64_t h = hash_of(s, n);
    uint32_t tag = (uint32_t)(h >> 32);
    uint8_t len = slot_len(n);
    for (size_t at = h & (map->nslots - 1);; at = (at + 1) & (map->nslots - 1)) {
        const Slot *slot = &map->slots[at];
        if (!slot->entry) return 0;
        if (holds(map, slot, s, n, tag, len)) {
            *id = slot->id;
            return 1;
        }
    }
}

static int add_one(KeyMap *map, const char *s, Py_ssize_t n, uint64_t id) {
    /* full: the key's lines seek it. The names' bytes are bounded too (32 a key on average: a key
     * name may be hundreds of bytes), so the map never holds more than ~(32 + 32 + 128) * max_keys
     * (an entry, the names, slots of 32 bytes at most half full: up to four a key). */
    if (map->count >= map->max_keys || map->arena.len + n > NAME_BYTES * map->max_keys) {
        map->left_out = 1;
        return 0;
    }
    if (map->count == map->cap) {
        Entry *grown = room(map->entries, &map->cap, map->count + 1, sizeof(Entry), 1024, map->max_keys);
        if (!grown)
            return -1;
        map->entries = grown;
    }
    Py_ssize_t off = map->arena.len;
    if (put(&map->arena, s, n) < 0) return -1;
    map->entries[map->count++] = (Entry){hash_of(s, n), id, off, n};
    return 0;
}

void keymap_prefetch(PyObject *map_obj, const char *s, Py_ssize_t n) {
#if defined(__GNUC__)
    KeyMap *map = (KeyMap *)map_obj;
    if (map->nslots) __builtin_prefetch(&map->slots[hash_of(s, n) & (map->nslots - 1)]);
#endif
}

static void insert(KeyMap *map, uint32_t index) {
    const Entry *e = &map->entries[index];
    const char *s = map->arena.data + e->off;
    uint32_t tag = (uint32_t)(e->hash >> 32);
    uint8_t len = slot_len(e->len);
    for (size_t at = e->hash & (map->nslots - 1);; at = (at + 1) & (map->nslots - 1)) {
        Slot *slot = &map->slots[at];
        /* (a name there already — a key made twice — cannot be: the import refuses it; the last wins) */
        if (!slot->entry || holds(map, slot, s, e->len, tag, len)) {
            *slot = (Slot){index + 1, tag, e->id, len, {0}};
            if (len != LONG) memcpy(slot->name, s, (size_t)len);
            return;
        }
    }
}

static PyObject *keymap_publish(KeyMap *map, PyObject *unused) {
    if ((size_t)map->count * 2 > map->nslots) { /* grow to keep it at most half full, and rehash */
        size_t nslots = map->nslots ? map->nslots : 1024;
        while ((size_t)map->count * 2 > nslots) nslots *= 2;
        Slot *slots = PyMem_Calloc(nslots, sizeof(Slot));
        if (!slots) return PyErr_NoMemory();
        PyMem_Free(map->slots);
        map->slots = slots;
        map->nslots = nslots;
        map->published = 0;
    }
    for (Py_ssize_t i = map->published; i < map->count; i++) insert(map, (uint32_t)i);
    map->published = map->count;
    map->arena_published = map->arena.len;
    Py_RETURN_NONE;
}

static PyObject *keymap_drop(KeyMap *map, PyObject *unused) {
    map->count = map->published;
    map->arena.len = map->arena_published;
    Py_RETURN_NONE;
}

static PyObject *keymap_add(KeyMap *map, PyObject *args) {
    PyObject *key_ids, *name, *value;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &key_ids)) return NULL;
    Py_ssize_t pos = 0, n;
    while (PyDict_Next(key_ids, &pos, &name, &value)) {
        const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
        unsigned long long id = s && PyLong_Check(value) ? PyLong_AsUnsignedLongLong(value) : (unsigned long long)-1;
        if (!s || PyErr_Occurred()) { /* not a key look_up could ask for: leave it to the seek */
            PyErr_Clear();
            map->left_out = 1;
            continue;
        }
        if (add_one(map, s, n, id) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *keymap_get_py(KeyMap *map, PyObject *name) {
    Py_ssize_t n;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "KeyMap.get() takes a str");
        return NULL;
    }
    uint64_t id;
    return keymap_get((PyObject *)map, s, n, &id) ? PyLong_FromUnsignedLongLong(id) : Py_NewRef(Py_None);
}

static Py_ssize_t keymap_len(KeyMap *map) { return map->published; }

static PyObject *keymap_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t max_keys;
    if (!PyArg_ParseTuple(args, "n", &max_keys)) return NULL;
    if (max_keys < 0 || max_keys > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "KeyMap(max_keys): 0 to 2**30");
        return NULL;
    }
    KeyMap *map = (KeyMap *)type->tp_alloc(type, 0);
    if (map) map->max_keys = max_keys;
    return (PyObject *)map;
}

static void keymap_dealloc(KeyMap *map) {
    PyMem_Free(map->arena.data);
    PyMem_Free(map->entries);
    PyMem_Free(map->slots);
    Py_TYPE(map)->tp_free((PyObject *)map);
}

static PyMethodDef keymap_methods[] = {
    {"add", (PyCFunction)keymap_add, METH_VARARGS, "a commit's keys given out (key_ids), pending"},
    {"publish", (PyCFunction)keymap_publish, METH_NOARGS, "the pending keys answered: their transaction committed"},
    {"drop", (PyCFunction)keymap_drop, METH_NOARGS, "the pending keys forgotten: their transaction runs again"},
    {"get", (PyCFunction)keymap_get_py, METH_O, "a published key's node id, or None"},
    {NULL, NULL, 0, NULL},
};

static PyObject *keymap_complete(KeyMap *map, void *closure) { return PyBool_FromLong(!map->left_out); }

static PyGetSetDef keymap_getset[] = {
    {"complete", (getter)keymap_complete, NULL, "whether every key given is held", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods keymap_sequence = {.sq_length = (lenfunc)keymap_len};

PyTypeObject KeyMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "drsg.store._bulk.KeyMap",
    .tp_basicsize = sizeof(KeyMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The keys an import made, answered without a seek once their transaction committed.",
    .tp_new = keymap_new,
    .tp_dealloc = (destructor)keymap_dealloc,
    .tp_methods = keymap_methods,
    .tp_getset = keymap_getset,
    .tp_as_sequence = &keymap_sequence,
};
