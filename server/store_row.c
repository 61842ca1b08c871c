/*
 * Rows to JSON and back, by the field tables of store_row.h.
 */

#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "store_row.h"

/* Returns a row (fields f) as a JSON object; NULL strings are left out. */
json_t *
ef_encode(const struct ef *f, size_t n, const void *row)
{
	const char	*base = row, *str;
	json_t		*obj, *v;
	size_t		 i;

	if ((obj = json_object()) == NULL)
		return (NULL);
	for (i = 0; i < n; i++) {
		const void	*p = base + f[i].off;

		switch (f[i].type) {
		case EF_STR:
			if ((str = *(const char * const *)p) == NULL)
				continue;
			v = json_string(str);
			break;
		case EF_I64:
			v = json_integer(*(const int64_t *)p);
			break;
		case EF_U64:
			/* Kept as its bits: boot ids use all 64. */
			v = json_integer((json_int_t)*(const uint64_t *)p);
			break;
		case EF_U32:
			v = json_integer(*(const uint32_t *)p);
			break;
		case EF_I32:
			v = json_integer(*(const int32_t *)p);
			break;
		default:
			v = json_integer(*(const int *)p);
			break;
		}
		if (v == NULL || json_object_set_new(obj, f[i].name, v) == -1) {
			json_decref(obj);
			return (NULL);
		}
	}
	return (obj);
}

/*
 * Fills a row (fields f) from a JSON object; a field absent (a row written
 * before it existed) is 0 or NULL.  Strings point into obj.
 */
void
ef_decode(const struct ef *f, size_t n, const json_t *obj, void *row)
{
	char		*base = row;
	const json_t	*v;
	json_int_t	 iv;
	size_t		 i;

	for (i = 0; i < n; i++) {
		void	*p = base + f[i].off;

		v = json_object_get(obj, f[i].name);
		iv = json_is_integer(v) ? json_integer_value(v) : 0;
		switch (f[i].type) {
		case EF_STR:
			*(const char **)p = json_string_value(v);
			break;
		case EF_I64:
			*(int64_t *)p = iv;
			break;
		case EF_U64:
			*(uint64_t *)p = (uint64_t)iv;
			break;
		case EF_U32:
			*(uint32_t *)p = (uint32_t)iv;
			break;
		case EF_I32:
			*(int32_t *)p = (int32_t)iv;
			break;
		default:
			*(int *)p = (int)iv;
			break;
		}
	}
}
