/*
 * The k-th smallest of a set of numbers, in time linear in their count (a
 * selection, not a sort): the medians of straggler.c, busy.c, arrive.c and
 * traces_compare.c.
 */

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Returns the k-th smallest of v[0..n-1] (reordering v), n > k. */
int64_t
median_select(int64_t *v, size_t n, size_t k)
{
	size_t	 lo = 0, hi = n - 1, i, j;
	int64_t	 pivot, t;

	while (lo < hi) {
		pivot = v[lo + (hi - lo) / 2];
		i = lo;
		j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return (v[k]);
}
