/* assemble: every partial's records into keyed facts, calls resolved across the whole tree.
 *
 * The result depends only on the set of files parsed, never on how they were chunked: files are taken
 * in path order (a path seen twice is read once) and everything after is a function of that list.
 *
 * Keys (README): a Module is its root-relative path; a non-static function, variable or typedef its bare
 * name; a static one `<file stem>.<name>`; a macro `<file stem>#<NAME>`; a struct/union/enum
 * `struct X`/`union X`/`enum X`.
 * When two different definitions (another file, or another kind in the same file) would share a key,
 * both take `<path>:<name>`, and if that still clashes `<path>:<name>:<Label>`: no key ever names two
 * things, and which definition "wins" is never guessed. The same name defined twice in one file (two
 * #if branches) is one node with every definition's line in `lines`. */
#include <stdlib.h>
#include <string.h>

#include "c_plugin.h"
#include "json.h"
#include "lz.h"

/* ------------------------------------------------------------------------------ a string → int map */
typedef struct { const char **keys; uint32_t *lens; int *values; uint32_t cap, n; } smap;

static uint32_t hash(const char *s, uint32_t len) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int *smap_slot(smap *m, const char *s, uint32_t len, int create) {
    if (create && (m->n + 1) * 2 > m->cap) {
        smap old = *m;
        m->cap = old.cap ? old.cap * 2 : 1024, m->n = 0;
        m->keys = xmalloc(m->cap * sizeof *m->keys), m->lens = xmalloc(m->cap * sizeof *m->lens);
        m->values = xmalloc(m->cap * sizeof *m->values);
        memset(m->keys, 0, m->cap * sizeof *m->keys);
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.keys[i]) *smap_slot(m, old.keys[i], old.lens[i], 1) = old.values[i];
        free(old.keys), free(old.lens), free(old.values);
    }
    if (!m->cap) return 0;
    for (uint32_t i = hash(s, len) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            if (!create) return 0;
            m->keys[i] = s, m->lens[i] = len, m->values[i] = -1, m->n++;
            return &m->values[i];
        }
        if (m->lens[i] == len && memcmp(m->keys[i], s, len) == 0) return &m->values[i];
    }
}

static int smap_get(smap *m, const char *s) {
    int *v = smap_slot(m, s, (uint32_t)strlen(s), 0);
    return v ? *v : -1;
}

/* a growable array of T */
#define VEC(T) struct { T *at; uint32_t n, cap; }
#define PUSH(v, x)                                                                                 \
    do {                                                                                           \
        if ((v).n == (v).cap) (v).cap = (v).cap ? (v).cap * 2 : 64, (v).at = xrealloc((v).at, (v).cap * sizeof *(v).at); \
        (v).at[(v).n++] = (x);                                                                     \
    } while (0)

/* ---------------------------------------------------------------------------- the records, read */
typedef struct {
    char *path, *stem;
    uint32_t errors, bytes;
    int first_def, ndefs, first_inc, ninc, first_use, nuse;
    uint32_t indirect, too_deep;
    int trimmed; /* the T record's level: what parse left out to fit the partial limit */
    int dup;     /* a later copy of a path already read */
} file_t;
typedef struct { int file, line, local, entity; char *label, *name, *props; } def_t;
typedef struct { int file, def, line, count; char kind; char *name; } use_t;
typedef struct { int file, line, target; char sys; char *written; } inc_t;
typedef struct { int file, first_def, level; char *key; VEC(int) lines; } entity_t;

typedef struct {
    VEC(file_t) files;
    VEC(def_t) defs;
    VEC(use_t) uses;
    VEC(inc_t) incs;
    VEC(char *) protos; /* "file\tname" is not needed: prototypes are kept as (file, name) below */
    VEC(int) proto_file;
    VEC(entity_t) entities;
    VEC(char *) skipped;
} model;

/* the many small strings of one assemble (names, keys, edge ids): bump-allocated, never freed one by
 * one (the instance is dropped after the call) */
static arena strings;

static char *unescaped(const char *s, size_t len) {
    char *out = arena_alloc(&strings, len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len) {
            char e = s[++i];
            *o++ = e == 't' ? '\t' : e == 'n' ? '\n' : e;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return out;
}

static char *raw_copy(const char *s, size_t len) {
    char *out = arena_alloc(&strings, len + 1);
    memcpy(out, s, len), out[len] = 0;
    return out;
}

/* split one line into at most max fields (the last takes the rest) */
static int split(const char *line, size_t len, const char **f, size_t *fl, int max) {
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len && n < max; i++) {
        if (i == len || (line[i] == '\t' && n < max - 1)) {
            f[n] = line + start, fl[n] = i - start, n++;
            start = i + 1;
        }
    }
    return n;
}

