/* parse: one file at a time, the tree-sitter C grammar's syntax tree walked into a partial
 * (c_plugin.h). Definitions are read at file scope, including inside #if/#ifdef branches (all
 * branches: a parser cannot know which the build takes); calls and value uses inside bodies. */
#include <stdlib.h>
#include <string.h>

#include "c_plugin.h"
#include "json.h"
#include "lz.h"
#include "tree_sitter/api.h"

const TSLanguage *tree_sitter_c(void);

/* a small open-addressing map from names (slices of the source) to ints, reset per definition */
typedef struct { const char **keys; uint32_t *lens; int *values; uint32_t cap, n; } nameset;
typedef struct { wstr name; uint32_t line, count; } call_site;

typedef struct {
    const char *src;
    uint32_t len;
    buf *out;
    int include_source;
    int level;             /* 0 everything; 1 no _code, no value uses; 2 no calls either; 3 only the
                              properties keys and resolution need (signature, visibility, value, if) */
    const char *cond;      /* the #if conditions around the current item, joined with &&; 0 outside any */
    int depth;             /* how deep in #if branches and ERROR regions the walk is */
    uint32_t too_deep;     /* regions not read: nested deeper than MAX_DEPTH */
    int ndefs;
    uint32_t indirect;
    nameset refs;  /* names of the current definition already recorded as values, or declared locally */
    nameset calls; /* names the current definition calls → index into call_sites */
    call_site *sites;
    uint32_t nsites, sites_cap;
} ctx;

/* --------------------------------------------------------------------------------------- helpers */
void field_escaped(buf *b, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\t') buf_puts(b, "\\t");
        else if (c == '\n') buf_puts(b, "\\n");
        else if (c == '\\') buf_puts(b, "\\\\");
        else buf_putc(b, c);
    }
}

int option_true(const wpair *options, uint32_t n, const char *key) {
    for (uint32_t i = 0; i < n; i++)
        if (wstr_eq(options[i].key, key)) return wstr_eq(options[i].value, "true");
    return 0;
}

static int is(TSNode n, const char *type) { return !ts_node_is_null(n) && strcmp(ts_node_type(n), type) == 0; }
static uint32_t line_of(TSNode n) { return ts_node_start_point(n).row + 1; }
static TSNode field(TSNode n, const char *name) { return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name)); }

static wstr text(ctx *c, TSNode n) {
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    if (b > c->len) b = c->len;
    if (a > b) a = b;
    return (wstr){c->src + a, b - a};
}

/* the bytes from a to b with every run of white space made one space, trimmed */
static void collapsed(buf *out, const char *s, uint32_t len) {
    int space = 0, any = 0;
    for (uint32_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') {
            space = 1;
            continue;
        }
        if (space && any) buf_putc(out, ' ');
        space = 0, any = 1;
        buf_putc(out, ch);
    }
}

static void member_collapsed(buf *b, int *first, const char *key, const char *s, uint32_t len) {
    buf tmp = {0};
    collapsed(&tmp, s, len);
    json_member_str(b, first, key, tmp.data ? tmp.data : "", tmp.len);
}

static int has_keyword(ctx *c, TSNode n, const char *child_type, const char *word) {
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; i++) {
        TSNode k = ts_node_named_child(n, i);
        if (is(k, child_type) && wstr_eq(text(c, k), word)) return 1;
    }
    return 0;
}

/* the name a declarator declares: follow `declarator` fields (through pointers, arrays, functions,
 * parentheses, attributes) to the identifier. *function says whether the declarator wrapping the name
 * most closely (parentheses aside) is a function declarator: `*f(void)` is a function, `(*f)(void)` a
 * pointer to one. */
static TSNode declared_name(TSNode d, int *function) {
    const char *closest = "";
    while (!ts_node_is_null(d)) {
        const char *t = ts_node_type(d);
        if (!strcmp(t, "identifier") || !strcmp(t, "type_identifier") || !strcmp(t, "field_identifier")) break;
        if (!strcmp(t, "parenthesized_declarator")) {
            d = ts_node_named_child(d, 0);
            continue;
        }
        if (strcmp(t, "attributed_declarator")) closest = t;
        d = field(d, "declarator");
    }
    if (function) *function = !ts_node_is_null(d) && !strcmp(closest, "function_declarator");
    return d;
}

