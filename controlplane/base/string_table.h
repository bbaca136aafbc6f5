/* string_table.h: one string table per enum, and its two lookups generated
 * from it (systemd's DEFINE_STRING_TABLE_LOOKUP, src/basic/string-table.h).
 * The table is indexed by the enum; a value without a string maps to NULL.
 * No project dependencies. */
#ifndef CP_STRING_TABLE_H
#define CP_STRING_TABLE_H

#include <string.h>
#include <sys/types.h>

/* Index of s in table[0..n), or -EINVAL (-22) when s is NULL or not there. */
static inline ssize_t string_table_lookup(const char *const *table, size_t n, const char *s)
{
	if (!s)
		return -22;
	for (size_t i = 0; i < n; i++)
		if (table[i] && strcmp(table[i], s) == 0)
			return (ssize_t)i;
	return -22;
}

/* Defines name_to_string(type) -> static text or NULL for a value out of
 * range, and name_from_string(const char *) -> the value or -EINVAL for an
 * unknown string (or NULL), from name##_table[max]. */
#define DEFINE_STRING_TABLE_LOOKUP(name, type, max)                                                                    \
	const char *name##_to_string(type v)                                                                           \
	{                                                                                                              \
		if ((int)v < 0 || (int)v >= (max))                                                                     \
			return NULL;                                                                                   \
		return name##_table[v];                                                                                \
	}                                                                                                              \
	type name##_from_string(const char *s)                                                                         \
	{                                                                                                              \
		return (type)string_table_lookup(name##_table, (max), s);                                              \
	}

#endif
