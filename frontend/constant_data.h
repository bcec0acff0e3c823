// SPDX-License-Identifier: MIT
/* constant_data.h: the data of constant nodes in format v1.1: base64 for
 * inline data, CRC-32 checksums, and side files beside the XML file. */
#ifndef DTOPT_FRONTEND_CONSTANT_DATA_H
#define DTOPT_FRONTEND_CONSTANT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"

/* Data up to this many bytes is written inline, larger data to a side
 * file (when the writer writes a file, not a stream). */
#define DT_INLINE_MAX_BYTES 4096
/* The most data an inline <data base64=...> may carry: libxml2 refuses
 * attribute values over 10 MB (the reader does not set XML_PARSE_HUGE,
 * whose limits guard it), and this much data is 8 MiB of base64. */
#define DT_INLINE_LIMIT_BYTES (6u << 20)

/* Write n bytes as canonical base64 (RFC 4648 alphabet, '=' padding, no
 * line breaks). Returns false on a stream error. */
bool dt_base64_write(FILE *out, const unsigned char *p, size_t n);
/* The byte count `text` (len chars) decodes to, or -1 when it is not
 * canonical base64; then *bad is the offset of the first wrong char. */
int64_t dt_base64_size(const char *text, size_t len, size_t *bad);
/* Decode canonical base64 (dt_base64_size said how much) into out. */
void dt_base64_decode(const char *text, size_t len, unsigned char *out);

/* Whether `name` may name a side file: relative, no empty, "." or ".."
 * component, no backslash (so it stays in the XML file's folder or below
 * it). On false, err says why. */
bool dt_side_path_ok(const char *name, char *err, size_t errlen);
/* The canonical side-file name of a constant: its node name (bytes other
 * than [A-Za-z0-9_-] become '_', at most 64) "-" its CRC-32 in 8 hex
 * digits ".bin"; content-addressed, so graphs in one folder never clash. */
void dt_side_file_name(const char *node, uint32_t crc, char *buf, size_t n);
/* Open side file `name` in folder `dir`, which must be a regular file of
 * exactly `size` bytes (checked before anything is allocated or read).
 * Returns its descriptor for dt_side_file_load, or -1 with err set. */
int dt_side_file_open(const char *dir, const char *name, uint64_t size,
		      char *err, size_t errlen);
/* Read the `size` bytes of the side file open on fd into dst and close
 * it; they must have CRC-32 `crc`. Returns 0, or -1 with err set. */
int dt_side_file_load(int fd, const char *name, unsigned char *dst,
		      uint64_t size, uint32_t crc, char *err, size_t errlen);
/* Write side file `name` in folder `dir` atomically (a temporary file
 * renamed over it). A file already there with these bytes is kept; one
 * with other bytes is not overwritten (an error). Returns 0, or -1 with
 * err set. */
int dt_side_file_write(const char *dir, const char *name,
		       const unsigned char *p, uint64_t size, char *err,
		       size_t errlen);
/* The folder of file `path` ("." when it names none) into buf. */
void dt_path_dir(const char *path, char *buf, size_t n);

#endif
