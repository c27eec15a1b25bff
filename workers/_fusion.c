/* The fused order of a hybrid query's candidates, in one call (drsg.workers.fusion.Ranking).
 *
 * Why C: a query fuses a few hundred candidates, so the work is tiny, but between the two searches
 * every numpy call runs cold (the searches evict its code and data from the caches): ~35 numpy
 * calls cost ~50 us, a third of a query's overhead over the raw libraries. This is one pass.
 *
 * rank(ids, values, shares, weights) -> (nodes, totals, positions, raw, share)
 *   ids[c]     int64 buffer: channel c's node ids (each once)
 *   values[c]  float64 buffer: their raw scores;  shares[c]: their normalised shares (unweighted)
 *   weights[c] float: channel c's weight
 * Returns bytes, every array in fused order (total descending, NaN last, ties by ascending id):
 *   nodes int64[n], totals float64[n], and channel-major [c][n]: positions int64 (-1: the channel
 *   did not see the node), raw float64 and share float64 (NaN where absent).
 *
 * A node's total is 0.0 plus each channel's weighted share in channel order, and a weight of 1 is
 * not multiplied: the same float64 operations, in the same order, as the numpy reference
 * (np.bincount over the channels laid end to end), so totals are bit-identical to it. Build with
 * -ffp-contract=off: a fused multiply-add would round differently.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_ssize_t count;
    Py_buffer *ids, *values, *shares; /* count each */
    double *weights;
} Channels;

static int is_format(const Py_buffer *view, const char *allowed) {
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    return f[0] != '\0' && f[1] == '\0' && strchr(allowed, f[0]) != NULL;
}

static int get_array(PyObject *obj, Py_buffer *view, const char *allowed, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->ndim != 1 || view->itemsize != 8 || !is_format(view, allowed)) {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-d array of 8-byte %s", what,
                     allowed[0] == 'd' ? "floats" : "integers");
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static void release(Channels *ch) {
    for (Py_ssize_t c = 0; c < ch->count; c++) {
        if (ch->ids && ch->ids[c].obj) PyBuffer_Release(&ch->ids[c]);
        if (ch->values && ch->values[c].obj) PyBuffer_Release(&ch->values[c]);
        if (ch->shares && ch->shares[c].obj) PyBuffer_Release(&ch->shares[c]);
    }
    PyMem_Free(ch->ids);
    PyMem_Free(ch->values);
    PyMem_Free(ch->shares);
    PyMem_Free(ch->weights);
}

static int read_channels(PyObject *ids, PyObject *values, PyObject *shares, PyObject *weights, Channels *ch) {
    PyObject *seqs[4] = {NULL, NULL, NULL, NULL};
    PyObject *args[4] = {ids, values, shares, weights};
    int ok = -1;
    memset(ch, 0, sizeof(*ch));
    for (int i = 0; i < 4; i++) {
        seqs[i] = PySequence_Fast(args[i], "rank() takes four sequences: ids, values, shares, weights");
        if (!seqs[i]) goto done;
    }
    ch->count = PySequence_Fast_GET_SIZE(seqs[0]);
    for (int i = 1; i < 4; i++) {
        if (PySequence_Fast_GET_SIZE(seqs[i]) != ch->count) {
            PyErr_SetString(PyExc_ValueError, "rank() needs ids, values, shares and weights for every channel");
            goto done;
        }
    }
    Py_ssize_t n = ch->count ? ch->count : 1;
    ch->ids = PyMem_Calloc(n, sizeof(Py_buffer));
    ch->values = PyMem_Calloc(n, sizeof(Py_buffer));
    ch->shares = PyMem_Calloc(n, sizeof(Py_buffer));
    ch->weights = PyMem_Calloc(n, sizeof(double));
    if (!ch->ids || !ch->values || !ch->shares || !ch->weights) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < ch->count; c++) {
        if (get_array(PySequence_Fast_GET_ITEM(seqs[0], c), &ch->ids[c], "ql", "ids") < 0) goto done;
        if (get_array(PySequence_Fast_GET_ITEM(seqs[1], c), &ch->values[c], "d", "values") < 0) goto done;
        if (get_array(PySequence_Fast_GET_ITEM(seqs[2], c), &ch->shares[c], "d", "shares") < 0) goto done;
        if (ch->values[c].shape[0] != ch->ids[c].shape[0] || ch->shares[c].shape[0] != ch->ids[c].shape[0]) {
            PyErr_SetString(PyExc_ValueError, "a channel needs as many values and shares as node ids");
            goto done;
        }
        ch->weights[c] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seqs[3], c));
        if (ch->weights[c] == -1.0 && PyErr_Occurred()) goto done;
    }
    ok = 0;
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(seqs[i]);
    return ok;
}