static int read_partial(model *m, wstr partial, buf *error) {
    const char *p = partial.ptr, *end = p + partial.len;
    int file = -1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *f[6];
        size_t fl[6];
        char kind = len ? p[0] : 0;
        int n = split(p, len, f, fl, kind == 'D' ? 6 : kind == 'C' ? 5 : kind == 'R' || kind == 'I' || kind == 'F' ? 4 : 3);
        if (kind == 'F' && n == 4) {
            file_t fi = {0};
            fi.path = unescaped(f[1], fl[1]);
            fi.errors = (uint32_t)atol(unescaped(f[2], fl[2])), fi.bytes = (uint32_t)atol(unescaped(f[3], fl[3]));
            fi.first_def = (int)m->defs.n, fi.first_inc = (int)m->incs.n, fi.first_use = (int)m->uses.n;
            PUSH(m->files, fi);
            file = (int)m->files.n - 1;
        } else if (kind == 'S' && n == 3) {
            buf note = {0};
            char *path = unescaped(f[1], fl[1]), *why = unescaped(f[2], fl[2]);
            buf_puts(&note, path), buf_puts(&note, ": not read ("), buf_puts(&note, why), buf_puts(&note, ")");
            buf_putc(&note, 0);
            PUSH(m->skipped, note.data);
        } else if (file >= 0 && kind == 'D' && n == 6) {
            def_t d = {.file = file, .entity = -1};
            d.label = unescaped(f[1], fl[1]), d.local = f[2][0] == '1', d.line = atoi(unescaped(f[3], fl[3]));
            d.name = unescaped(f[4], fl[4]), d.props = raw_copy(f[5], fl[5]); /* JSON: no raw tab or newline */
            PUSH(m->defs, d);
            m->files.at[file].ndefs++;
        } else if (file >= 0 && kind == 'P' && n >= 2) {
            PUSH(m->protos, unescaped(f[1], fl[1]));
            PUSH(m->proto_file, file);
        } else if (file >= 0 && kind == 'I' && n == 4) {
            inc_t in = {.file = file, .target = -1, .sys = f[2][0] == 's'};
            in.line = atoi(unescaped(f[1], fl[1])), in.written = unescaped(f[3], fl[3]);
            PUSH(m->incs, in);
            m->files.at[file].ninc++;
        } else if (file >= 0 && ((kind == 'C' && n == 5) || (kind == 'R' && n == 4))) {
            use_t u = {.file = file, .kind = kind, .count = kind == 'C' ? atoi(unescaped(f[4], fl[4])) : 1};
            int local_def = atoi(unescaped(f[1], fl[1]));
            u.def = local_def < 0 ? -1 : m->files.at[file].first_def + local_def;
            u.line = atoi(unescaped(f[2], fl[2])), u.name = unescaped(f[3], fl[3]);
            PUSH(m->uses, u);
            m->files.at[file].nuse++;
        } else if (file >= 0 && kind == 'K' && n >= 2) {
            m->files.at[file].too_deep += (uint32_t)atol(unescaped(f[1], fl[1]));
        } else if (file >= 0 && kind == 'T' && n >= 2) {
            m->files.at[file].trimmed = atoi(unescaped(f[1], fl[1]));
        } else if (file >= 0 && kind == 'X' && n >= 2) {
            m->files.at[file].indirect += (uint32_t)atol(unescaped(f[1], fl[1]));
        } else if (len) {
            buf_puts(error, "c plugin: a partial it did not write (bad record)");
            return 1;
        }
        p += len + 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------- the output */
typedef struct { char *src, *dst, *type, *resolved_by, *confidence, *ref, *reason; int line, count; } edge_t;
typedef struct {
    VEC(wnode) nodes;
    VEC(edge_t) edges;
    smap edge_index;
    smap node_keys;
} facts;

static char *cat(const char *a, const char *sep, const char *b) {
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *s = arena_alloc(&strings, la + ls + lb + 1);
    memcpy(s, a, la), memcpy(s + la, sep, ls), memcpy(s + la + ls, b, lb), s[la + ls + lb] = 0;
    return s;
}

static wstr clean(const char *s) {
    buf b = {0};
    utf8_clean(&b, s, strlen(s));
    return b.len ? buf_wstr(&b) : wstr_c("?");
}

static void add_node(facts *out, const char *key, const char *label, const char *extra, buf *props) {
    wnode n = {0};
    n.key = clean(key), n.label = wstr_c(label);
    if (extra) {
        wstr *e = xmalloc(sizeof *e);
        *e = wstr_c(extra);
        n.extra_labels = (wlist){e, 1};
    }
    n.properties = buf_wstr(props);
    *smap_slot(&out->node_keys, n.key.ptr, n.key.len, 1) = (int)out->nodes.n;
    PUSH(out->nodes, n);
}

/* one edge per (src, type, dst): the first site's line, and how many sites */
static void add_edge_sites(facts *out, char *src, char *type, char *dst, int line, int sites, char *resolved_by,
                           char *confidence, char *ref, char *reason) {
    char *id = cat(cat(src, "\x01", type), "\x01", dst);
    int *slot = smap_slot(&out->edge_index, id, (uint32_t)strlen(id), 1);
    if (*slot >= 0) {
        out->edges.at[*slot].count += sites;
        return;
    }
    *slot = (int)out->edges.n;
    edge_t e = {src, dst, type, resolved_by, confidence, ref, reason, line, sites};
    PUSH(out->edges, e);
}

static void add_edge(facts *out, char *src, char *type, char *dst, int line, char *resolved_by, char *confidence,
                     char *ref, char *reason) {
    add_edge_sites(out, src, type, dst, line, 1, resolved_by, confidence, ref, reason);
}

static void props_begin(buf *b, int *first) {
    buf_putc(b, '{');
    *first = 1;
    json_member_str(b, first, "_generated_by", C_GENERATED_BY, strlen(C_GENERATED_BY));
}

/* ------------------------------------------------------------------------------------ resolution */
static int by_path(const void *a, const void *b) {
    const file_t *x = *(file_t *const *)a, *y = *(file_t *const *)b;
    return strcmp(x->path, y->path);
}

/* a/./b/../c → a/c; 0 when it climbs out of the root */
static char *normalized(const char *dir, const char *rel) {
    char *joined = dir[0] ? cat(dir, "/", rel) : cat("", "", rel);
    char **parts = xmalloc((strlen(joined) + 1) * sizeof *parts);
    int n = 0;
    for (char *tok = strtok(joined, "/"); tok; tok = strtok(0, "/")) {
        if (!strcmp(tok, ".")) continue;
        if (!strcmp(tok, "..")) {
            if (!n) return 0;
            n--;
            continue;
        }
        parts[n++] = tok;
    }
    buf out = {0};
    for (int i = 0; i < n; i++) {
        if (i) buf_putc(&out, '/');
        buf_puts(&out, parts[i]);
    }
    buf_putc(&out, 0);
    return out.data;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return cat("", "", "");
    char *d = xmalloc((size_t)(slash - path) + 1);
    memcpy(d, path, (size_t)(slash - path)), d[slash - path] = 0;
    return d;
}

static const char *basename_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static char *stem_of(const char *path) {
    const char *base = basename_of(path), *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = xmalloc(len + 1);
    memcpy(s, base, len), s[len] = 0;
    return s;
}

static char *entity_key(model *m, entity_t *e) {
    def_t *d = &m->defs.at[e->first_def];
    file_t *f = &m->files.at[e->file];
    if (e->level == 0 && !strcmp(d->label, "Macro")) return cat(f->stem, "#", d->name);
    if (e->level == 0) return d->local ? cat(f->stem, ".", d->name) : d->name;
    if (e->level == 1) return cat(f->path, ":", d->name);
    return cat(cat(f->path, ":", d->name), ":", d->label);
}

typedef VEC(wstr) wstr_vec;

static void notes_add(wstr_vec *notes, uint32_t count, const char *what) {
    if (!count) return;
    buf b = {0};
    buf_putu(&b, count), buf_puts(&b, what);
    PUSH(*notes, buf_wstr(&b));
}

/* mark f and every file it includes, transitively, with stamp */
static void mark_visible(model *m, int f, uint32_t *seen, uint32_t stamp, int *stack) {
    int top = 0;
    seen[f] = stamp, stack[top++] = f;
    while (top) {
        file_t *g = &m->files.at[stack[--top]];
        for (int j = g->first_inc; j < g->first_inc + g->ninc; j++) {
            int t = m->incs.at[j].target;
            if (t >= 0 && seen[t] != stamp) seen[t] = stamp, stack[top++] = t;
        }
    }
}

static int is_word(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static int macro_in_tree(void *tree, const char *name, size_t len) {
    return smap_slot(tree, name, (uint32_t)len, 0) != 0;
}

/* NO when the definition's branch is surely not taken */
static int branch_taken(const def_t *mac, smap *tree_macros) {
    const char *c = strstr(mac->props, "\"if\":\"");
    if (!c) return YES;
    c += 6;
    const char *z = c;
    while (*z && *z != '"') z += *z == '\\' && z[1] ? 2 : 1;
    return c_condition(arena_strndup(&strings, c, (size_t)(z - c)), macro_in_tree, tree_macros);
}

/* 1 when a word of the signature before the name is a macro, visible here, every definition of which
 * whose branch may be taken says static (`#define forceinline static inline …` outside `#ifdef
 * _MSC_VER`): clang reads such a function as static, and so do we. A macro that is `static` in one
 * possible branch and empty in another decides nothing. */
static int static_by_macro(model *m, def_t *d, smap *macros, int *next_macro, uint32_t *seen, uint32_t stamp) {
    const char *sig = strstr(d->props, "\"signature\":\"");
    if (!sig) return 0;
    sig += 13;
    const char *end = strstr(sig, "\",");
    if (!end) return 0;
    for (const char *p = sig; p < end;) {
        if (!is_word(*p) || (*p >= '0' && *p <= '9')) {
            p++;
            continue;
        }
        const char *w = p;
        while (p < end && is_word(*p)) p++;
        if ((size_t)(p - w) == strlen(d->name) && !memcmp(w, d->name, (size_t)(p - w))) return 0; /* the name */
        int *slot = smap_slot(macros, w, (uint32_t)(p - w), 0);
        int visible = 0, all_static = 1;
        for (int k = slot ? *slot : -1; k >= 0; k = next_macro[k]) {
            def_t *mac = &m->defs.at[k];
            if (seen[mac->file] != stamp || branch_taken(mac, macros) == NO) continue;
            visible++;
            int says_static = 0;
            const char *v = strstr(mac->props, "\"value\":\"");
            if (v) {
                v += 9;
                const char *z = v; /* the value string's closing quote */
                while (*z && *z != '"') z += *z == '\\' && z[1] ? 2 : 1;
                for (const char *q = v; q + 6 <= z && !says_static; q++)
                    says_static = !memcmp(q, "static", 6) && (q == v || !is_word(q[-1])) && (q + 6 == z || !is_word(q[6]));
            }
            all_static &= says_static;
        }
        if (visible && all_static) return 1;
    }
    return 0;
}

int plugin_assemble(const wstr *partials, uint32_t npartials, const wpair *options, uint32_t noptions, woutput *result,
                    buf *error) {
    (void)options, (void)noptions;
    model m = {0};
    for (uint32_t i = 0; i < npartials; i++) {
        buf raw = {0};
        if (lz_decompress(partials[i].ptr, partials[i].len, &raw)) {
            buf_puts(error, "c plugin: a partial it did not write (not its compressed form)");
            return 1;
        }
        if (read_partial(&m, buf_wstr(&raw), error)) return 1;
    }

    /* files in path order; a path read twice counts once */
    uint32_t nf = m.files.n;
    file_t **order = xmalloc((nf + 1) * sizeof *order);
    for (uint32_t i = 0; i < nf; i++) order[i] = &m.files.at[i];
    qsort(order, nf, sizeof *order, by_path);
    smap path_index = {0};
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        int *slot = smap_slot(&path_index, f->path, (uint32_t)strlen(f->path), 1);
        if (*slot >= 0) f->dup = 1;
        else *slot = (int)(f - m.files.at);
        f->stem = stem_of(f->path);
    }

    /* includes: "x.h" beside the including file, else from the root, else the one file ending in /x.h */
    smap by_base = {0}; /* basename → first file index in path order; ties found by scanning on */
    for (uint32_t i = 0; i < nf; i++) {
        if (order[i]->dup) continue;
        const char *base = basename_of(order[i]->path);
        int *slot = smap_slot(&by_base, base, (uint32_t)strlen(base), 1);
        if (*slot < 0) *slot = (int)i; /* index into order */
    }
    uint32_t sys_includes = 0, missing_includes = 0, ambiguous_includes = 0;
    facts out = {0};
    wstr_vec notes = {0};
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        if (f->dup) continue;
        char *dir = dir_of(f->path);
        for (int j = f->first_inc; j < f->first_inc + f->ninc; j++) {
            inc_t *in = &m.incs.at[j];
            if (in->sys) continue;
            char *cand = normalized(dir, in->written);
            int t = cand ? smap_get(&path_index, cand) : -1;
            if (t < 0 && (cand = normalized("", in->written))) t = smap_get(&path_index, cand);
            if (t >= 0) {
                in->target = t;
                continue;
            }
            char *clean_rel = normalized("", in->written);
            if (!clean_rel) continue;
            const char *base = basename_of(clean_rel);
            int start = smap_get(&by_base, base), found = -1, many = 0;
            char *suffix = cat("/", "", clean_rel);
            for (int k = start; k >= 0 && k < (int)nf; k++) {
                if (order[k]->dup) continue;
                if (strcmp(basename_of(order[k]->path), base)) continue;
                size_t lp = strlen(order[k]->path), ls = strlen(suffix);
                if (lp > ls && !strcmp(order[k]->path + lp - ls, suffix)) {
                    if (found >= 0) many = 1;
                    found = (int)(order[k] - m.files.at);
                }
            }
            if (found >= 0 && !many) in->target = found, in->sys = 2; /* 2: found by suffix */
            else if (many) in->sys = 3;                               /* 3: ambiguous */
        }
    }

    /* functions made static by a macro in their specifiers */
    uint32_t *seen = xmalloc((nf + 1) * sizeof *seen), stamp = 0;
    memset(seen, 0, (nf + 1) * sizeof *seen);
    int *stack = xmalloc((nf + 1) * sizeof *stack);
    smap macros = {0}; /* macro name → its first definition (others through next_macro) */
    {
        int *next_macro = xmalloc((m.defs.n + 1) * sizeof *next_macro);
        for (int i = (int)m.defs.n - 1; i >= 0; i--) {
            def_t *d = &m.defs.at[i];
            next_macro[i] = -1;
            if (strcmp(d->label, "Macro") || m.files.at[d->file].dup) continue;
            int *slot = smap_slot(&macros, d->name, (uint32_t)strlen(d->name), 1);
            next_macro[i] = *slot;
            *slot = i;
        }
        for (uint32_t i = 0; i < nf; i++) {
            file_t *f = order[i];
            if (f->dup) continue;
            int marked = 0;
            for (int j = f->first_def; j < f->first_def + f->ndefs; j++) {
                def_t *d = &m.defs.at[j];
                if (d->local || strcmp(d->label, "Function")) continue;
                if (!marked) mark_visible(&m, (int)(f - m.files.at), seen, ++stamp, stack), marked = 1;
                if (!static_by_macro(&m, d, &macros, next_macro, seen, stamp)) continue;
                d->local = 1;
                char *v = strstr(d->props, "\"visibility\":\"exported\"");
                if (v) {
                    char *rest = v + strlen("\"visibility\":\"exported\"");
                    buf nb = {0};
                    buf_put(&nb, d->props, (size_t)(v - d->props));
                    buf_puts(&nb, "\"visibility\":\"static\"");
                    buf_puts(&nb, rest), buf_putc(&nb, 0);
                    d->props = nb.data;
                }
            }
        }
    }

    /* entities: (file, label, name) */
    smap entity_index = {0};
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        if (f->dup) continue;
        for (int j = f->first_def; j < f->first_def + f->ndefs; j++) {
            def_t *d = &m.defs.at[j];
            char *id = cat(cat(f->path, "\x01", d->label), "\x01", d->name);
            int *slot = smap_slot(&entity_index, id, (uint32_t)strlen(id), 1);
            if (*slot < 0) {
                entity_t e = {.file = (int)(f - m.files.at), .first_def = j};
                *slot = (int)m.entities.n;
                PUSH(m.entities, e);
            }
            d->entity = *slot;
            PUSH(m.entities.at[*slot].lines, d->line);
        }
    }

    /* a macro entity is live when some definition's branch may be taken, sure when one surely is */
    uint8_t *macro_state = xmalloc(m.entities.n + 1);
    memset(macro_state, NO, m.entities.n + 1);
    for (uint32_t i = 0; i < m.defs.n; i++) {
        def_t *d = &m.defs.at[i];
        if (d->entity < 0 || strcmp(d->label, "Macro")) continue;
        int taken = branch_taken(d, &macros);
        uint8_t *state = &macro_state[d->entity];
        if (taken == YES) *state = YES;
        else if (taken == MAYBE && *state == NO) *state = MAYBE;
    }

    /* keys: raise every clashing entity a level until nothing clashes (modules never move) */
    uint32_t ne = m.entities.n;
    for (int changed = 1; changed;) {
        changed = 0;
        smap keys = {0};
        for (uint32_t i = 0; i < nf; i++)
            if (!order[i]->dup) *smap_slot(&keys, order[i]->path, (uint32_t)strlen(order[i]->path), 1) = -2;
        int *clash = xmalloc((ne + 1) * sizeof *clash);
        memset(clash, 0, (ne + 1) * sizeof *clash);
        for (uint32_t i = 0; i < ne; i++) {
            entity_t *e = &m.entities.at[i];
            e->key = entity_key(&m, e);
            int *slot = smap_slot(&keys, e->key, (uint32_t)strlen(e->key), 1);
            if (*slot == -1) *slot = (int)i;
            else {
                clash[i] = 1;
                if (*slot >= 0) clash[*slot] = 1;
            }
        }
        for (uint32_t i = 0; i < ne; i++)
            if (clash[i] && m.entities.at[i].level < 2) m.entities.at[i].level++, changed = 1;
    }

    /* modules */
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        if (f->dup) continue;
        buf p = {0};
        int first;
        props_begin(&p, &first);
        json_member_str(&p, &first, "path", f->path, strlen(f->path));
        json_member_str(&p, &first, "file", f->path, strlen(f->path));
        json_member_int(&p, &first, "line", 1);
        json_member_int(&p, &first, "bytes", f->bytes);
        if (f->errors) json_member_int(&p, &first, "parse_errors", f->errors);
        if (f->trimmed) {
            static const char *left_out[] = {"", "_code and value uses", "_code, value uses and calls",
                                             "_code, value uses, calls and descriptive properties"};
            const char *what = left_out[f->trimmed > 3 ? 3 : f->trimmed];
            json_member_str(&p, &first, "trimmed", what, strlen(what));
        }
        json_key(&p, &first, "imports");
        buf_putc(&p, '[');
        for (int j = f->first_inc; j < f->first_inc + f->ninc; j++) {
            if (j > f->first_inc) buf_putc(&p, ',');
            json_str(&p, m.incs.at[j].written, strlen(m.incs.at[j].written));
        }
        buf_puts(&p, "]}");
        add_node(&out, f->path, "Module", 0, &p);
    }
    /* definitions */
    for (uint32_t i = 0; i < ne; i++) {
        entity_t *e = &m.entities.at[i];
        def_t *d = &m.defs.at[e->first_def];
        file_t *f = &m.files.at[e->file];
        buf p = {0};
        int first;
        props_begin(&p, &first);
        json_member_str(&p, &first, "file", f->path, strlen(f->path));
        json_member_int(&p, &first, "line", d->line);
        json_member_str(&p, &first, "name", d->name, strlen(d->name));
        if (e->lines.n > 1) {
            json_key(&p, &first, "lines");
            buf_putc(&p, '[');
            for (uint32_t k = 0; k < e->lines.n; k++) {
                if (k) buf_putc(&p, ',');
                buf_puti(&p, e->lines.at[k]);
            }
            buf_putc(&p, ']');
        }
        if (d->props[0]) buf_putc(&p, ','), buf_puts(&p, d->props);
        buf_putc(&p, '}');
        add_node(&out, e->key, d->label, 0, &p);
        add_edge(&out, f->path, "CONTAINS", e->key, d->line, 0, 0, 0, 0);
    }
    /* imports */
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        if (f->dup) continue;
        for (int j = f->first_inc; j < f->first_inc + f->ninc; j++) {
            inc_t *in = &m.incs.at[j];
            char *written = in->sys == 1 ? cat("<", in->written, ">") : cat("\"", in->written, "\"");
            if (in->target >= 0) {
                add_edge(&out, f->path, "IMPORTS", m.files.at[in->target].path, in->line,
                         in->sys == 2 ? "suffix" : "path", in->sys == 2 ? "medium" : "high", written, 0);
                continue;
            }
            if (in->sys == 1) sys_includes++;
            else if (in->sys == 3) ambiguous_includes++;
            else missing_includes++;
            if (smap_get(&out.node_keys, written) < 0) {
                buf p = {0};
                int first;
                props_begin(&p, &first);
                buf_putc(&p, '}');
                add_node(&out, written, "Module", "External", &p);
            }
            add_edge(&out, f->path, "IMPORTS", written, in->line, in->sys == 1 ? "system" : "unresolved",
                     in->sys == 1 ? "high" : "none", written,
                     in->sys == 1 ? 0 : in->sys == 3 ? "ambiguous: more than one file ends with this path"
                                                    : "no file in the tree has this path");
        }
    }

    /* calls and references: names → entities; what a file sees = itself and what it includes */
    smap by_name = {0}; /* name → first entity; others found through next_same */
    int *next_same = xmalloc((ne + 1) * sizeof *next_same);
    for (uint32_t i = 0; i < ne; i++) next_same[i] = -1;
    for (int i = (int)ne - 1; i >= 0; i--) {
        def_t *d = &m.defs.at[m.entities.at[i].first_def];
        int *slot = smap_slot(&by_name, d->name, (uint32_t)strlen(d->name), 1);
        next_same[i] = *slot;
        *slot = i;
    }
    smap proto_names = {0}; /* name → first prototype index */
    int *next_proto = xmalloc((m.protos.n + 1) * sizeof *next_proto);
    for (int i = (int)m.protos.n - 1; i >= 0; i--) {
        int *slot = smap_slot(&proto_names, m.protos.at[i], (uint32_t)strlen(m.protos.at[i]), 1);
        next_proto[i] = *slot;
        *slot = i;
    }
    uint32_t undefined = 0, invisible = 0, ambiguous = 0, indirect = 0, ambiguous_refs = 0, macro_calls = 0;
    uint32_t parse_errors = 0, files_with_errors = 0, trimmed = 0, too_deep = 0;
    for (uint32_t i = 0; i < nf; i++) {
        file_t *f = order[i];
        if (f->dup) continue;
        indirect += f->indirect;
        if (f->trimmed) trimmed++;
        too_deep += f->too_deep;
        if (f->errors) parse_errors += f->errors, files_with_errors++;
        /* mark the file and everything it includes, transitively */
        mark_visible(&m, (int)(f - m.files.at), seen, ++stamp, stack);
        for (int j = f->first_use; j < f->first_use + f->nuse; j++) {
            use_t *u = &m.uses.at[j];
            char *src = u->def >= 0 ? m.entities.at[m.defs.at[u->def].entity].key : f->path;
            int macros = 0, sure_macros = 0, statics = 0, globals = 0, hidden = 0, variables = 0;
            int macro = -1, stat = -1, glob = -1;
            buf where = {0};
            for (int k = smap_get(&by_name, u->name); k >= 0; k = next_same[k]) {
                entity_t *e = &m.entities.at[k];
                def_t *d = &m.defs.at[e->first_def];
                int visible = seen[e->file] == stamp;
                if (!strcmp(d->label, "Macro")) {
                    if (visible && macro_state[k] != NO) macros++, macro = k, sure_macros += macro_state[k] == YES;
                } else if (!strcmp(d->label, "Function")) {
                    if (d->local && visible) statics++, stat = k;
                    else if (d->local) hidden++;
                    else globals++, glob = k;
                } else if (!strcmp(d->label, "Var") || !strcmp(d->label, "Const")) {
                    variables++; /* a call through a function pointer held in a variable */
                }
            }
            if (u->kind == 'R') { /* a function named as a value */
                if (macros) continue;
                int target = statics == 1 ? stat : !statics && globals == 1 ? glob : -1;
                if (target >= 0)
                    add_edge(&out, src, "REFERENCES", m.entities.at[target].key, u->line, "fn-ref", "high", u->name, 0);
                else if (statics > 1 || (!statics && globals > 1)) ambiguous_refs++;
                continue;
            }
            /* a macro that is surely defined wins over a function of its name (the preprocessor runs
             * first); one defined only in #if branches that may not be taken yields to a function, at
             * medium confidence */
            int function_too = statics == 1 || (!statics && globals == 1);
            if (macros == 1 && (sure_macros || !function_too)) {
                add_edge_sites(&out, src, "INVOKES", m.entities.at[macro].key, u->line, u->count, "macro",
                               sure_macros ? "high" : "medium", u->name, 0);
                macro_calls += (uint32_t)u->count;
                continue;
            }
            int target = -1;
            char *by = 0, *confidence = "high";
            int candidates = 0;
            if (macros > 1 && (sure_macros || !function_too)) candidates = macros;
            else if (statics == 1) target = stat, by = "static";
            else if (statics > 1) candidates = statics;
            else if (globals == 1) {
                target = glob, by = "name";
                /* sure when the caller sees its definition or a prototype of it; else a link-time match */
                int declared = seen[m.entities.at[glob].file] == stamp;
                for (int k = smap_get(&proto_names, u->name); k >= 0 && !declared; k = next_proto[k])
                    declared = seen[m.proto_file.at[k]] == stamp;
                if (!declared) confidence = "medium";
            } else if (globals > 1) candidates = globals;
            if (target >= 0 && macros) confidence = "medium"; /* a conditional macro may stand in its place */
            if (target >= 0) {
                add_edge_sites(&out, src, "CALLS", m.entities.at[target].key, u->line, u->count, by, confidence, u->name, 0);
                continue;
            }
            if (!candidates) {
                if (variables) indirect += (uint32_t)u->count;
                else if (hidden) invisible += (uint32_t)u->count;
                else undefined += (uint32_t)u->count;
                continue;
            }
            /* a name that matches more than one definition equally: left unresolved, never guessed */
            ambiguous += (uint32_t)u->count;
            char *unresolved = cat(cat("?::", f->path, "::"), "", u->name);
            if (smap_get(&out.node_keys, unresolved) < 0) {
                buf p = {0};
                int first;
                props_begin(&p, &first);
                json_member_str(&p, &first, "name", u->name, strlen(u->name));
                json_member_str(&p, &first, "file", f->path, strlen(f->path));
                buf_putc(&p, '}');
                add_node(&out, unresolved, "UnresolvedRef", 0, &p);
            }
            buf_puts(&where, "ambiguous: ");
            buf_putu(&where, (uint64_t)candidates);
            buf_puts(&where, " definitions of this name");
            buf_putc(&where, 0);
            add_edge_sites(&out, src, "CALLS", unresolved, u->line, u->count, "unresolved", "none", u->name, where.data);
        }
    }

    /* the edges' properties, now that every site is counted */
    wedge *edges = xmalloc((out.edges.n + 1) * sizeof *edges);
    for (uint32_t i = 0; i < out.edges.n; i++) {
        edge_t *e = &out.edges.at[i];
        buf p = {0};
        int first;
        props_begin(&p, &first);
        json_member_int(&p, &first, "line", e->line);
        if (e->count > 1) json_member_int(&p, &first, "sites", e->count);
        if (e->resolved_by) json_member_str(&p, &first, "_resolved_by", e->resolved_by, strlen(e->resolved_by));
        if (e->confidence) json_member_str(&p, &first, "_confidence", e->confidence, strlen(e->confidence));
        if (e->ref) json_member_str(&p, &first, "_ref", e->ref, strlen(e->ref));
        if (e->reason) json_member_str(&p, &first, "_reason", e->reason, strlen(e->reason));
        buf_putc(&p, '}');
        edges[i] = (wedge){clean(e->src), clean(e->dst), wstr_c(e->type), buf_wstr(&p)};
    }

    /* the host's view of the tree: which claimed files no partial covers (a chunk that failed or never ran) */
    {
        uint32_t read = 0, missing = 0;
        for (uint32_t i = 0; i < nf; i++) read += !order[i]->dup;
        static const char *suffixes[] = {".c", ".h"};
        for (int k = 0; k < 2; k++) {
            wstr *listed, err;
            uint32_t count;
            if (host_list(wstr_c(suffixes[k]), &listed, &count, &err)) continue;
            for (uint32_t i = 0; i < count; i++) {
                char *path = arena_strndup(&strings, listed[i].ptr, listed[i].len);
                if (smap_get(&path_index, path) < 0) missing++;
            }
        }
        wstr label;
        buf b = {0};
        if (host_label(&label)) utf8_clean(&b, label.ptr, label.len), buf_puts(&b, ": ");
        buf_putu(&b, read), buf_puts(&b, " file(s) read");
        PUSH(notes, buf_wstr(&b));
        notes_add(&notes, missing, " file(s) of the tree had no partial (their parse failed or never ran): their facts are missing");
    }
    notes_add(&notes, undefined, " call(s) named nothing defined here — calls into other libraries and the C library are not edges");
    notes_add(&notes, invisible, " call(s) named only a static function of a file the caller does not include — not edges");
    notes_add(&notes, ambiguous, " call(s) named more than one definition equally — left unresolved (UnresolvedRef)");
    notes_add(&notes, ambiguous_refs, " use(s) of a function name defined more than once as a value — not edges");
    notes_add(&notes, indirect, " call(s) through a pointer or a field — not resolved, not edges");
    notes_add(&notes, macro_calls, " call(s) are macro invocations (INVOKES edges)");
    notes_add(&notes, sys_includes, " #include <…> of system headers — External stand-ins");
    notes_add(&notes, missing_includes, " #include \"…\" found no file in the tree — External stand-ins");
    notes_add(&notes, ambiguous_includes, " #include \"…\" matched more than one file — External stand-ins, not guessed");
    if (parse_errors) {
        buf b = {0};
        buf_putu(&b, parse_errors), buf_puts(&b, " syntax error region(s) in "), buf_putu(&b, files_with_errors);
        buf_puts(&b, " file(s) (tree-sitter recovered; definitions inside them may be missed)");
        PUSH(notes, buf_wstr(&b));
    }
    notes_add(&notes, too_deep, " region(s) nested more than 200 deep (#if within #if, or syntax errors) — not read");
    notes_add(&notes, trimmed, " file(s) too large for a whole partial (max_partial_bytes): their modules' `trimmed` says what was left out");
    for (uint32_t i = 0; i < m.skipped.n; i++) PUSH(notes, clean(m.skipped.at[i]));

    result->nodes = (wlist){out.nodes.at, out.nodes.n};
    result->edges = (wlist){edges, out.edges.n};
    result->prose = wstr_c("");
    result->report.facts = out.nodes.n + out.edges.n;
    result->report.prose_chars = 0;
    result->report.skipped = m.skipped.n;
    result->report.notes = (wlist){notes.at, notes.n};
    return 0;
}
