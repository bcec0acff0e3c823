// SPDX-License-Identifier: MIT
/* constant_data.c: encoding, checking and storing the data of constant
 * nodes (base64, CRC-32, side files); see docs/format.md "Constants". */
#include "constant_data.h"
#include "ir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool dt_base64_write(FILE *out, const unsigned char *p, size_t n)
{
	char buf[4096];
	size_t at = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		buf[at++] = alphabet[v >> 18];
		buf[at++] = alphabet[(v >> 12) & 63];
		buf[at++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		buf[at++] = i + 2 < n ? alphabet[v & 63] : '=';
		if (at + 4 > sizeof buf) {
			fwrite(buf, 1, at, out);
			at = 0;
		}
	}
	fwrite(buf, 1, at, out);
	return !ferror(out);
}

static int sextet(char c)
{
	const char *at = c ? strchr(alphabet, c) : NULL;
	return at ? (int)(at - alphabet) : -1;
}

int64_t dt_base64_size(const char *text, size_t len, size_t *bad)
{
	if (len % 4) {
		*bad = len;
		return -1;
	}
	size_t pad = len && text[len - 1] == '=' ? 1 + (text[len - 2] == '=') : 0;
	for (size_t i = 0; i < len - pad; i++)
		if (sextet(text[i]) < 0) {
			*bad = i;
			return -1;
		}
	/* Canonical: the bits the padding leaves over are zero. */
	if ((pad == 1 && (sextet(text[len - 2]) & 3)) ||
	    (pad == 2 && (sextet(text[len - 3]) & 15))) {
		*bad = len - pad - 1;
		return -1;
	}
	return (int64_t)(len / 4 * 3 - pad);
}

void dt_base64_decode(const char *text, size_t len, unsigned char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0;
		int n = 0;
		for (int k = 0; k < 4; k++) {
			int s = text[i + k] == '=' ? 0 : sextet(text[i + k]);
			n += text[i + k] != '=';
			v = v << 6 | (uint32_t)s;
		}
		out[o++] = (unsigned char)(v >> 16);
		if (n > 2)
			out[o++] = (unsigned char)(v >> 8);
		if (n > 3)
			out[o++] = (unsigned char)v;
	}
}

bool dt_side_path_ok(const char *name, char *err, size_t errlen)
{
	if (!*name || name[0] == '/') {
		dt_fail_message(err, errlen, "side file '%s' must be a path "
				"relative to the XML file's folder", name);
		return false;
	}
	if (strchr(name, '\\')) {
		dt_fail_message(err, errlen, "side file '%s' has a backslash "
				"(use '/' between folders)", name);
		return false;
	}
	for (const char *s = name; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.')) {
			dt_fail_message(err, errlen, "side file '%s' must stay "
					"in the XML file's folder (no '..', '.' "
					"or empty path components)", name);
			return false;
		}
		s += n + (s[n] == '/');
		if (s[-1] == '/' && !*s) {
			dt_fail_message(err, errlen, "side file '%s' names a "
					"folder", name);
			return false;
		}
	}
	return true;
}

void dt_side_file_name(const char *node, uint32_t crc, char *buf, size_t n)
{
	char safe[65];
	size_t k = 0;
	for (; node[k] && k < sizeof safe - 1; k++) {
		char c = node[k];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';
		safe[k] = ok ? c : '_';
	}
	safe[k] = 0;
	snprintf(buf, n, "%s-%08x.bin", k ? safe : "constant", crc);
}

void dt_path_dir(const char *path, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(buf, n, ".");
	else if (slash == path)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

/* Read exactly n bytes; false at an early end or error. */
static bool read_all(int fd, unsigned char *dst, uint64_t n)
{
	while (n) {
		ssize_t got = read(fd, dst, n > (1u << 30) ? (1u << 30) : n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		dst += got;
		n -= (uint64_t)got;
	}
	return true;
}

int dt_side_file_open(const char *dir, const char *name, uint64_t size,
		      char *err, size_t errlen)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *path = dt_malloc(len);
	snprintf(path, len, "%s/%s", dir, name);
	/* Nonblocking, so a FIFO planted under the name cannot hang the read
	 * (fstat then refuses it); regular files ignore the flag. */
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	dt_free(path);
	struct stat st;
	if (fd < 0)
		return dt_fail_message(err, errlen, "cannot open side file "
				       "'%s': %s", name, strerror(errno)), -1;
	int rc = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		rc = dt_fail_message(err, errlen, "side file '%s' is not a "
				     "regular file", name);
	else if ((uint64_t)st.st_size != size)
		rc = dt_fail_message(err, errlen, "side file '%s' has %llu "
				     "bytes but <data bytes=\"%llu\"> says %s",
				     name, (unsigned long long)st.st_size,
				     (unsigned long long)size,
				     (uint64_t)st.st_size < size
					     ? "more (truncated?)"
					     : "fewer");
	if (rc) {
		close(fd);
		return -1;
	}
	return fd;
}

int dt_side_file_load(int fd, const char *name, unsigned char *dst,
		      uint64_t size, uint32_t crc, char *err, size_t errlen)
{
	int rc = 0;
	if (!read_all(fd, dst, size))
		rc = dt_fail_message(err, errlen, "cannot read side file "
				     "'%s': %s", name, strerror(errno));
	else if (dt_crc32(dst, size) != crc)
		rc = dt_fail_message(err, errlen, "side file '%s' has CRC-32 "
				     "%08x but <data crc32=\"%08x\"> says "
				     "otherwise (the file changed)", name,
				     dt_crc32(dst, size), crc);
	close(fd);
	return rc ? -1 : 0;
}

/* Whether the file at path holds exactly these bytes. */
static bool same_contents(const char *path, const unsigned char *p,
			  uint64_t size)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	bool same = fd >= 0 && fstat(fd, &st) == 0 &&
		    (uint64_t)st.st_size == size;
	unsigned char buf[1 << 16];
	for (uint64_t at = 0; same && at < size;) {
		uint64_t n = size - at < sizeof buf ? size - at : sizeof buf;
		same = read_all(fd, buf, n) && memcmp(buf, p + at, n) == 0;
		at += n;
	}
	if (fd >= 0)
		close(fd);
	return same;
}

int dt_side_file_write(const char *dir, const char *name,
		       const unsigned char *p, uint64_t size, char *err,
		       size_t errlen)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *path = dt_malloc(len), *tmp = NULL;
	snprintf(path, len, "%s/%s", dir, name);
	int rc = 0;
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode) || !same_contents(path, p, size))
			rc = dt_fail_message(err, errlen, "side file '%s' "
					     "exists with other contents; not "
					     "overwritten", path);
		goto done;
	}
	int fd = dt_temp_beside(path, 0644, &tmp);
	if (fd < 0) {
		rc = dt_fail_message(err, errlen, "cannot create a temporary "
				     "file for '%s': %s", path, strerror(errno));
		goto done;
	}
	for (uint64_t at = 0; at < size && !rc;) {
		ssize_t put = write(fd, p + at, size - at > (1u << 30)
							 ? (1u << 30)
							 : size - at);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			rc = -1;
		else
			at += (uint64_t)put;
	}
	if (close(fd) != 0 || rc || rename(tmp, path) != 0) {
		rc = dt_fail_message(err, errlen, "cannot write side file "
				     "'%s': %s", path, strerror(errno));
		unlink(tmp);
	}
done:
	dt_free(path);
	dt_free(tmp);
	return rc ? -1 : 0;
}