/* comments right before a definition (no blank line between, not trailing the line before), joined */
static void doc_comment(ctx *c, TSNode n, buf *b, int *first) {
    if (c->level >= 3) return;
    TSNode prev = ts_node_prev_sibling(n), start = n;
    uint32_t expect = ts_node_start_point(n).row;
    while (is(prev, "comment") && ts_node_end_point(prev).row + 1 >= expect && ts_node_end_point(prev).row <= expect) {
        start = prev;
        expect = ts_node_start_point(prev).row;
        prev = ts_node_prev_sibling(prev);
    }
    if (!ts_node_is_null(prev) && !ts_node_eq(start, n) && ts_node_end_point(prev).row == ts_node_start_point(start).row)
        start = ts_node_next_sibling(start); /* `x; // about x` belongs to the line before */
    if (ts_node_eq(start, n) || !is(start, "comment")) return;
    uint32_t a = ts_node_start_byte(start), z = a;
    for (TSNode k = start; is(k, "comment"); k = ts_node_next_sibling(k)) z = ts_node_end_byte(k);
    json_member_str(b, first, "doc_comment", c->src + a, z - a);
}

static void nameset_reset(nameset *m) {
    if (m->n) memset(m->keys, 0, m->cap * sizeof *m->keys);
    m->n = 0;
}

/* the value slot for name; *fresh says it was just added (its value then -1) */
static int *nameset_slot(nameset *m, wstr s, int *fresh) {
    if ((m->n + 1) * 2 > m->cap) {
        nameset old = *m;
        m->cap = old.cap ? old.cap * 2 : 256, m->n = 0;
        m->keys = xmalloc(m->cap * sizeof *m->keys), m->lens = xmalloc(m->cap * sizeof *m->lens);
        m->values = xmalloc(m->cap * sizeof *m->values);
        memset(m->keys, 0, m->cap * sizeof *m->keys);
        int ignored;
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.keys[i]) *nameset_slot(m, (wstr){old.keys[i], old.lens[i]}, &ignored) = old.values[i];
        free(old.keys), free(old.lens), free(old.values);
    }
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < s.len; i++) h = (h ^ (unsigned char)s.ptr[i]) * 16777619u;
    for (uint32_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            m->keys[i] = s.ptr, m->lens[i] = s.len, m->values[i] = -1, m->n++;
            *fresh = 1;
            return &m->values[i];
        }
        if (m->lens[i] == s.len && memcmp(m->keys[i], s.ptr, s.len) == 0) {
            *fresh = 0;
            return &m->values[i];
        }
    }
}

/* 1 when the name is new for this definition (and records it) */
static int seen_add(ctx *c, wstr s) {
    int fresh;
    nameset_slot(&c->refs, s, &fresh);
    return fresh;
}

/* ------------------------------------------------------------------------------------ the records */
static int begin_def(ctx *c, const char *label, int local, uint32_t line, wstr name) {
    buf *o = c->out;
    buf_puts(o, "D\t"), buf_puts(o, label), buf_puts(o, local ? "\t1\t" : "\t0\t");
    buf_putu(o, line), buf_putc(o, '\t');
    field_escaped(o, name.ptr, name.len);
    buf_putc(o, '\t');
    nameset_reset(&c->refs), nameset_reset(&c->calls);
    c->nsites = 0;
    return c->ndefs++;
}

static void value_use(ctx *c, TSNode k, int def) {
    if (c->level >= 1) return;
    wstr name = text(c, k);
    if (!seen_add(c, name)) return;
    buf_puts(c->out, "R\t"), buf_puti(c->out, def), buf_putc(c->out, '\t');
    buf_putu(c->out, line_of(k)), buf_putc(c->out, '\t');
    field_escaped(c->out, name.ptr, name.len), buf_putc(c->out, '\n');
}