/* a before b in the fused order: total descending, NaN last, ties by ascending node id */
static inline int before(const double *total, const int64_t *node, Py_ssize_t a, Py_ssize_t b) {
    double ta = total[a], tb = total[b];
    if (ta > tb) return 1;
    if (ta < tb) return 0;
    int na = isnan(ta), nb = isnan(tb);
    if (na != nb) return nb;
    return node[a] < node[b];
}

/* bottom-up merge sort of order[0..n) (the comparison inlined: no call per comparison) */
static void sort_order(Py_ssize_t *order, Py_ssize_t *tmp, Py_ssize_t n, const double *total, const int64_t *node) {
    Py_ssize_t *src = order, *dst = tmp;
    for (Py_ssize_t width = 1; width < n; width *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {
            Py_ssize_t mid = lo + width < n ? lo + width : n;
            Py_ssize_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = before(total, node, src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        Py_ssize_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != order) memcpy(order, src, (size_t)n * sizeof(Py_ssize_t));
}

static inline uint64_t hash_id(int64_t id) { return (uint64_t)id * 0x9E3779B97F4A7C15ull; }

static PyObject *rank(PyObject *self, PyObject *args) {
    PyObject *ids_arg, *values_arg, *shares_arg, *weights_arg;
    if (!PyArg_ParseTuple(args, "OOOO:rank", &ids_arg, &values_arg, &shares_arg, &weights_arg)) return NULL;
    Channels ch;
    if (read_channels(ids_arg, values_arg, shares_arg, weights_arg, &ch) < 0) {
        release(&ch);
        return NULL;
    }
    Py_ssize_t entries = 0;
    for (Py_ssize_t c = 0; c < ch.count; c++) entries += ch.ids[c].shape[0];
    Py_ssize_t cap = 16, C = ch.count;
    while (cap < 2 * entries) cap *= 2;
    int bits = 0;
    while (((Py_ssize_t)1 << bits) < cap) bits++;

    PyObject *result = NULL;
    int64_t *keys = PyMem_Malloc((size_t)cap * sizeof(int64_t));
    Py_ssize_t *slot_of = PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
    int64_t *node = PyMem_Malloc((size_t)(entries + 1) * sizeof(int64_t));
    double *total = PyMem_Malloc((size_t)(entries + 1) * sizeof(double));
    Py_ssize_t *where = PyMem_Malloc((size_t)(C * entries + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *order = PyMem_Malloc((size_t)(2 * entries + 1) * sizeof(Py_ssize_t));
    if (!keys || !slot_of || !node || !total || !where || !order) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t h = 0; h < cap; h++) slot_of[h] = -1;

    /* Group the entries by node, channel by channel: each total accumulates in channel order. */
    Py_ssize_t n = 0;
    for (Py_ssize_t c = 0; c < C; c++) {
        const int64_t *ids = ch.ids[c].buf;
        const double *share = ch.shares[c].buf;
        double w = ch.weights[c];
        Py_ssize_t len = ch.ids[c].shape[0];
        for (Py_ssize_t p = 0; p < len; p++) {
            int64_t id = ids[p];
            size_t h = (size_t)(hash_id(id) >> (64 - bits));
            while (slot_of[h] >= 0 && keys[h] != id) h = (h + 1) & (size_t)(cap - 1);
            Py_ssize_t s = slot_of[h];
            if (s < 0) {
                s = slot_of[h] = n++;
                keys[h] = id;
                node[s] = id;
                total[s] = 0.0;
                for (Py_ssize_t o = 0; o < C; o++) where[o * entries + s] = -1;
            }
            total[s] += w == 1.0 ? share[p] : w * share[p];
            where[c * entries + s] = p;
        }
    }
    for (Py_ssize_t s = 0; s < n; s++) order[s] = s;
    sort_order(order, order + entries, n, total, node);

    PyObject *nodes_b = PyBytes_FromStringAndSize(NULL, n * 8);
    PyObject *totals_b = PyBytes_FromStringAndSize(NULL, n * 8);
    PyObject *pos_b = PyBytes_FromStringAndSize(NULL, C * n * 8);
    PyObject *raw_b = PyBytes_FromStringAndSize(NULL, C * n * 8);
    PyObject *share_b = PyBytes_FromStringAndSize(NULL, C * n * 8);
    if (nodes_b && totals_b && pos_b && raw_b && share_b) {
        int64_t *nodes_o = (int64_t *)PyBytes_AS_STRING(nodes_b);
        double *totals_o = (double *)PyBytes_AS_STRING(totals_b);
        int64_t *pos_o = (int64_t *)PyBytes_AS_STRING(pos_b);
        double *raw_o = (double *)PyBytes_AS_STRING(raw_b);
        double *share_o = (double *)PyBytes_AS_STRING(share_b);
        for (Py_ssize_t r = 0; r < n; r++) {
            Py_ssize_t s = order[r];
            nodes_o[r] = node[s];
            totals_o[r] = total[s];
        }
        for (Py_ssize_t c = 0; c < C; c++) {
            const double *value = ch.values[c].buf, *share = ch.shares[c].buf;
            for (Py_ssize_t r = 0; r < n; r++) {
                Py_ssize_t p = where[c * entries + order[r]];
                pos_o[c * n + r] = p;
                raw_o[c * n + r] = p >= 0 ? value[p] : NAN;
                share_o[c * n + r] = p >= 0 ? share[p] : NAN;
            }
        }
        result = PyTuple_Pack(5, nodes_b, totals_b, pos_b, raw_b, share_b);
    }
    Py_XDECREF(nodes_b);
    Py_XDECREF(totals_b);
    Py_XDECREF(pos_b);
    Py_XDECREF(raw_b);
    Py_XDECREF(share_b);
done:
    PyMem_Free(keys);
    PyMem_Free(slot_of);
    PyMem_Free(node);
    PyMem_Free(total);
    PyMem_Free(where);
    PyMem_Free(order);
    release(&ch);
    return result;
}

/* A dict with `lead` names first (None each), then each channel that saw row r: name -> column[r]. */
static PyObject *row_dict(PyObject *lead, PyObject *names, const int64_t *pos, const double *col, Py_ssize_t n,
                          Py_ssize_t r) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lead); i++)
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(lead, i), Py_None) < 0) goto fail;
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(names); c++) {
        if (pos[c * n + r] < 0) continue;
        PyObject *x = PyFloat_FromDouble(col[c * n + r]);
        if (!x) goto fail;
        int bad = PyDict_SetItem(d, PyTuple_GET_ITEM(names, c), x);
        Py_DECREF(x);
        if (bad < 0) goto fail;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *entries(PyObject *self, PyObject *args) {
    PyObject *names, *lead;
    Py_buffer nodes_v, totals_v, pos_v, raw_v, share_v;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "(y*y*y*y*y*)O!O!nn:entries", &nodes_v, &totals_v, &pos_v, &raw_v, &share_v,
                          &PyTuple_Type, &names, &PyTuple_Type, &lead, &start, &stop))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = nodes_v.len / 8, C = PyTuple_GET_SIZE(names);
    if (totals_v.len != n * 8 || pos_v.len != C * n * 8 || raw_v.len != C * n * 8 || share_v.len != C * n * 8) {
        PyErr_SetString(PyExc_ValueError, "entries() needs rank()'s result and its channel names");
        goto done;
    }
    if (start < 0) start = 0;
    if (stop > n) stop = n;
    out = PyList_New(stop > start ? stop - start : 0);
    if (!out) goto done;
    const int64_t *node = nodes_v.buf, *pos = pos_v.buf;
    const double *total = totals_v.buf, *raw = raw_v.buf, *share = share_v.buf;
    for (Py_ssize_t r = start; r < stop; r++) {
        PyObject *entry = Py_BuildValue("(LdNN)", (long long)node[r], total[r], row_dict(lead, names, pos, raw, n, r),
                                        row_dict(lead, names, pos, share, n, r));
        if (!entry) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, r - start, entry);
    }
done:
    PyBuffer_Release(&nodes_v);
    PyBuffer_Release(&totals_v);
    PyBuffer_Release(&pos_v);
    PyBuffer_Release(&raw_v);
    PyBuffer_Release(&share_v);
    return out;
}

static PyMethodDef methods[] = {
    {"rank", rank, METH_VARARGS,
     "rank(ids, values, shares, weights) -> (nodes, totals, positions, raw, share): the fused order, as bytes."},
    {"entries", entries, METH_VARARGS,
     "entries(ranked, names, lead, start, stop) -> [(node, total, raw per channel, share per channel)] for rows "
     "start..stop of rank()'s result; `lead` names come first in each dict (None unless seen)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fusion", "The fused order of hybrid candidates.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fusion(void) { return PyModule_Create(&module); }
