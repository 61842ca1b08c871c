/*
 * A stand-in for libFuzzer, so that every fuzz target runs in make test without
 * clang: each file of a corpus directory through LLVMFuzzerTestOneInput(), then
 * a fixed number of deterministic pseudo-random mutations of them (the same
 * inputs on every run, so a failure replays).
 *
 *	fuzz_<target> CORPUS_DIR [MUTATIONS]	(MUTATIONS defaults to 2000)
 *	fuzz_<target> FILE...			(run just these inputs)
 */

#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define DRIVER_MUTATIONS	2000
#define DRIVER_FILE_MAX		(4 * 1024 * 1024)

struct input {
	uint8_t		*buf;
	size_t		 len;
};

static uint64_t	 driver_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: the same sequence on every machine and run. */
static uint64_t
driver_random(void)
{
	driver_state ^= driver_state >> 12;
	driver_state ^= driver_state << 25;
	driver_state ^= driver_state >> 27;
	return (driver_state * 0x2545f4914f6cdd1dULL);
}

static int
driver_read(const char *path, struct input *in)
{
	struct stat	 st;
	FILE		*f;

	if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &st) == -1 ||
	    st.st_size > DRIVER_FILE_MAX) {
		fprintf(stderr, "driver: cannot read %s\n", path);
		if (f != NULL)
			fclose(f);
		return (-1);
	}
	in->len = (size_t)st.st_size;
	/* One spare byte for insertions, never 0 bytes for malloc. */
	if ((in->buf = malloc(in->len + 1)) == NULL ||
	    fread(in->buf, 1, in->len, f) != in->len) {
		fprintf(stderr, "driver: cannot read %s\n", path);
		fclose(f);
		return (-1);
	}
	fclose(f);
	return (0);
}

static int
driver_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* Reads every regular file of dir, by name.  Returns how many, or -1. */
static int
driver_load_dir(const char *dir, struct input **inputs)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	char		**names = NULL, path[4096];
	int		 n = 0, i, ok = 0;

	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "driver: cannot open %s\n", dir);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
			continue;
		if ((names = realloc(names, (n + 1) * sizeof(*names))) ==
		    NULL || (names[n] = strdup(path)) == NULL) {
			closedir(d);
			return (-1);
		}
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), driver_cmp);
	if ((*inputs = calloc(n + 1, sizeof(**inputs))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		if (driver_read(names[i], &(*inputs)[i]) == -1)
			ok = -1;
		free(names[i]);
	}
	free(names);
	return (ok == -1 ? -1 : n);
}

/* A copy of in changed in one to four places, as libFuzzer's simplest do. */
static uint8_t *
driver_mutate(const struct input *in, size_t *lenp)
{
	static const uint8_t	 magic[] = { 0x00, 0x01, 0x7f, 0x80, 0xff,
	    '"', '{', '}', '[', ']', ':', ',', '-', '0', '9' };
	uint8_t			*b;
	size_t			 len = in->len, cap = in->len + 64, pos, n, src;
	int			 k, rounds = 1 + (int)(driver_random() % 4);

	if ((b = malloc(cap)) == NULL)
		return (NULL);
	memcpy(b, in->buf, len);
	for (k = 0; k < rounds; k++) {
		pos = len > 0 ? (size_t)(driver_random() % len) : 0;
		switch (driver_random() % 7) {
		case 0:		/* flip a bit */
			if (len > 0)
				b[pos] ^= (uint8_t)(1U << (driver_random() % 8));
			break;
		case 1:		/* a random byte */
			if (len > 0)
				b[pos] = (uint8_t)driver_random();
			break;
		case 2:		/* an interesting byte */
			if (len > 0)
				b[pos] = magic[driver_random() % sizeof(magic)];
			break;
		case 3:		/* insert a byte */
			if (len < cap) {
				memmove(b + pos + 1, b + pos, len - pos);
				b[pos] = (uint8_t)driver_random();
				len++;
			}
			break;
		case 4:		/* delete up to 8 bytes */
			if (len > 0) {
				n = 1 + (size_t)(driver_random() % 8);
				if (n > len - pos)
					n = len - pos;
				memmove(b + pos, b + pos + n, len - pos - n);
				len -= n;
			}
			break;
		case 5:		/* truncate */
			len = pos;
			break;
		case 6:		/* copy a few bytes from elsewhere over pos */
			if (len > 1) {
				src = (size_t)(driver_random() % len);
				n = 1 + (size_t)(driver_random() % 8);
				if (n > len - pos)
					n = len - pos;
				if (n > len - src)
					n = len - src;
				memmove(b + pos, b + src, n);
			}
			break;
		}
	}
	*lenp = len;
	return (b);
}

int
main(int argc, char **argv)
{
	struct input	*inputs = NULL, one;
	struct stat	 st;
	uint8_t		*b;
	size_t		 len;
	long		 i, mutations = DRIVER_MUTATIONS;
	int		 n, k;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS] | FILE...\n",
		    argv[0]);
		return (2);
	}
	if (stat(argv[1], &st) == 0 && !S_ISDIR(st.st_mode)) {
		for (k = 1; k < argc; k++) {
			if (driver_read(argv[k], &one) == -1)
				return (2);
			LLVMFuzzerTestOneInput(one.buf, one.len);
			free(one.buf);
		}
		printf("driver: %d inputs run\n", argc - 1);
		return (0);
	}
	if (argc > 2)
		mutations = strtol(argv[2], NULL, 10);
	if ((n = driver_load_dir(argv[1], &inputs)) <= 0) {
		fprintf(stderr, "driver: no corpus in %s\n", argv[1]);
		return (2);
	}
	for (k = 0; k < n; k++)
		LLVMFuzzerTestOneInput(inputs[k].buf, inputs[k].len);
	for (i = 0; i < mutations; i++) {
		if ((b = driver_mutate(&inputs[driver_random() % n], &len)) ==
		    NULL)
			return (2);
		LLVMFuzzerTestOneInput(b, len);
		free(b);
	}
	for (k = 0; k < n; k++)
		free(inputs[k].buf);
	free(inputs);
	printf("driver: %d corpus files and %ld mutations run\n", n,
	    mutations);
	return (0);
}