/* calls and value uses in n (an initializer or a body), charged to definition def */
static void uses(ctx *c, TSNode n, int def) {
    if (is(n, "identifier")) { /* int (*f)(int) = g; */
        value_use(c, n, def);
        return;
    }
    TSTreeCursor cur = ts_tree_cursor_new(n);
    const char *parents[512];
    int depth = 0;
    parents[0] = ts_node_type(n);
    for (;;) {
        if (ts_tree_cursor_goto_first_child(&cur)) {
            depth++;
        } else {
            while (!ts_tree_cursor_goto_next_sibling(&cur)) {
                if (!ts_tree_cursor_goto_parent(&cur) || --depth <= 0) goto done;
            }
        }
        TSNode k = ts_tree_cursor_current_node(&cur);
        if (depth < 512) parents[depth] = ts_node_type(k);
        const char *parent = parents[depth - 1 < 511 ? depth - 1 : 511];
        const char *t = ts_node_type(k);
        if (!strcmp(t, "call_expression")) {
            TSNode f = field(k, "function");
            if (is(f, "identifier")) { /* one record per callee: its first line and how many sites */
                int fresh;
                int *slot = nameset_slot(&c->calls, text(c, f), &fresh);
                if (fresh) {
                    if (c->nsites == c->sites_cap)
                        c->sites_cap = c->sites_cap ? c->sites_cap * 2 : 64,
                        c->sites = xrealloc(c->sites, c->sites_cap * sizeof *c->sites);
                    *slot = (int)c->nsites;
                    c->sites[c->nsites++] = (call_site){text(c, f), line_of(f), 0};
                }
                c->sites[*slot].count++;
            } else {
                c->indirect++;
            }
        } else if (!strcmp(t, "identifier")) {
            const char *f = ts_tree_cursor_current_field_name(&cur);
            int value = 1;
            if (f && !strcmp(f, "function") && !strcmp(parent, "call_expression")) value = 0;
            else if (f && !strcmp(f, "declarator")) value = 0;
            else if (strstr(parent, "declarator") || !strcmp(parent, "parameter_declaration") ||
                     !strcmp(parent, "labeled_statement") || !strcmp(parent, "goto_statement") ||
                     !strncmp(parent, "preproc_", 8))
                value = 0;
            if (value) value_use(c, k, def);
            else if (!f || strcmp(f, "function")) seen_add(c, text(c, k)); /* declared here: a local */
        }
    }
done:
    ts_tree_cursor_delete(&cur);
    for (uint32_t i = 0; i < c->nsites && c->level < 2; i++) {
        call_site *site = &c->sites[i];
        buf_puts(c->out, "C\t"), buf_puti(c->out, def), buf_putc(c->out, '\t');
        buf_putu(c->out, site->line), buf_putc(c->out, '\t');
        field_escaped(c->out, site->name.ptr, site->name.len), buf_putc(c->out, '\t');
        buf_putu(c->out, site->count), buf_putc(c->out, '\n');
    }
    c->nsites = 0;
    nameset_reset(&c->calls);
}

static void end_def(ctx *c) { buf_putc(c->out, '\n'); }

/* the function declarator a definition's declarator chain leads to (through pointers and parentheses) */
static TSNode function_declarator_of(TSNode d) {
    while (!ts_node_is_null(d) && !is(d, "function_declarator"))
        d = is(d, "parenthesized_declarator") ? ts_node_named_child(d, 0) : field(d, "declarator");
    return d;
}

static int word_in(const char *s, uint32_t len, const char *word) {
    size_t n = strlen(word);
    for (uint32_t i = 0; i + n <= len; i++) {
        if (memcmp(s + i, word, n)) continue;
        int before = i == 0 || !(s[i - 1] == '_' || (s[i - 1] | 32) - 'a' < 26u || (unsigned)(s[i - 1] - '0') < 10u);
        char after_c = i + n < len ? s[i + n] : ' ';
        int after = !(after_c == '_' || (after_c | 32) - 'a' < 26u || (unsigned)(after_c - '0') < 10u);
        if (before && after) return 1;
    }
    return 0;
}

/* A function definition from its parts: [start, body) is the signature. Normally the parts of a
 * function_definition node; in recovery, a run of top-level siblings (see top_level). */
