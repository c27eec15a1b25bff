/* The C parser plugin: shared definitions of its two halves, parse (one file's syntax tree into a
 * partial) and assemble (all partials into keyed facts, calls resolved across files).
 *
 * A partial is text (sent compressed, lz.h), one record a line, fields split by tabs (tab, newline and backslash escaped as
 * \t \n \\ inside a field); a property body is JSON object members without the braces, kept as is
 * (JSON escapes every control character, so it holds no raw tab or newline).
 *   F path errors bytes                    a file (then its records)
 *   S path reason                          a file that could not be read (skipped)
 *   T level                                the file's records were trimmed to fit (1: no _code or value
 *                                          uses; 2: no calls either; 3: only signature, visibility,
 *                                          value and if either)
 *   D label local line name props          a definition (index = its order among the file's D records)
 *   P name                                 a function prototype at file scope
 *   I line q|s written                     #include "written" (q) or <written> (s)
 *   C def line name count                  direct calls name(...) inside definition def: the first
 *                                          site's line and how many sites
 *   R def line name                        an identifier used as a value inside definition def (the
 *                                          first use; not a parameter or a local declared before it)
 *   X count                                calls through a pointer or a field (not resolved)
 *   K count                                regions nested too deep (#if in #if…) to be read */
#ifndef DRSG_C_PLUGIN_H
#define DRSG_C_PLUGIN_H
#include "abi.h"

#define C_PLUGIN_NAME "c"
#define C_PLUGIN_VERSION "1.0.0"
#define C_GENERATED_BY C_PLUGIN_NAME "@" C_PLUGIN_VERSION

void field_escaped(buf *b, const char *s, size_t len); /* one partial field */
int option_true(const wpair *options, uint32_t n, const char *key);

/* an #if condition as the plugin writes it (c_cond.c): NO, YES or MAYBE for the target clang reads */
enum { NO = 0, YES = 1, MAYBE = 2 };
int c_condition(const char *expr, int (*in_tree)(void *tree, const char *name, size_t len), void *tree);

#endif
