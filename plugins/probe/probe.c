/* probe@1.0.0 (extension .probe): a test plugin built the standard way — wasi-libc's stdio, getenv,
 * fopen, the clocks and getentropy, linked against wasi_snapshot_preview1 and made a component through
 * jco's preview1 adapter — so it imports the wasi:cli/io/clocks/random/filesystem interfaces such
 * toolchains plant. Each parse records what those calls got, prints to stdout and stderr, and still
 * reads its file through the host; option exit=N makes parse call exit(N) instead, and fail=N print N
 * numbered lines to stderr and answer err (both after a line on stderr). Built by
 * plugins/build/Makefile (probe.wasm, probe_sockets.wasm) for tests/integration/test_plugin_wasi.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "json.h"

static const wstr extensions[] = {{"probe", 5}};

void plugin_describe(wmanifest *out) {
    out->name = wstr_c("probe");
    out->version = wstr_c("1.0.0");
    out->extensions = (wlist){(void *)extensions, 1};
}

extern char **environ;

static void hex(buf *b, const unsigned char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) buf_putc(b, "0123456789abcdef"[bytes[i] >> 4]), buf_putc(b, "0123456789abcdef"[bytes[i] & 15]);
}

int plugin_parse(int is_doc, wstr doc_name, wstr doc_bytes, const wstr *files, uint32_t nfiles, const wpair *options,
                 uint32_t noptions, buf *partial, buf *error) {
    for (uint32_t i = 0; i < noptions; i++) {
        int n = 0;
        for (uint32_t j = 0; j < options[i].value.len; j++) n = n * 10 + (options[i].value.ptr[j] - '0');
        if (wstr_eq(options[i].key, "exit")) {
            fprintf(stderr, "probe: exiting with %d\n", n);
            exit(n);
        }
        if (wstr_eq(options[i].key, "fail")) {
            for (int line = 1; line <= n; line++) fprintf(stderr, "probe: line %d of %d before failing\n", line, n);
            fprintf(stderr, "probe: giving up\n");
            buf_puts(error, "probe failed as asked");
            return 1;
        }
    }
    int first = 1;
    buf_putc(partial, '{');
    const char *home = getenv("HOME");
    json_member_int(partial, &first, "env_home", home != 0);
    int count = 0;
    for (char **e = environ; e && *e; e++) count++;
    json_member_int(partial, &first, "environ", count);
    errno = 0;
    FILE *f = fopen("/etc/passwd", "r");
    json_member_int(partial, &first, "open_ok", f != 0);
    json_member_int(partial, &first, "open_errno", f ? 0 : errno);
    if (f) fclose(f);
    struct timespec wall, mono;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    json_member_int(partial, &first, "wall_s", (int64_t)wall.tv_sec);
    json_member_int(partial, &first, "mono_ns", (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec);
    unsigned char entropy[16];
    json_member_int(partial, &first, "entropy_rc", getentropy(entropy, sizeof entropy));
    buf r = {0};
    hex(&r, entropy, sizeof entropy);
    json_member_str(partial, &first, "random", r.data, r.len);
    json_member_int(partial, &first, "printed", printf("probe: stdout from the plugin\n"));
    fflush(stdout);
    fprintf(stderr, "probe: stderr from the plugin\n");
    uint64_t total = 0;
    if (is_doc) total = doc_bytes.len, (void)doc_name;
    for (uint32_t i = 0; i < nfiles; i++) {
        wstr bytes, err;
        if (host_read(files[i], &bytes, &err) == 0) total += bytes.len;
    }
    json_member_int(partial, &first, "bytes", (int64_t)total);
    if (nfiles) json_member_str(partial, &first, "file", files[0].ptr, files[0].len);
    buf_putc(partial, '}');
    (void)error;
    return 0;
}

#ifdef PROBE_SOCKETS /* probe_sockets.wasm: one wasi:sockets import too (sockets.wit), which install refuses */
__attribute__((import_module("wasi:sockets/instance-network@0.2.12"), import_name("instance-network")))
int32_t probe_instance_network(void);
__attribute__((export_name("probe-socket"))) int32_t probe_socket(void) { return probe_instance_network(); }
#endif

/* one Probe node per partial, its properties the partial's JSON object, keyed by the file */
int plugin_assemble(const wstr *partials, uint32_t npartials, const wpair *options, uint32_t noptions, woutput *out,
                    buf *error) {
    wnode *nodes = xmalloc(sizeof(wnode) * (npartials ? npartials : 1));
    for (uint32_t i = 0; i < npartials; i++) {
        const char *p = partials[i].ptr, *end = p + partials[i].len;
        const char *at = 0;
        for (const char *q = p; q + 8 <= end; q++)
            if (memcmp(q, "\"file\":\"", 8) == 0) at = q + 8;
        buf key = {0};
        if (at) for (; at < end && *at != '"'; at++) buf_putc(&key, *at);
        else buf_puts(&key, "document"), buf_putu(&key, i);
        nodes[i] = (wnode){buf_wstr(&key), wstr_c("Probe"), {0, 0}, partials[i]};
    }
    out->nodes = (wlist){nodes, npartials};
    out->report.facts = npartials;
    (void)options, (void)noptions, (void)error;
    return 0;
}
