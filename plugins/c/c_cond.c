/* #if conditions, read three-valued: whether a branch is taken, as far as the text can tell, for the
 * configuration clang reads here (Linux, x86-64, a GNU-compatible compiler, C not C++). A macro this
 * target predefines is defined; a foreign one (_MSC_VER, _WIN32, __APPLE__, __cplusplus, …) is not;
 * any other is defined when the tree #defines it, with no value known. A branch holding #error is
 * never the one a build takes: parse writes its condition as `#error(…)`, false (so `#ifndef
 * Py_PYTHON_H #error` makes the #else surely taken, though <Python.h> is outside the tree). */
#include <string.h>

#include "c_plugin.h"

static int is_word(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }


static const char *const predefined[] = {"__GNUC__", "__GNUC_MINOR__", "__clang__", "__linux__", "__linux", "linux",
                                         "__unix__", "__unix", "unix", "__x86_64__", "__x86_64", "__amd64__",
                                         "__ELF__", "__STDC__", "__STDC_VERSION__", "__STDC_HOSTED__", "__LP64__",
                                         "_LP64", "__ORDER_LITTLE_ENDIAN__", "__BYTE_ORDER__", 0};
static const char *const foreign[] = {"_MSC_VER", "_WIN32", "_WIN64", "WIN32", "_WINDOWS", "__APPLE__", "__MACH__",
                                      "__MINGW32__", "__MINGW64__", "__CYGWIN__", "__FreeBSD__", "__OpenBSD__",
                                      "__NetBSD__", "__DragonFly__", "__sun", "__EMSCRIPTEN__", "__wasm__",
                                      "__ANDROID__", "_M_IX86", "_M_X64", "_M_ARM", "_M_ARM64", "__cplusplus",
                                      "__i386__", "__aarch64__", "__arm__", "__powerpc__", "__BORLANDC__",
                                      "__INTEL_COMPILER", "__HAIKU__", "_AIX", 0};

typedef struct { const char *p; int (*in_tree)(void *, const char *, size_t); void *tree; } cond_reader;

static void skip_space(cond_reader *r) {
    while (*r->p == ' ') r->p++;
}

static int ident(cond_reader *r, const char **start, size_t *len) {
    skip_space(r);
    const char *q = r->p;
    if (!is_word(*q) || (*q >= '0' && *q <= '9')) return 0;
    while (is_word(*q)) q++;
    *start = r->p, *len = (size_t)(q - r->p), r->p = q;
    return 1;
}

static int known(const char *const *list, const char *s, size_t len) {
    for (; *list; list++)
        if (strlen(*list) == len && !memcmp(*list, s, len)) return 1;
    return 0;
}

/* any other macro is defined (with a value not known) when the tree #defines it, and not otherwise:
 * configuration switches (XXH_INLINE_ALL, CARES_EXPOSE_STATICS) are off unless the tree sets them */
static int defined_value(cond_reader *r, const char *s, size_t len) {
    if (known(predefined, s, len)) return YES;
    if (known(foreign, s, len)) return NO;
    return r->in_tree(r->tree, s, len) ? MAYBE : NO;
}

static int cond_or(cond_reader *r);

static int cond_primary(cond_reader *r) {
    skip_space(r);
    const char *w;
    size_t len;
    int v;
    if (!strncmp(r->p, "#error(", 7)) { /* a branch that holds #error (parse marks it): never taken */
        int depth = 0;
        r->p += 6;
        do depth += *r->p == '(' ? 1 : *r->p == ')' ? -1 : 0; while (*++r->p && depth > 0);
        return NO;
    }
    if (*r->p == '!') {
        r->p++;
        v = cond_primary(r);
        return v == MAYBE ? MAYBE : !v;
    }
    if (*r->p == '(') {
        r->p++;
        v = cond_or(r);
        skip_space(r);
        if (*r->p == ')') r->p++;
    } else if (ident(r, &w, &len)) {
        if (len == 7 && !memcmp(w, "defined", 7)) {
            skip_space(r);
            int paren = *r->p == '(';
            if (paren) r->p++;
            v = ident(r, &w, &len) ? defined_value(r, w, len) : MAYBE;
            skip_space(r);
            if (paren && *r->p == ')') r->p++;
        } else {
            v = defined_value(r, w, len) == NO ? NO : MAYBE; /* an undefined name is 0 in #if */
        }
    } else if (*r->p >= '0' && *r->p <= '9') {
        const char *q = r->p;
        while (is_word(*q)) q++;
        v = (q - r->p == 1) ? (*r->p == '0' ? NO : YES) : MAYBE;
        if (q - r->p == 1 && *r->p > '1') v = YES;
        r->p = q;
    } else {
        v = MAYBE;
        if (*r->p && *r->p != ')' && *r->p != '|' && *r->p != '&') r->p++;
    }
    /* a comparison or arithmetic after it: the value is unknown */
    skip_space(r);
    while (*r->p && strchr("<>=+-*/%^~?:", *r->p)) {
        while (*r->p && strchr("<>=+-*/%^~?:", *r->p)) r->p++;
        (void)cond_primary(r);
        v = MAYBE;
        skip_space(r);
    }
    return v;
}

static int cond_and(cond_reader *r) {
    int v = cond_primary(r);
    for (skip_space(r); r->p[0] == '&' && r->p[1] == '&'; skip_space(r)) {
        r->p += 2;
        int w = cond_primary(r);
        v = (v == NO || w == NO) ? NO : (v == MAYBE || w == MAYBE) ? MAYBE : YES;
    }
    return v;
}

static int cond_or(cond_reader *r) {
    int v = cond_and(r);
    for (skip_space(r); r->p[0] == '|' && r->p[1] == '|'; skip_space(r)) {
        r->p += 2;
        int w = cond_and(r);
        v = (v == YES || w == YES) ? YES : (v == MAYBE || w == MAYBE) ? MAYBE : NO;
    }
    return v;
}

int c_condition(const char *expr, int (*in_tree)(void *, const char *, size_t), void *tree) {
    cond_reader r = {expr, in_tree, tree};
    return cond_or(&r);
}
