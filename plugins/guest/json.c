#include "json.h"

#include <string.h>

/* the length of a well-formed UTF-8 sequence at s (RFC 3629 table), or 0 */
static size_t utf8_seq(const unsigned char *s, size_t left) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) n = 3;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else return 0;
    if (left < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

static void walk(buf *b, const char *s, size_t len, int escape) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq(p + i, len - i);
        if (n == 0) {
            buf_put(b, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        unsigned char c = p[i];
        if (escape && n == 1 && (c < 0x20 || c == '"' || c == '\\')) {
            buf_putc(b, '\\');
            switch (c) {
            case '"': buf_putc(b, '"'); break;
            case '\\': buf_putc(b, '\\'); break;
            case '\n': buf_putc(b, 'n'); break;
            case '\r': buf_putc(b, 'r'); break;
            case '\t': buf_putc(b, 't'); break;
            case '\b': buf_putc(b, 'b'); break;
            case '\f': buf_putc(b, 'f'); break;
            default: buf_puts(b, "u00"), buf_putc(b, hex[c >> 4]), buf_putc(b, hex[c & 15]);
            }
        } else {
            buf_put(b, p + i, n);
        }
        i += n;
    }
}

void utf8_clean(buf *b, const char *s, size_t len) { walk(b, s, len, 0); }

void json_str(buf *b, const char *s, size_t len) {
    buf_putc(b, '"');
    walk(b, s, len, 1);
    buf_putc(b, '"');
}

void json_key(buf *b, int *first, const char *key) {
    if (!*first) buf_putc(b, ',');
    *first = 0;
    json_str(b, key, strlen(key));
    buf_putc(b, ':');
}

void json_member_str(buf *b, int *first, const char *key, const char *s, size_t len) {
    json_key(b, first, key);
    json_str(b, s, len);
}

void json_member_int(buf *b, int *first, const char *key, int64_t v) {
    json_key(b, first, key);
    buf_puti(b, v);
}