static void function_parts(ctx *c, TSNode start, TSNode declarator, TSNode body, TSNode end) {
    int fn = 0;
    TSNode name = declared_name(declarator, &fn);
    TSNode f = function_declarator_of(declarator);
    if (!ts_node_is_null(f)) {
        /* `API type name(...)`, where API is a macro the grammar cannot know, parses as a function
         * declarator named `type` followed by an ERROR holding the real name */
        uint32_t count = ts_node_named_child_count(f);
        for (uint32_t i = 0; i < count; i++) {
            TSNode k = ts_node_named_child(f, i);
            if (is(k, "ERROR") && ts_node_named_child_count(k) >= 1) {
                TSNode last = ts_node_named_child(k, ts_node_named_child_count(k) - 1);
                if (is(last, "identifier")) name = last, fn = 1;
            }
        }
    }
    if (ts_node_is_null(name) || !fn) return;
    uint32_t a = ts_node_start_byte(start), z = ts_node_is_null(body) ? ts_node_end_byte(end) : ts_node_start_byte(body);
    if (z > c->len) z = c->len;
    int local = word_in(c->src + a, ts_node_start_byte(name) - a, "static");
    int def = begin_def(c, "Function", local, line_of(name), text(c, name));
    buf *o = c->out;
    int first = 1;
    member_collapsed(o, &first, "signature", c->src + a, z - a);
    json_member_str(o, &first, "visibility", local ? "static" : "exported", local ? 6 : 8);
    if (c->level < 3 && line_of(start) != line_of(name)) json_member_int(o, &first, "start_line", line_of(start));
    if (c->level < 3) json_member_int(o, &first, "end_line", ts_node_end_point(end).row + 1);
    doc_comment(c, start, o, &first);
    if (c->include_source && c->level == 0) {
        uint32_t e = ts_node_end_byte(end);
        json_member_str(o, &first, "_code", c->src + a, (e > c->len ? c->len : e) - a);
    }
    end_def(c);
    /* parameters are locals: a use of one is not a reference to a function of that name */
    TSNode params = ts_node_is_null(f) ? f : field(f, "parameters");
    uint32_t count = ts_node_is_null(params) ? 0 : ts_node_named_child_count(params);
    for (uint32_t i = 0; i < count; i++) {
        TSNode p = ts_node_named_child(params, i);
        TSNode pname = is(p, "parameter_declaration") ? declared_name(field(p, "declarator"), 0) : (TSNode){0};
        if (!ts_node_is_null(pname)) seen_add(c, text(c, pname));
    }
    if (!ts_node_is_null(body)) uses(c, body, def);
}

static void function_definition(ctx *c, TSNode n) {
    function_parts(c, n, field(n, "declarator"), field(n, "body"), n);
}

/* the member names of a struct/union body or the enumerators of an enum body, as a JSON array */
static void members(ctx *c, TSNode body, buf *o) {
    buf_putc(o, '[');
    int any = 0;
    uint32_t count = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < count; i++) {
        TSNode k = ts_node_named_child(body, i);
        if (is(k, "enumerator")) {
            wstr v = text(c, field(k, "name"));
            if (any++) buf_putc(o, ',');
            json_str(o, v.ptr, v.len);
        } else if (is(k, "field_declaration")) {
            TSTreeCursor cur = ts_tree_cursor_new(k);
            if (ts_tree_cursor_goto_first_child(&cur)) do {
                    const char *f = ts_tree_cursor_current_field_name(&cur);
                    if (!f || strcmp(f, "declarator")) continue;
                    TSNode fname = declared_name(ts_tree_cursor_current_node(&cur), 0);
                    if (ts_node_is_null(fname)) continue;
                    wstr v = text(c, fname);
                    if (any++) buf_putc(o, ',');
                    json_str(o, v.ptr, v.len);
                } while (ts_tree_cursor_goto_next_sibling(&cur));
            ts_tree_cursor_delete(&cur);
        }
    }
    buf_putc(o, ']');
}

/* the fields of an anonymous struct/union/enum body, for the typedef that names it */
static void anonymous_fields(ctx *c, TSNode type, buf *o, int *first) {
    TSNode body = field(type, "body");
    if (ts_node_is_null(body) || !ts_node_is_null(field(type, "name")) || c->level >= 3) return;
    json_key(o, first, is(type, "enum_specifier") ? "variants" : "fields");
    members(c, body, o);
}

