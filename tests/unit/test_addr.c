/*
 * Addresses (common/addr.c): HOST:PORT and [V6]:PORT split at the last
 * colon, the brackets taken off, and what is refused: no port, a port that is
 * not digits, no host, a host or a port past its buffer; two addresses the
 * same.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "addr.h"

/* Asserts that s splits into host and port. */
static void
splits(const char *s, const char *host, const char *port)
{
	char	 h[64], p[16];

	if (addr_split(s, strlen(s), h, sizeof(h), p, sizeof(p)) != ADDR_OK)
		fail_msg("%s: refused", s);
	assert_string_equal(h, host);
	assert_string_equal(p, port);
}

/* Asserts that s is refused for fault. */
static void
refused(const char *s, enum addr_fault fault)
{
	char	 h[64], p[16];

	if (addr_split(s, strlen(s), h, sizeof(h), p, sizeof(p)) != fault)
		fail_msg("%s: not refused as %d", s, (int)fault);
}

static void
test_split(void **state)
{
	char	 h[64], p[16];

	(void)state;
	splits("127.0.0.1:7070", "127.0.0.1", "7070");
	splits("[::1]:9000", "::1", "9000");
	splits("[fe80::1%eth0]:1", "fe80::1%eth0", "1");
	splits("coordinator.example:0", "coordinator.example", "0");
	splits("*:80", "*", "80");
	/* The last colon: a bare v6 address splits there too. */
	splits("::1:80", "::1", "80");
	/* Only len bytes: a list's first address. */
	assert_int_equal(addr_split("a:1,b:2", 3, h, sizeof(h), p,
	    sizeof(p)), ADDR_OK);
	assert_string_equal(h, "a");
	assert_string_equal(p, "1");
}

static void
test_refused(void **state)
{
	char	 longhost[80], h[64], p[16];

	(void)state;
	refused("localhost", ADDR_NO_PORT);
	refused("", ADDR_NO_PORT);
	refused("localhost:", ADDR_BAD_PORT);
	refused("localhost:+80", ADDR_BAD_PORT);
	refused("localhost:-1", ADDR_BAD_PORT);
	refused("localhost:80x", ADDR_BAD_PORT);
	refused("localhost:1234567890123456", ADDR_BAD_PORT);
	refused("[::1]", ADDR_BAD_PORT);
	refused(":80", ADDR_BAD_HOST);
	refused("[]:80", ADDR_BAD_HOST);
	/* The port is judged first. */
	refused(":x", ADDR_BAD_PORT);
	memset(longhost, 'h', sizeof(longhost));
	snprintf(longhost + 64, sizeof(longhost) - 64, ":80");
	refused(longhost, ADDR_BAD_HOST);
	/* One byte shorter fits, with its NUL. */
	assert_int_equal(addr_split(longhost + 1, strlen(longhost + 1), h,
	    sizeof(h), p, sizeof(p)), ADDR_OK);
	assert_int_equal(strlen(h), 63);
}

/* addr_same(): host and port as split, brackets or not; bad ones never. */
static void
test_same(void **state)
{
	(void)state;
	assert_true(addr_same("127.0.0.1:80", "127.0.0.1:80"));
	assert_true(addr_same("[::1]:80", "::1:80"));
	assert_false(addr_same("127.0.0.1:80", "127.0.0.1:81"));
	assert_false(addr_same("127.0.0.1:80", "localhost:80"));
	assert_false(addr_same("127.0.0.1", "127.0.0.1"));
	assert_false(addr_same("", ""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_same),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
