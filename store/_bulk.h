/* What store/_bulk.c, store/_bulklines.c and store/_bulkrun.c share: a growing byte buffer,
 * msgpack-python's forms of what they pack, the entries of one new node or edge (_bulk.c's node() and
 * edge()) and the runs they go to (_bulkrun.c). */
#ifndef DRSG_BULK_H
#define DRSG_BULK_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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
PyObject *lines(PyObject *self, PyObject *args);

/* store/_bulkrun.c: a table's run (Run) */
extern PyTypeObject RunType;
int run_add(PyObject *run, const char *key, Py_ssize_t klen, const char *value, Py_ssize_t vlen);
int run_last_value(PyObject *run, const char **value, Py_ssize_t *vlen); /* into the run's buffer */
PyObject *bind_lmdb(PyObject *self, PyObject *capsule);
PyObject *lmdb_strerror(PyObject *self, PyObject *code);

#endif