static void tag(ctx *c, TSNode n, int *emitted) {
    const char *t = ts_node_type(n), *label;
    if (!strcmp(t, "struct_specifier")) label = "Struct";
    else if (!strcmp(t, "union_specifier")) label = "Union";
    else if (!strcmp(t, "enum_specifier")) label = "Enum";
    else return;
    TSNode name = field(n, "name"), body = field(n, "body");
    if (ts_node_is_null(name) || ts_node_is_null(body)) return;
    buf key = {0};
    buf_puts(&key, label[0] == 'S' ? "struct " : label[0] == 'U' ? "union " : "enum ");
    wstr nm = text(c, name);
    buf_put(&key, nm.ptr, nm.len);
    begin_def(c, label, 0, line_of(name), buf_wstr(&key));
    buf *o = c->out;
    int first = 1;
    if (c->level < 3) {
        json_key(o, &first, label[0] == 'E' ? "variants" : "fields");
        members(c, body, o);
    }
    doc_comment(c, n, o, &first);
    end_def(c);
    if (emitted) *emitted = 1;
}

static void type_definition(ctx *c, TSNode n) {
    TSNode type = field(n, "type");
    tag(c, type, 0);
    int has_body = !ts_node_is_null(field(type, "body"));
    TSTreeCursor cur = ts_tree_cursor_new(n);
    if (ts_tree_cursor_goto_first_child(&cur)) do {
            const char *f = ts_tree_cursor_current_field_name(&cur);
            if (!f || strcmp(f, "declarator")) continue;
            TSNode d = ts_tree_cursor_current_node(&cur);
            TSNode name = declared_name(d, 0);
            if (ts_node_is_null(name)) continue;
            begin_def(c, "TypeAlias", 0, line_of(name), text(c, name));
            buf *o = c->out;
            int first = 1;
            if (has_body) {
                /* typedef struct X {…} Y: the body is the Struct's; say what it aliases without it */
                TSNode tname = field(type, "name");
                buf what = {0};
                const char *tt = ts_node_type(type);
                buf_put(&what, tt, strchr(tt, '_') - tt);
                if (!ts_node_is_null(tname)) buf_putc(&what, ' '), buf_put(&what, text(c, tname).ptr, text(c, tname).len);
                else buf_puts(&what, " {…}");
                json_member_str(o, &first, "aliases", what.data, what.len);
                anonymous_fields(c, type, o, &first);
            } else {
                wstr all = text(c, n);
                member_collapsed(o, &first, "signature", all.ptr, all.len);
                wstr tt = text(c, type);
                member_collapsed(o, &first, "aliases", tt.ptr, tt.len);
            }
            doc_comment(c, n, o, &first);
            end_def(c);
        } while (ts_tree_cursor_goto_next_sibling(&cur));
    ts_tree_cursor_delete(&cur);
}

static void declaration(ctx *c, TSNode n) {
    tag(c, field(n, "type"), 0);
    int local = has_keyword(c, n, "storage_class_specifier", "static");
    int external = has_keyword(c, n, "storage_class_specifier", "extern");
    int constant = has_keyword(c, n, "type_qualifier", "const");
    TSTreeCursor cur = ts_tree_cursor_new(n);
    if (ts_tree_cursor_goto_first_child(&cur)) do {
            const char *f = ts_tree_cursor_current_field_name(&cur);
            if (!f || strcmp(f, "declarator")) continue;
            TSNode d = ts_tree_cursor_current_node(&cur), value = {0};
            if (is(d, "init_declarator")) value = field(d, "value"), d = field(d, "declarator");
            int fn = 0;
            TSNode name = declared_name(d, &fn);
            if (ts_node_is_null(name)) continue;
            wstr nm = text(c, name);
            if (fn) { /* a prototype */
                buf_puts(c->out, "P\t"), field_escaped(c->out, nm.ptr, nm.len), buf_putc(c->out, '\n');
                continue;
            }
            if (external && ts_node_is_null(value)) continue; /* a declaration, defined elsewhere */
            int def = begin_def(c, constant ? "Const" : "Var", local, line_of(name), nm);
            buf *o = c->out;
            int first = 1;
            uint32_t a = ts_node_start_byte(n), z = ts_node_end_byte(d);
            TSNode type = field(n, "type");
            if (!ts_node_is_null(field(type, "body"))) { /* struct {…} x: the body is the Struct's */
                buf sig = {0};
                collapsed(&sig, c->src + a, ts_node_start_byte(field(type, "body")) - a);
                buf_puts(&sig, " {…} ");
                wstr dt = text(c, d);
                collapsed(&sig, dt.ptr, dt.len);
                json_member_str(o, &first, "signature", sig.data, sig.len);
            } else {
                member_collapsed(o, &first, "signature", c->src + a, z - a);
            }
            json_member_str(o, &first, "visibility", local ? "static" : "exported", local ? 6 : 8);
            doc_comment(c, n, o, &first);
            end_def(c);
            if (!ts_node_is_null(value)) uses(c, value, def);
        } while (ts_tree_cursor_goto_next_sibling(&cur));
    ts_tree_cursor_delete(&cur);
}

