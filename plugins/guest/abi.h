/* The canonical ABI of the component model, by hand, for the one world drsg:preprocess@1.0.0/plugin.
 *
 * wasm32 pointers and lengths are 32-bit, so these structs lay out exactly as the canonical ABI lays out
 * the WIT types (every field aligns to 4; a variant's case tag is one byte followed by its payload at
 * the payload's alignment). The _Static_asserts below pin every size and offset. */
#ifndef DRSG_GUEST_ABI_H
#define DRSG_GUEST_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct { const char *ptr; uint32_t len; } wstr;           /* string, list<u8> */
typedef struct { void *ptr; uint32_t len; } wlist;                /* list<T> */
typedef struct { wstr key, value; } wpair;                        /* tuple<string, string> */
typedef struct { wstr key, label; wlist extra_labels; wstr properties; } wnode;
typedef struct { wstr src, dst, type, properties; } wedge;
typedef struct { uint32_t facts, prose_chars, skipped; wlist notes; } wreport;
typedef struct { wlist nodes, edges; wstr prose; wreport report; } woutput;
typedef struct { wstr name, version; wlist extensions; uint8_t logo_is_some; wstr logo; } wmanifest;
typedef struct { uint8_t is_err; union { wlist ok; wstr err; } v; } wresult_list;   /* result<list<_>, string> */
typedef struct { uint8_t is_err; union { woutput ok; wstr err; } v; } wresult_output;
typedef struct { uint8_t is_some; wstr value; } woption_str;

#ifdef __wasm32__ /* the canonical layouts (a native build, for the benchmark, has 64-bit pointers) */
_Static_assert(sizeof(wstr) == 8 && sizeof(wlist) == 8 && sizeof(wpair) == 16, "string/list/tuple");
_Static_assert(sizeof(wnode) == 32 && sizeof(wedge) == 32, "node/edge records");
_Static_assert(sizeof(wreport) == 20 && offsetof(wreport, notes) == 12, "report record");
_Static_assert(sizeof(woutput) == 44 && offsetof(woutput, report) == 24, "output record");
_Static_assert(sizeof(wmanifest) == 36 && offsetof(wmanifest, logo_is_some) == 24 && offsetof(wmanifest, logo) == 28,
               "manifest record: option<string> tag at 24, payload at 28");
_Static_assert(sizeof(wresult_list) == 12 && offsetof(wresult_list, v) == 4, "result<list, string>");
_Static_assert(sizeof(wresult_output) == 48 && offsetof(wresult_output, v) == 4, "result<output, string>");
_Static_assert(sizeof(woption_str) == 12 && offsetof(woption_str, value) == 4, "option<string>");
#endif

/* ---- a growable byte buffer (malloc'd; a fresh instance per call, so nothing is ever given back) */
typedef struct { char *data; uint32_t len, cap; } buf;
void buf_put(buf *b, const void *data, size_t len);
void buf_putc(buf *b, char c);
void buf_puts(buf *b, const char *s);
void buf_putu(buf *b, uint64_t v);
void buf_puti(buf *b, int64_t v);
wstr buf_wstr(const buf *b);

/* ---- an arena: bump allocation in big blocks, reset as a whole */
typedef struct arena_block arena_block;
typedef struct { arena_block *head; } arena;
void *arena_alloc(arena *a, size_t size);
char *arena_strndup(arena *a, const char *s, size_t len);
void arena_reset(arena *a);
void *xmalloc(size_t size);
void *xrealloc(void *p, size_t size);

wstr wstr_c(const char *s);
int wstr_eq(wstr a, const char *s);

/* ---- the host interface (drsg:preprocess/host@1.0.0); 0 ok, 1 error with *err set */
int host_list(wstr suffix, wstr **items, uint32_t *count, wstr *err);
int host_read(wstr path, wstr *bytes, wstr *err);
int host_label(wstr *label); /* 1 when the host names the tree */

/* ---- what a plugin implements (one per plugin; plugins/<name>/) */
void plugin_describe(wmanifest *out);
/* one chunk: is_doc chooses input.document(doc_name, doc_bytes) or input.files(files) */
int plugin_parse(int is_doc, wstr doc_name, wstr doc_bytes, const wstr *files, uint32_t nfiles, const wpair *options,
                 uint32_t noptions, buf *partial, buf *error);
int plugin_assemble(const wstr *partials, uint32_t npartials, const wpair *options, uint32_t noptions, woutput *out,
                    buf *error);

#endif
