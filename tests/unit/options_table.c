/*
 * Prints the profiler options' table (common/options.h) as JSON, with the
 * library layer's offsets and sizes, for test_options_python.py to compare
 * with the Python binding's mirror of it.
 */

#include <stdio.h>

#include "options.h"

/* Prints s as a JSON string, or null. */
static void
options_table_string(const char *s)
{
	if (s == NULL)
		printf("null");
	else
		printf("\"%s\"", s);		/* the table's names need no escapes */
}

/* Prints every row, in the table's order. */
int
main(void)
{
	const struct options_row	*r;
	size_t				 i;

	printf("[\n");
	for (i = 0; i < OPTIONS_N; i++) {
		r = &options_table[i];
		printf("  {\"name\": ");
		options_table_string(r->name);
		printf(", \"type\": \"%s\", \"min\": %lld, \"max\": %lld, "
		    "\"default\": %lld, \"ms24\": ",
		    r->type == OPTIONS_BOOL ? "bool" : "int",
		    (long long)r->min, (long long)r->max, (long long)r->def);
		options_table_string(r->keys[OPTIONS_MS24]);
		printf(", \"values\": ");
		options_table_string(r->values);
		printf(", \"lib_offset\": %u, \"lib_size\": %u}%s\n",
		    (unsigned)options_lib.fields[i].off,
		    (unsigned)options_lib.fields[i].size,
		    i + 1 < OPTIONS_N ? "," : "");
	}
	printf("]\n");
	return (0);
}