static void include(ctx *c, TSNode n) {
    TSNode p = field(n, "path");
    wstr w = text(c, p);
    char kind;
    if (is(p, "string_literal") && w.len >= 2) kind = 'q';
    else if (is(p, "system_lib_string") && w.len >= 2) kind = 's';
    else return; /* #include MACRO: not followed */
    buf_puts(c->out, "I\t"), buf_putu(c->out, line_of(n)), buf_putc(c->out, '\t'), buf_putc(c->out, kind);
    buf_putc(c->out, '\t'), field_escaped(c->out, w.ptr + 1, w.len - 2), buf_putc(c->out, '\n');
}

static void macro(ctx *c, TSNode n, wstr guard) {
    TSNode name = field(n, "name"), value = field(n, "value"), params = field(n, "parameters");
    if (ts_node_is_null(name)) return;
    wstr nm = text(c, name);
    if (ts_node_is_null(value) && ts_node_is_null(params) && guard.len == nm.len && !memcmp(guard.ptr, nm.ptr, nm.len))
        return; /* the include guard */
    begin_def(c, "Macro", 1, line_of(name), nm);
    buf *o = c->out;
    int first = 1;
    if (!ts_node_is_null(params) && c->level < 3) {
        wstr p = text(c, params);
        member_collapsed(o, &first, "parameters", p.ptr, p.len);
    }
    if (!ts_node_is_null(value)) {
        wstr v = text(c, value);
        member_collapsed(o, &first, "value", v.ptr, v.len > 400 ? 400 : v.len);
    }
    if (c->cond) json_member_str(o, &first, "if", c->cond, strlen(c->cond));
    doc_comment(c, n, o, &first);
    end_def(c);
}

static void top_level(ctx *c, TSNode n, wstr guard);
static void branch(ctx *c, TSNode n, const char *outer);

/* the i-th named child of n, at file scope (*next: the last child it used) */
static void top_level_item(ctx *c, TSNode n, uint32_t i, uint32_t *next, wstr guard) {
    uint32_t count = ts_node_named_child_count(n);
    {
        TSNode k = ts_node_named_child(n, i);
        const char *t = ts_node_type(k);
        if (!strcmp(t, "function_declarator") && i + 1 < count && is(ts_node_named_child(n, i + 1), "compound_statement")) {
            /* recovery: `MACRO type\nname(...) {…}` can come apart into loose siblings — type words and
             * ERRORs on the lines before, the declarator, the body. Put the definition back together. */
            uint32_t first = i;
            while (first > 0) {
                TSNode p = ts_node_named_child(n, first - 1);
                const char *pt = ts_node_type(p);
                int specifier = !strcmp(pt, "type_identifier") || !strcmp(pt, "primitive_type") || !strcmp(pt, "ERROR") ||
                                !strcmp(pt, "storage_class_specifier") || !strcmp(pt, "type_qualifier") ||
                                !strcmp(pt, "sized_type_specifier");
                if (!specifier || ts_node_end_point(p).row + 1 < ts_node_start_point(ts_node_named_child(n, first)).row) break;
                first--;
            }
            TSNode body = ts_node_named_child(n, i + 1);
            function_parts(c, ts_node_named_child(n, first), k, body, body);
            *next = i + 1;
        } else if (!strcmp(t, "function_definition")) function_definition(c, k);
        else if (!strcmp(t, "declaration")) declaration(c, k);
        else if (!strcmp(t, "type_definition")) type_definition(c, k);
        else if (!strcmp(t, "struct_specifier") || !strcmp(t, "union_specifier") || !strcmp(t, "enum_specifier"))
            tag(c, k, 0);
        else if (!strcmp(t, "preproc_include")) include(c, k);
        else if (!strcmp(t, "preproc_def") || !strcmp(t, "preproc_function_def")) macro(c, k, guard);
        else if (!strcmp(t, "preproc_ifdef") || !strcmp(t, "preproc_if")) branch(c, k, c->cond);
        else if (!strncmp(t, "preproc_", 8) || !strcmp(t, "ERROR") || !strcmp(t, "linkage_specification") ||
                   !strcmp(t, "declaration_list"))
            top_level(c, k, (wstr){0});
    }
}

