/* The core-module side of the component: exports lifted by the host, imports lowered to the host.
 *
 * Export conventions (canonical ABI, MAX_FLAT_PARAMS 16, MAX_FLAT_RESULTS 1): parameters are flattened
 * (a string or list is (ptr, len); a variant is its i32 case tag followed by the join of its cases'
 * flattened payloads); a result that flattens to more than one value is written to a return area whose
 * address the function returns. Import conventions: same flattening of parameters, and a result that
 * flattens to more than one value is written by the host at a return pointer passed as the last
 * argument, allocating any lists it returns through our cabi_realloc. */
#include "abi.h"

#include <stdlib.h>
#include <string.h>

#define HOST "drsg:preprocess/host@1.0.0"
#define PRE "drsg:preprocess/preprocessor@1.0.0#"
#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module(HOST), import_name(name)))

/* ------------------------------------------------------------------------------------------ memory */
/* Called by the host to place arguments and returned lists in our memory (old_size 0: a new block). */
EXPORT("cabi_realloc") void *cabi_realloc(void *old, size_t old_size, size_t align, size_t new_size) {
    (void)old_size;
    if (new_size == 0) return (void *)align; /* a non-null, aligned, empty block */
    return xrealloc(old, new_size); /* malloc aligns to 16, more than any align this world asks for */
}

/* ------------------------------------------------------------------------------------------ imports */
IMPORT("list") void drsg_host_list(const char *suffix, uint32_t suffix_len, wresult_list *ret);
IMPORT("read") void drsg_host_read(const char *path, uint32_t path_len, wresult_list *ret);
IMPORT("label") void drsg_host_label(woption_str *ret);

int host_list(wstr suffix, wstr **items, uint32_t *count, wstr *err) {
    wresult_list r;
    drsg_host_list(suffix.ptr, suffix.len, &r);
    if (r.is_err) return *err = r.v.err, 1;
    *items = r.v.ok.ptr, *count = r.v.ok.len;
    return 0;
}

int host_read(wstr path, wstr *bytes, wstr *err) {
    wresult_list r;
    drsg_host_read(path.ptr, path.len, &r);
    if (r.is_err) return *err = r.v.err, 1;
    /* an empty file's list points at cabi_realloc's sentinel (its alignment), not at a heap block: give
     * the caller NULL, which free() accepts, instead of a pointer free() would chase to 0xfffffffd */
    *bytes = r.v.ok.len ? (wstr){r.v.ok.ptr, r.v.ok.len} : (wstr){0, 0};
    return 0;
}

int host_label(wstr *label) {
    woption_str r;
    drsg_host_label(&r);
    if (r.is_some) *label = r.value;
    return r.is_some;
}

/* ------------------------------------------------------------------------------------------ exports */
static wmanifest manifest_area;
static wresult_list parse_area;
static wresult_output assemble_area;

EXPORT(PRE "describe") wmanifest *drsg_describe(void) {
    memset(&manifest_area, 0, sizeof manifest_area);
    plugin_describe(&manifest_area);
    return &manifest_area;
}

/* parse(subject: input, options): input flattens to (tag, p0, p1, p2, p3): document(doc) fills all four
 * (name ptr/len, bytes ptr/len), files(list<string>) the first two. */
EXPORT(PRE "parse")
wresult_list *drsg_parse(int32_t tag, int32_t p0, int32_t p1, int32_t p2, int32_t p3, wpair *options,
                         uint32_t noptions) {
    buf partial = {0}, error = {0};
    int failed;
    if (tag == 0)
        failed = plugin_parse(1, (wstr){(const char *)p0, (uint32_t)p1}, (wstr){(const char *)p2, (uint32_t)p3}, 0, 0,
                              options, noptions, &partial, &error);
    else
        failed = plugin_parse(0, (wstr){0}, (wstr){0}, (const wstr *)p0, (uint32_t)p1, options, noptions, &partial,
                              &error);
    memset(&parse_area, 0, sizeof parse_area);
    parse_area.is_err = failed ? 1 : 0;
    if (failed) parse_area.v.err = buf_wstr(&error);
    else parse_area.v.ok = (wlist){partial.data, partial.len};
    return &parse_area;
}

EXPORT(PRE "assemble")
wresult_output *drsg_assemble(wstr *partials, uint32_t npartials, wpair *options, uint32_t noptions) {
    buf error = {0};
    memset(&assemble_area, 0, sizeof assemble_area);
    int failed = plugin_assemble(partials, npartials, options, noptions, &assemble_area.v.ok, &error);
    if (failed) {
        memset(&assemble_area, 0, sizeof assemble_area);
        assemble_area.is_err = 1;
        assemble_area.v.err = buf_wstr(&error);
    }
    return &assemble_area;
}
