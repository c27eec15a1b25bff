/* The portable half of the guest runtime: memory, buffers, an arena, string helpers. Nothing here
 * knows it runs in WebAssembly (the benchmark links it natively too, for the native-vs-wasm ratio). */
#include <stdlib.h>
#include <string.h>

#include "abi.h"

void *xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) __builtin_trap();
    return p;
}

void *xrealloc(void *p, size_t size) {
    void *q = realloc(p, size ? size : 1);
    if (!q) __builtin_trap();
    return q;
}

struct arena_block { arena_block *next; size_t used, cap; char data[]; };

void *arena_alloc(arena *a, size_t size) {
    size = (size + 7) & ~(size_t)7;
    arena_block *b = a->head;
    if (!b || b->used + size > b->cap) {
        size_t cap = size > (1u << 20) ? size : (1u << 20);
        b = xmalloc(sizeof(arena_block) + cap);
        b->next = a->head, b->used = 0, b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t len) {
    char *p = arena_alloc(a, len + 1);
    memcpy(p, s, len);
    p[len] = 0;
    return p;
}

void arena_reset(arena *a) {
    while (a->head) {
        arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

void buf_put(buf *b, const void *data, size_t len) {
    if (b->len + len > b->cap) {
        uint32_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len) cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += (uint32_t)len;
}

void buf_putc(buf *b, char c) { buf_put(b, &c, 1); }
void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_putu(buf *b, uint64_t v) {
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10), v /= 10; while (v);
    while (n) buf_putc(b, tmp[--n]);
}

void buf_puti(buf *b, int64_t v) {
    if (v < 0) buf_putc(b, '-'), v = -v;
    buf_putu(b, (uint64_t)v);
}

wstr buf_wstr(const buf *b) { return (wstr){b->data ? b->data : "", b->len}; }
wstr wstr_c(const char *s) { return (wstr){s, (uint32_t)strlen(s)}; }
int wstr_eq(wstr a, const char *s) { return a.len == strlen(s) && memcmp(a.ptr, s, a.len) == 0; }