/* nesting the walk follows (#if in #if, ERROR in ERROR); wasmtime's native stack, not ours, is the limit */
#define MAX_DEPTH 200

static void top_level(ctx *c, TSNode n, wstr guard) {
    if (c->depth >= MAX_DEPTH) {
        c->too_deep++;
        return;
    }
    c->depth++;
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; i++) top_level_item(c, n, i, &i, guard);
    c->depth--;
}

/* "outer && (this)" as a new string (outer may be 0) */
static const char *conjoin(const char *outer, const char *a, uint32_t alen, const char *b, uint32_t blen) {
    buf out = {0};
    if (outer) buf_puts(&out, outer), buf_puts(&out, " && ");
    buf_put(&out, a, alen), buf_put(&out, b, blen), buf_putc(&out, 0);
    return out.data;
}

/* #if/#ifdef/#elif… and its alternatives: every branch is read, each with its condition (as written,
 * spaces collapsed; #ifdef X is defined(X), #else the negation of what came before) */
static void branch(ctx *c, TSNode n, const char *outer) {
    if (c->depth >= MAX_DEPTH) {
        c->too_deep++;
        return;
    }
    c->depth++;
    TSNode name = field(n, "name"), condition = field(n, "condition"), alternative = field(n, "alternative");
    buf test = {0};
    if (!ts_node_is_null(condition)) {
        wstr w = text(c, condition);
        buf_putc(&test, '('), collapsed(&test, w.ptr, w.len), buf_putc(&test, ')');
    } else if (!ts_node_is_null(name)) {
        wstr directive = text(c, ts_node_child(n, 0)), nm = text(c, name);
        int negated = directive.len >= 4 && !memcmp(directive.ptr + directive.len - 4, "ndef", 4);
        buf_puts(&test, negated ? "!defined(" : "defined("), buf_put(&test, nm.ptr, nm.len), buf_putc(&test, ')');
    } else {
        buf_puts(&test, "(?)");
    }
    /* a branch that holds #error is not the one a working build takes */
    uint32_t nchildren = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < nchildren; i++) {
        TSNode k = ts_node_named_child(n, i);
        if (is(k, "preproc_call") && wstr_eq(text(c, field(k, "directive")), "#error")) {
            buf marked = {0};
            buf_puts(&marked, "#error("), buf_put(&marked, test.data, test.len), buf_putc(&marked, ')');
            test = marked;
            break;
        }
    }
    const char *saved = c->cond;
    c->cond = conjoin(outer, test.data, test.len, "", 0);
    wstr guard = !ts_node_is_null(name) && test.data[0] == '!' ? text(c, name) : (wstr){0};
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; i++) {
        TSNode k = ts_node_named_child(n, i);
        if (ts_node_eq(k, name) || ts_node_eq(k, condition) || ts_node_eq(k, alternative)) continue;
        top_level_item(c, n, i, &i, guard);
    }
    if (!ts_node_is_null(alternative)) {
        const char *otherwise = conjoin(outer, "!", 1, test.data, test.len);
        if (is(alternative, "preproc_else")) {
            c->cond = otherwise;
            top_level(c, alternative, (wstr){0});
        } else {
            branch(c, alternative, otherwise);
        }
    }
    c->cond = saved;
    c->depth--;
}


static uint32_t count_errors(TSNode root) {
    if (!ts_node_has_error(root)) return 0;
    uint32_t errors = 0;
    TSTreeCursor cur = ts_tree_cursor_new(root);
    for (;;) {
        TSNode k = ts_tree_cursor_current_node(&cur);
        if (ts_node_is_error(k) || ts_node_is_missing(k)) errors++;
        else if (ts_node_has_error(k) && ts_tree_cursor_goto_first_child(&cur)) continue;
        while (!ts_tree_cursor_goto_next_sibling(&cur))
            if (!ts_tree_cursor_goto_parent(&cur)) goto done;
    }
done:
    ts_tree_cursor_delete(&cur);
    return errors;
}

/* one file's records at the richest level whose compressed size fits the limit (the Python host will
 * not lift a partial much over 2.5 MiB); a file that needed less says so in a T record */
