/* What store/_bulk.c, store/_bulklines.c and store/_bulkrun.c share: a growing byte buffer,
 * msgpack-python's forms of what they pack, the entries of one new node or edge (_bulk.c's node() and
 * edge()) and the runs they go to (_bulkrun.c). */
#ifndef DRSG_BULK_H
#define DRSG_BULK_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_lmdb.h"

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

/* `array` (holding *cap elements of `size` bytes) with room for n, reallocated to a doubling of *cap
 * (of `first` when 0), never past `most` (0: no bound): the array, maybe moved, *cap updated; NULL
 * with MemoryError set, the array and *cap as they were. Every growing array of the extensions grows by it. */
void *room(void *array, Py_ssize_t *cap, Py_ssize_t n, size_t size, Py_ssize_t first, Py_ssize_t most);
int grow(Buf *b, Py_ssize_t more);
int put(Buf *b, const void *src, Py_ssize_t n);
int put_be(Buf *b, uint64_t v, int width);
int put_byte(Buf *b, unsigned char c);
int pack_uint(Buf *b, uint64_t v);
int pack_str(Buf *b, const char *s, Py_ssize_t n);
PyObject *node(PyObject *self, PyObject *args);
PyObject *edge(PyObject *self, PyObject *args);
/* What node() and edge() append, on C arguments (the C line loop's): runs are three Runs (runs_of),
 * inv 8 bytes, props packed; labels a list of strs. 0, or -1 with an error set. */
int runs_of(PyObject *runs, PyObject *out[3]);
int node_entries(PyObject *runs[3], unsigned int plane, uint64_t node_id, const char *key_s, Py_ssize_t key_n,
                 PyObject *labels, const char *inv, const char *props, Py_ssize_t props_n);
int edge_entries(PyObject *runs[3], unsigned int plane, uint64_t edge_id, uint64_t src, uint64_t dst, const char *t,
                 Py_ssize_t tn, const char *inv, const char *props, Py_ssize_t props_n);
PyObject *lines(PyObject *self, PyObject *args);
PyObject *mutation_slots(PyObject *self, PyObject *args);

/* store/_bulkscan.c: a commit's raw lines of the common shapes read in C (Scan), no Python object a
 * line. A line's strings are ASCII without escapes, so each is its bytes: a Span of its line. */
typedef struct {
    uint32_t off, len;
} Span;
enum { TOK_STR, TOK_INT, TOK_FLOAT, TOK_TRUE, TOK_FALSE, TOK_NULL };
typedef struct {
    unsigned char kind;
    Span s;
    union {
        long long i;
        double d;
    } v;
} Tok;
enum { LINE_OTHER = 0, LINE_NODE = 1, LINE_EDGE = 2 }; /* OTHER: the dict path's (msgspec) */
typedef struct {
    const char *text; /* the line's bytes (the Scan holds them) */
    unsigned char kind;
    int32_t key, src, dst; /* their occurrence (Scan.occ), -1: none */
    Span type;
    uint32_t labels, n_labels, props, n_props; /* into toks: labels' strs; props' (name, value) pairs */
} ScanLine;
/* A key name as a line names it; after look_up, `key` is its entry in Scan.keys. */
typedef struct {
    const char *s;
    Py_ssize_t n;
    int32_t key;
} Occ;
enum { KEY_ABSENT, KEY_IN_FILE, KEY_GIVEN }; /* looked up and not there; there; made by the C loop */
typedef struct {
    const char *s;
    Py_ssize_t n;
    unsigned char state;
    uint64_t id;
    PyObject *boxed; /* the id as an int, made once (owned), or NULL */
} Key;
typedef struct {
    PyObject_HEAD PyObject *raws; /* a tuple of the lines' bytes */
    ScanLine *lines;
    Py_ssize_t n;
    Tok *toks;
    Py_ssize_t ntoks, captoks;
    Occ *occ;
    Py_ssize_t nocc, capocc;
    Key *keys; /* once look_up resolved them (resolved = 1): one per distinct name the import's map
                  did not hold (a key a line gives out is one entry); one per line's end it did (never given) */
    Py_ssize_t nkeys;
    int resolved;
    PyObject *names[16]; /* strs made for names (labels, types, property names), shared by lines */
    int nnames;
} Scan;
extern PyTypeObject ScanType;
/* a str for a name's bytes (new reference), shared among the scan's lines */
PyObject *scan_name(Scan *scan, const char *s, Py_ssize_t n);
PyObject *ascii_str(const char *s, Py_ssize_t n);
int scan_keys_add(Scan *scan, Py_ssize_t nkeys); /* room for nkeys keys; 0 or -1 */

/* store/_bulkmap.c: the keys an import made (KeyMap); 1 and *id when map holds name, else 0 */
extern PyTypeObject KeyMapType;
int keymap_get(PyObject *map, const char *s, Py_ssize_t n, uint64_t *id);
/* the slot keymap_get(map, s, n) reads first, brought into the cache ahead of it (the probes of a
 * commit's names land all over the map: each a cache miss, ~5 % of upstream's import, if not asked early) */
void keymap_prefetch(PyObject *map, const char *s, Py_ssize_t n);

/* store/_bulkrun.c: a table's run (Run) */
extern PyTypeObject RunType;
int run_add(PyObject *run, const char *key, Py_ssize_t klen, const char *value, Py_ssize_t vlen);
/* an entry written in place: run_room's klen + vlen bytes (its key, then its value; NULL with an error
 * set), then run_seal(run) once they are there — no buffer to copy them from */
char *run_room(PyObject *run, Py_ssize_t klen, Py_ssize_t vlen);
void run_seal(PyObject *run);
int run_last_value(PyObject *run, const char **value, Py_ssize_t *vlen); /* into the run's buffer */
PyObject *bind_lmdb(PyObject *self, PyObject *capsule);
PyObject *lmdb_strerror(PyObject *self, PyObject *code);
PyObject *write_runs(PyObject *module, PyObject *args);
PyObject *write_merged(PyObject *module, PyObject *args);
PyObject *merged(PyObject *module, PyObject *list);
const LmdbApi *bulk_lmdb(void); /* NULL until bind_lmdb() */

#endif
