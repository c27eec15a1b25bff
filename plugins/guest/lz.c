#include "lz.h"

#include <stdlib.h>
#include <string.h>

#define HASH_BITS 16
#define MIN_MATCH 4
#define MAX_DISTANCE (1u << 20)

static void varint(buf *b, uint32_t v) {
    while (v >= 0x80) buf_putc(b, (char)(v | 0x80)), v >>= 7;
    buf_putc(b, (char)v);
}

static int read_varint(const unsigned char **p, const unsigned char *end, uint32_t *v) {
    uint32_t out = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*p >= end) return 1;
        unsigned char c = *(*p)++;
        out |= (uint32_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return *v = out, 0;
    }
    return 1;
}

static uint32_t hash4(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

void lz_compress(const char *data, uint32_t len, buf *out) {
    const unsigned char *s = (const unsigned char *)data;
    uint32_t *table = xmalloc(sizeof(uint32_t) << HASH_BITS);
    memset(table, 0xff, sizeof(uint32_t) << HASH_BITS);
    buf_putc(out, 'Z');
    varint(out, len);
    uint32_t i = 0, literal = 0;
    while (i + MIN_MATCH <= len) {
        uint32_t h = hash4(s + i), candidate = table[h];
        table[h] = i;
        if (candidate != 0xffffffffu && i - candidate <= MAX_DISTANCE && !memcmp(s + candidate, s + i, MIN_MATCH)) {
            uint32_t n = MIN_MATCH;
            while (i + n < len && s[candidate + n] == s[i + n]) n++;
            varint(out, i - literal);
            buf_put(out, s + literal, i - literal);
            varint(out, n);
            varint(out, i - candidate);
            for (uint32_t k = i + 1; k < i + n && k + MIN_MATCH <= len; k += 2) table[hash4(s + k)] = k;
            i += n;
            literal = i;
        } else {
            i++;
        }
    }
    varint(out, len - literal);
    buf_put(out, s + literal, len - literal);
    varint(out, 0);
    free(table);
}

int lz_decompress(const char *in, uint32_t len, buf *out) {
    const unsigned char *p = (const unsigned char *)in, *end = p + len;
    uint32_t raw, n, distance;
    if (p >= end || *p++ != 'Z' || read_varint(&p, end, &raw)) return 1;
    out->len = 0;
    if (raw) buf_put(out, "", 0), out->data = xrealloc(out->data, raw), out->cap = raw;
    for (;;) {
        if (read_varint(&p, end, &n) || n > (uint32_t)(end - p) || out->len + n > raw) return 1;
        buf_put(out, p, n);
        p += n;
        if (read_varint(&p, end, &n)) return 1;
        if (n == 0) break;
        if (read_varint(&p, end, &distance) || distance == 0 || distance > out->len || out->len + n > raw) return 1;
        for (uint32_t k = 0; k < n; k++) out->data[out->len + k] = out->data[out->len - distance + k];
        out->len += n;
    }
    return out->len == raw && p == end ? 0 : 1;
}
