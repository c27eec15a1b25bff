/* What store/_bulk.c and store/_bulklines.c share: a growing byte buffer, msgpack-python's forms
 * of what they pack, and the entries of one new node or edge (_bulk.c's node() and edge()). */
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

#endif
