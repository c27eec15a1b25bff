/* The stand-ins ts_prelude.h routes the tree-sitter runtime's stdio and clock calls to. */
#include "ts_prelude.h"

#include <stdint.h>

FILE *const drsg_no_stream = 0;
FILE *drsg_fdopen(int fd, const char *mode) { (void)fd, (void)mode; return 0; }
int drsg_fclose(FILE *f) { (void)f; return 0; }
int drsg_fprintf(FILE *f, const char *format, ...) { (void)f, (void)format; return 0; }
int drsg_fputc(int c, FILE *f) { (void)f; return c; }
size_t drsg_fwrite(const void *p, size_t size, size_t n, FILE *f) { (void)p, (void)size, (void)f; return n; }
int drsg_clock_gettime(clockid_t clock, struct timespec *ts) {
    (void)clock;
    ts->tv_sec = 0, ts->tv_nsec = 0; /* frozen, like the host's clocks */
    return 0;
}

static void put(char *out, size_t n, size_t *at, char c) {
    if (*at + 1 < n) out[*at] = c;
    (*at)++;
}

int drsg_vsnprintf(char *out, size_t n, const char *f, va_list ap) {
    size_t at = 0;
    for (; *f; f++) {
        if (*f != '%') {
            put(out, n, &at, *f);
            continue;
        }
        f++;
        while (*f == '-' || *f == '+' || *f == ' ' || *f == '#' || *f == '0' || (*f >= '1' && *f <= '9') || *f == '.')
            f++;
        int longs = 0;
        while (*f == 'l' || *f == 'z' || *f == 'h') longs += *f != 'h', f++;
        char tmp[24];
        int len = 0;
        unsigned long long u = 0;
        int base = 10, upper = 0;
        switch (*f) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            for (s = s ? s : "(null)"; *s; s++) put(out, n, &at, *s);
            continue;
        }
        case 'c': put(out, n, &at, (char)va_arg(ap, int)); continue;
        case '%': put(out, n, &at, '%'); continue;
        case 'd': case 'i': {
            long long v = longs ? va_arg(ap, long) : va_arg(ap, int);
            if (v < 0) put(out, n, &at, '-'), v = -v;
            u = (unsigned long long)v;
            break;
        }
        case 'u': u = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned); break;
        case 'X': upper = 1; /* fall through */
        case 'x': u = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), base = 16; break;
        case 'p': u = (uintptr_t)va_arg(ap, void *), base = 16, put(out, n, &at, '0'), put(out, n, &at, 'x'); break;
        default: if (!*f) f--; continue;
        }
        do tmp[len++] = (upper ? "0123456789ABCDEF" : "0123456789abcdef")[u % (unsigned)base], u /= (unsigned)base; while (u);
        while (len) put(out, n, &at, tmp[--len]);
    }
    if (n) out[at < n ? at : n - 1] = 0;
    return (int)at;
}

int drsg_snprintf(char *out, size_t n, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int written = drsg_vsnprintf(out, n, format, ap);
    va_end(ap);
    return written;
}
