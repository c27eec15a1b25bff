/* A small LZ77 byte compressor for partials: the Python host (wasmtime-py's dynamic component API)
 * refuses to lift a list<u8> result much over ~2.5 MiB ("fuel allocated for hostcalls has been
 * exhausted"), and a partial is repetitive text, so it travels compressed.
 *
 * Format: 'Z', the raw length as a LEB128 varint, then sequences of
 *   varint literal_count, the literals, varint match_length (0 ends the stream), varint distance
 * with match_length >= 4 copying from distance bytes back (overlaps allowed). */
#ifndef DRSG_GUEST_LZ_H
#define DRSG_GUEST_LZ_H
#include "abi.h"

void lz_compress(const char *data, uint32_t len, buf *out);
/* 0 ok; 1 when in is not a well-formed stream */
int lz_decompress(const char *in, uint32_t len, buf *out);
#endif
