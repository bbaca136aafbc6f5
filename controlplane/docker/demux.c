/* demux.c: incremental parser of the multiplexed attach stream (Docker Engine
 * API v1.41, "Attach to a container", section "Stream format"). Pure: no I/O,
 * no allocation; hands payload pieces to a callback as they arrive, so a
 * frame of any size costs no buffering here. */
#include "docker.h"

#include <string.h>

/* Prepares d to parse a stream from its first byte; fn and userdata are
 * borrowed and called from docker_demux_feed. */
void docker_demux_init(struct docker_demux *d, docker_demux_fn fn, void *userdata)
{
	memset(d, 0, sizeof(*d));
	d->fn = fn;
	d->userdata = userdata;
}

/* Feeds len bytes of the stream (data borrowed). Payload pieces go to fn in
 * stream order. Returns 0, or -1 when a header names a stream other than
 * stdin (0), stdout (1) or stderr (2): the engine's framing is lost and the
 * caller must stop reading. Bytes 1-3 of a header are ignored, as the
 * engine's own reader (moby pkg/stdcopy) does. After -1 every later call
 * returns -1. Never blocks. */
int docker_demux_feed(struct docker_demux *d, const char *data, size_t len)
{
	while (len > 0) {
		if (d->remaining == 0) {
			if (d->header_len == sizeof(d->header))
				return -1; /* stays corrupt once a bad header was seen */
			size_t need = sizeof(d->header) - d->header_len;
			size_t take = len < need ? len : need;
			memcpy(d->header + d->header_len, data, take);
			d->header_len += take;
			data += take;
			len -= take;
			if (d->header_len < sizeof(d->header))
				return 0;
			unsigned char type = d->header[0];
			if (type > DOCKER_STREAM_STDERR)
				return -1;
			d->stream = (enum docker_stream)type;
			d->remaining = (uint32_t)d->header[4] << 24 | (uint32_t)d->header[5] << 16 |
			               (uint32_t)d->header[6] << 8 | (uint32_t)d->header[7];
			if (d->remaining == 0) {
				d->header_len = 0; /* an empty frame: nothing to hand out */
				continue;
			}
			if (len == 0)
				return 0;
		}
		size_t take = len < d->remaining ? len : d->remaining;
		if (d->fn)
			d->fn(d->userdata, d->stream, data, take);
		data += take;
		len -= take;
		d->remaining -= (uint32_t)take;
		if (d->remaining == 0)
			d->header_len = 0;
	}
	return 0;
}