static void parse_one(TSParser *parser, wstr path, wstr bytes, int include_source, uint32_t limit, buf *out) {
    TSTree *tree = ts_parser_parse_string(parser, 0, bytes.ptr, bytes.len);
    if (!tree) { /* no timeout or cancellation is ever set, so this is not expected */
        buf_puts(out, "S\t"), field_escaped(out, path.ptr, path.len), buf_puts(out, "\ttree-sitter gave no tree\n");
        return;
    }
    TSNode root = ts_tree_root_node(tree);
    uint32_t errors = count_errors(root);
    buf records = {0}, packed = {0};
    for (int level = 0; level <= 3; level++) {
        records.len = 0;
        buf_puts(&records, "F\t"), field_escaped(&records, path.ptr, path.len), buf_putc(&records, '\t');
        buf_putu(&records, errors), buf_putc(&records, '\t'), buf_putu(&records, bytes.len), buf_putc(&records, '\n');
        if (level) buf_puts(&records, "T\t"), buf_putu(&records, (uint64_t)level), buf_putc(&records, '\n');
        ctx c = {.src = bytes.ptr, .len = bytes.len, .out = &records, .include_source = include_source, .level = level};
        top_level(&c, root, (wstr){0});
        if (c.indirect) buf_puts(&records, "X\t"), buf_putu(&records, c.indirect), buf_putc(&records, '\n');
        if (c.too_deep) buf_puts(&records, "K\t"), buf_putu(&records, c.too_deep), buf_putc(&records, '\n');
        free(c.refs.keys), free(c.refs.lens), free(c.refs.values);
        free(c.calls.keys), free(c.calls.lens), free(c.calls.values), free(c.sites);
        packed.len = 0;
        lz_compress(records.data, records.len, &packed);
        if (packed.len <= limit) break;
    }
    buf_put(out, records.data, records.len);
    free(records.data), free(packed.data);
    ts_tree_delete(tree);
}

static uint32_t option_uint(const wpair *options, uint32_t n, const char *key, uint32_t otherwise) {
    for (uint32_t i = 0; i < n; i++) {
        if (!wstr_eq(options[i].key, key)) continue;
        uint64_t v = 0;
        for (uint32_t k = 0; k < options[i].value.len; k++) {
            char ch = options[i].value.ptr[k];
            if (ch < '0' || ch > '9' || v > 0xffffffffu / 10) return otherwise;
            v = v * 10 + (uint64_t)(ch - '0');
        }
        return options[i].value.len ? (uint32_t)v : otherwise;
    }
    return otherwise;
}

void plugin_describe(wmanifest *m) {
    static wstr extensions[2];
    extensions[0] = wstr_c(".c"), extensions[1] = wstr_c(".h");
    m->name = wstr_c(C_PLUGIN_NAME);
    m->version = wstr_c(C_PLUGIN_VERSION);
    m->extensions = (wlist){extensions, 2};
    m->logo_is_some = 0;
}

int plugin_parse(int is_doc, wstr doc_name, wstr doc_bytes, const wstr *files, uint32_t nfiles, const wpair *options,
                 uint32_t noptions, buf *partial, buf *error) {
    (void)error;
    int include_source = option_true(options, noptions, "include_source");
    uint32_t limit = option_uint(options, noptions, "max_partial_bytes", 3u << 19); /* 1.5 MiB */
    TSParser *parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_c());
    if (is_doc) {
        parse_one(parser, doc_name, doc_bytes, include_source, limit, partial);
    } else {
        for (uint32_t i = 0; i < nfiles; i++) {
            wstr bytes, err;
            if (host_read(files[i], &bytes, &err)) {
                buf_puts(partial, "S\t"), field_escaped(partial, files[i].ptr, files[i].len), buf_putc(partial, '\t');
                field_escaped(partial, err.ptr, err.len), buf_putc(partial, '\n');
                continue;
            }
            parse_one(parser, files[i], bytes, include_source, limit, partial);
            free((void *)bytes.ptr); /* the host allocated it through cabi_realloc (NULL when empty) */
        }
    }
    ts_parser_delete(parser);
    buf packed = {0};
    lz_compress(partial->data ? partial->data : "", partial->len, &packed);
    free(partial->data);
    *partial = packed;
    return 0;
}
