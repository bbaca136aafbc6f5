/* replay_main.c: runs a libFuzzer harness without libFuzzer, so `make unit`
 * can replay the seed corpus and the saved regressions with gcc and
 * ASan/UBSan: calls LLVMFuzzerTestOneInput once per regular file of each
 * directory (or file) named on the command line, in name order. Exits 1 when
 * a file cannot be read or nothing was run; a sanitizer report or an abort()
 * in the harness ends the process itself. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *b = realloc(buf, cap *= 2);
			if (!b) {
				free(buf);
				buf = NULL;
			}
			buf = b;
		}
	}
	int bad = ferror(f) || !buf;
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read failed\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, as libFuzzer passes, so an overread is reported. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	size_t runs = 0;
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0)
			continue; /* a harness may have no regressions yet */
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i]) < 0;
			runs++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			failed = 1;
			continue;
		}
		char **names = NULL;
		size_t n = 0, cap = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			if (n == cap) {
				char **b = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));
				if (!b)
					abort();
				names = b;
			}
			if (asprintf(&names[n], "%s/%s", argv[i], e->d_name) < 0)
				abort();
			n++;
		}
		closedir(d);
		qsort(names, n, sizeof(*names), by_name);
		for (size_t j = 0; j < n; j++) {
			if (stat(names[j], &st) == 0 && S_ISREG(st.st_mode)) {
				failed |= run_file(names[j]) < 0;
				runs++;
			}
			free(names[j]);
		}
		free(names);
	}
	if (runs == 0) {
		fprintf(stderr, "%s: no inputs found\n", argv[0]);
		return 1;
	}
	fprintf(stderr, "%s: %zu inputs replayed\n", argv[0], runs);
	return failed;
}
