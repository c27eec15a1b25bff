/* What store/_walk.c and store/_records.c share (one extension module, drsg.store._walk). */
#ifndef DRSG_WALK_H
#define DRSG_WALK_H

#include <Python.h>
#include <stdint.h>

/* A big-endian unsigned integer of n bytes (keys' ids and seqs, msgpack's lengths and numbers). */
static inline uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* records(Edge, Neighbor, Node, their field names x3, finish, finish_node): see _walk.c */
PyObject *walk_records(PyObject *self, PyObject *args);
/* vectors(Vector, "data", code): the vector type its extension code decodes to (else Python's). */
PyObject *walk_vectors(PyObject *self, PyObject *args);
/* Whether records() was called: no row can be made before. */
int walk_records_bound(void);
/* The Neighbor of one edge record at `other`'s end; NULL with an error set. */
PyObject *walk_neighbor_of(PyObject *plane, uint64_t edge_id, uint64_t other, PyObject *direction,
                           const unsigned char *record, size_t size);
/* The Node of one node record; NULL with an error set. */
PyObject *walk_node_of(PyObject *plane, uint64_t node_id, const unsigned char *record, size_t size);

#endif
