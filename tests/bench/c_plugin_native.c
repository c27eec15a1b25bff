/* The C plugin's own code (plugins/c, plugins/guest/runtime.c and json.c) linked natively with the same
 * tree-sitter sources, for bench_c_plugin.py's native-vs-WebAssembly ratio. Host functions read the
 * disk directly. usage: c_plugin_native ROOT < paths (one a line); prints one JSON line of timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi.h"

static const char *root;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int host_read(wstr path, wstr *bytes, wstr *err) {
    char full[4096];
    snprintf(full, sizeof full, "%s/%.*s", root, (int)path.len, path.ptr);
    FILE *f = fopen(full, "rb");
    if (!f) return *err = wstr_c("cannot open"), 1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = xmalloc((size_t)size + 1);
    size_t got = fread(data, 1, (size_t)size, f);
    fclose(f);
    *bytes = (wstr){data, (uint32_t)got};
    return 0;
}

int host_list(wstr suffix, wstr **items, uint32_t *count, wstr *err) { return *err = wstr_c("not here"), 1; }
int host_label(wstr *label) { return 0; }

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) return 2;
    root = argv[1];
    if (argc == 3) { /* c_plugin_native ROOT PATH: that file's partial, to stdout */
        wstr file = wstr_c(argv[2]);
        buf partial = {0}, error = {0};
        plugin_parse(0, (wstr){0}, (wstr){0}, &file, 1, 0, 0, &partial, &error);
        fwrite(partial.data, 1, partial.len, stdout);
        return 0;
    }
    char line[4096];
    uint32_t n = 0, cap = 1024;
    wstr *partials = xmalloc(cap * sizeof *partials);
    double parse_s = 0;
    uint32_t largest = 0;
    char largest_path[4096] = "";
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strcspn(line, "\n");
        char *path = malloc(len + 1);
        memcpy(path, line, len), path[len] = 0;
        wstr file = {path, (uint32_t)len};
        buf partial = {0}, error = {0};
        double t = now();
        plugin_parse(0, (wstr){0}, (wstr){0}, &file, 1, 0, 0, &partial, &error);
        parse_s += now() - t;
        if (n == cap) cap *= 2, partials = xrealloc(partials, cap * sizeof *partials);
        if (partial.len > largest) largest = partial.len, snprintf(largest_path, sizeof largest_path, "%s", path);
        partials[n++] = buf_wstr(&partial);
    }
    woutput out = {0};
    buf error = {0};
    double t = now();
    if (plugin_assemble(partials, n, 0, 0, &out, &error)) return 1;
    double assemble_s = now() - t;
    if (getenv("C_PLUGIN_DUMP")) { /* every fact, one a line, to stderr: for comparing with the component */
        wnode *nodes = out.nodes.ptr;
        wedge *edges = out.edges.ptr;
        for (uint32_t i = 0; i < out.nodes.len; i++)
            fprintf(stderr, "N\t%.*s\t%.*s\n", (int)nodes[i].key.len, nodes[i].key.ptr, (int)nodes[i].properties.len,
                    nodes[i].properties.ptr);
        for (uint32_t i = 0; i < out.edges.len; i++)
            fprintf(stderr, "E\t%.*s\t%.*s\t%.*s\t%.*s\n", (int)edges[i].src.len, edges[i].src.ptr, (int)edges[i].type.len,
                    edges[i].type.ptr, (int)edges[i].dst.len, edges[i].dst.ptr, (int)edges[i].properties.len,
                    edges[i].properties.ptr);
    }
    printf("{\"files\": %u, \"parse_s\": %.6f, \"assemble_s\": %.6f, \"nodes\": %u, \"edges\": %u, "
           "\"largest_partial\": %u, \"largest_partial_file\": \"%s\"}\n",
           n, parse_s, assemble_s, out.nodes.len, out.edges.len, largest, largest_path);
    return 0;
}
