/* Force-included (-include) before the tree-sitter runtime's sources: its stdio and clock calls go to
 * drsg_* stand-ins (stubs.c) instead of wasi-libc's, whose stdio streams and clocks would import
 * wasi_snapshot_preview1 (fd_write, clock_time_get), which the drsg host does not provide. The runtime
 * writes to a FILE only for debug graphs and allocation-failure messages, formats text only for
 * its logger and ts_node_string (a plugin uses neither), and reads the clock only for
 * parse timeouts, which a plugin never sets (the host's fuel is the limit). */
#ifndef DRSG_TS_PRELUDE_H
#define DRSG_TS_PRELUDE_H
#include <stdio.h>
#include <stdarg.h>
#include <time.h>

extern FILE *const drsg_no_stream;
FILE *drsg_fdopen(int fd, const char *mode);
int drsg_fclose(FILE *f);
int drsg_fprintf(FILE *f, const char *format, ...);
int drsg_fputc(int c, FILE *f);
size_t drsg_fwrite(const void *p, size_t size, size_t n, FILE *f);
int drsg_clock_gettime(clockid_t clock, struct timespec *ts);
/* a small printf (%s %c %d %i %u %x %X %p %%, flags/width skipped, l/z/h modifiers): wasi-libc's
 * vfprintf would link its stderr stream */
int drsg_vsnprintf(char *out, size_t n, const char *format, va_list args);
int drsg_snprintf(char *out, size_t n, const char *format, ...);

#undef stderr
#define stderr drsg_no_stream
#define fdopen drsg_fdopen
#define fclose drsg_fclose
#define fprintf drsg_fprintf
#define fputc drsg_fputc
#define fwrite drsg_fwrite
#define clock_gettime drsg_clock_gettime
#define vsnprintf drsg_vsnprintf
#define snprintf drsg_snprintf
#endif
