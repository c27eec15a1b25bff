/* The rows a read returns, made in C (store/_walk.c's other half): records decoded as msgpack reads
 * them and the Edge, Neighbor and Node objects made as their dataclass __init__ makes them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_walk.h"

/* The records a walk returns (drsg.store.records: slots dataclasses, no __post_init__, checked by
 * store/native.py), made as their __init__ would make them: allocated, then each slot set through
 * its member descriptor. `finish` is the Python path's own decoding, for a record this file does
 * not decode (a described value, a shape other than [src, dst, type, props], damage): it makes the
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

PyObject *walk_records(PyObject *self, PyObject *args) {
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

int walk_records_bound(void) { return finish != NULL && finish_node != NULL; }

/* The vector type (kernel/values.py's Vector, a slots dataclass of one `data` field) and its
 * extension code: a search's hits and an index build read a vector per node, which msgpack hands to
 * a Python ext_hook (~1 µs each); made here as that hook makes it. Unbound: left to Python. */
static PyTypeObject *vector_type;
static PyObject *vector_data;
static int vector_code = -1;

PyObject *walk_vectors(PyObject *self, PyObject *args) {
    PyObject *type, *name;
    int code;
    if (!PyArg_ParseTuple(args, "O!Ui", &PyType_Type, &type, &name, &code)) return NULL;
    PyObject *member = PyObject_GetAttr(type, name);
    if (member && Py_TYPE(member) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "%R is not a slot of %R", name, type);
        Py_CLEAR(member);
    }
    if (!member) return NULL;
    if (code < -128 || code > 127) {
        Py_DECREF(member);
        PyErr_SetString(PyExc_ValueError, "an extension code is -128 to 127");
        return NULL;
    }
    Py_XSETREF(vector_data, member);
    Py_XSETREF(vector_type, (PyTypeObject *)Py_NewRef(type));
    vector_code = code;
    Py_RETURN_NONE;
}

/* An extension value of `n` bytes at `p` (its type byte before them): a vector when it is one,
 * else NULL (the Python path's: a described value, an unknown code). */
static PyObject *extension(int code, const unsigned char *p, uint64_t n) {
    if (!vector_type || code != vector_code) return NULL;
    PyObject *data = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    if (!data) return NULL;
    PyObject *vector = vector_type->tp_alloc(vector_type, 0);
    if (vector && Py_TYPE(vector_data)->tp_descr_set(vector_data, vector, data) < 0) Py_CLEAR(vector);
    Py_DECREF(data);
    return vector;
}

/* ---- msgpack, as msgpack.unpackb(raw=False, strict_map_key=False, ext_hook=values._ext_hook) reads
 * it, for the types records hold, vectors included (described values, an extension holding msgpack,
 * are left to Python). NULL (any Python error cleared by the caller): not decoded here. */
#define MAX_DEPTH 32

static int need(const unsigned char *p, const unsigned char *end, size_t n) { return (size_t)(end - p) >= n; }

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
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext 1/2/4/8/16 */
        n = (uint64_t)1 << (c - 0xd4);
        if (!need(p, end, 1 + n)) return NULL;
        *at = p + 1 + n;
        return extension((signed char)*p, p + 1, n);
    case 0xc7: case 0xc8: case 0xc9: /* ext 8/16/32 */
        width = 1 << (c - 0xc7);
        if (!need(p, end, width + 1)) return NULL;
        n = be(p, width);
        p += width;
        if (!need(p + 1, end, n)) return NULL;
        *at = p + 1 + n;
        return extension((signed char)*p, p + 1, n);
    default: /* 0xc1 (never used): the Python path's */
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
PyObject *walk_neighbor_of(PyObject *plane, uint64_t edge_id, uint64_t other, PyObject *direction,
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
PyObject *walk_node_of(PyObject *plane, uint64_t node_id, const unsigned char *record, size_t size) {
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
