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

/* store/_bulkrun.c: a table's run (Run) */
extern PyTypeObject RunType;
int run_add(PyObject *run, const char *key, Py_ssize_t klen, const char *value, Py_ssize_t vlen);
int run_last_value(PyObject *run, const char **value, Py_ssize_t *vlen); /* into the run's buffer */
PyObject *bind_lmdb(PyObject *self, PyObject *capsule);
PyObject *lmdb_strerror(PyObject *self, PyObject *code);
const LmdbApi *bulk_lmdb(void); /* NULL until bind_lmdb() */

#endif
