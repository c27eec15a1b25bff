/* LMDB's C API as drsg's extensions call it (lmdb.h, LMDB 0.9: only what they use), and what
 * store/_walk.c hands another extension once bind() found LMDB's functions in py-lmdb's extension
 * and drsg.store.native checked the layout: store/_bulkrun.c writes an import's runs with it. */
#ifndef DRSG_LMDB_H
#define DRSG_LMDB_H
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef struct {
    size_t mv_size;
    void *mv_data;
} MDB_val;
enum { MDB_GET_CURRENT = 4, MDB_LAST = 6, MDB_NEXT = 8, MDB_SET_RANGE = 17 };
#define MDB_APPEND 0x20000
#define MDB_NOTFOUND (-30798)

/* The capsule store/_walk.c's lmdb_api() returns (named LMDB_API_NAME). txn_of(txn, 0): the MDB_txn of
 * a live py-lmdb Transaction, NULL if it is none; dbi_of: a _Database's handle, 0 if it is none;
 * wrote(txn): tell py-lmdb its transaction changed (its cursors read their place again). */
#define LMDB_API_NAME "drsg.store._walk.lmdb_api"
typedef struct {
    MDB_txn *(*txn_of)(PyObject *txn, int read_only);
    int (*dbi_of)(PyObject *db, MDB_dbi *dbi);
    void (*wrote)(PyObject *txn);
    int (*cursor_open)(MDB_txn *, MDB_dbi, MDB_cursor **);
    void (*cursor_close)(MDB_cursor *);
    int (*cursor_get)(MDB_cursor *, MDB_val *, MDB_val *, int);
    int (*cursor_put)(MDB_cursor *, MDB_val *, MDB_val *, unsigned int);
    char *(*strerror)(int);
    /* key_id(cursor on keys, key group, its length, inv_at, &id, &err): the node a key group names
     * at inv_at (store/_walk.c's key_ids, one key): KEY_FOUND and *id, KEY_NONE, KEY_PYTHON (the
     * Python path must judge), or KEY_FAILED and LMDB's *err */
    int (*key_id)(MDB_cursor *cur, const char *group, size_t len, const char *inv_at, uint64_t *id, int *err);
} LmdbApi;
enum { KEY_NONE = 0, KEY_FOUND = 1, KEY_PYTHON = 2, KEY_FAILED = 3 };

#endif
