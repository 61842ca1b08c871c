/*
 * The agent's guard against a segment truncated under it.  A segment is a file
 * that anyone who can write it may truncate; touching a mapped page past the new
 * end is a SIGBUS.  The agent registers every segment mapping it holds and does
 * every access to one inside guard_call(): a SIGBUS at an address inside a
 * registered mapping while a guarded call runs jumps out of it (the call
 * returns -1 and guard_fault_base() names the mapping), so the job's segment
 * is dropped and the agent carries on.  Any other SIGBUS is the default
 * action, as if no handler were installed.  The agent has one thread.
 */

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"
#include "log.h"

struct guard_map {
	const char	*base;
	size_t		 len;
};

static struct guard_map		*guard_maps;
static size_t			 guard_nmaps;
static size_t			 guard_cap;
static sigjmp_buf		 guard_env;
static volatile sig_atomic_t	 guard_armed;
static const void *volatile	 guard_fault;

/* The mapping holding addr, or NULL. */
static const struct guard_map *
guard_lookup(const void *addr)
{
	const char	*p = addr;
	size_t		 i;

	for (i = 0; i < guard_nmaps; i++)
		if (p >= guard_maps[i].base &&
		    p < guard_maps[i].base + guard_maps[i].len)
			return (&guard_maps[i]);
	return (NULL);
}

/* SIGBUS: back into guard_call() if a guarded mapping faulted, else the default. */
static void
guard_handler(int sig, siginfo_t *si, void *ctx)
{
	const struct guard_map	*m;
	struct sigaction	 dfl;

	(void)ctx;
	/* si_code > 0: raised by the kernel for a fault, not sent by kill(). */
	if (guard_armed && si != NULL && si->si_code > 0 &&
	    (m = guard_lookup(si->si_addr)) != NULL) {
		guard_armed = 0;
		guard_fault = m->base;
		siglongjmp(guard_env, 1);
	}
	/*
	 * Not ours: the default action.  A fault comes back at once when the
	 * instruction is retried; a sent signal is sent again, delivered when
	 * this handler returns.
	 */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si == NULL || si->si_code <= 0)
		raise(sig);
}

/* Installs the SIGBUS handler.  Returns 0 or -1. */
int
guard_install(void)
{
	struct sigaction	 sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) == -1) {
		log_warn("%s: sigaction", __func__);
		return (-1);
	}
	return (0);
}

/* Registers a segment mapping: a fault in it inside guard_call() is caught. */
int
guard_register(const void *base, size_t len)
{
	struct guard_map	*m;
	size_t			 cap;

	if (guard_nmaps == guard_cap) {
		cap = guard_cap == 0 ? 16 : guard_cap * 2;
		if ((m = reallocarray(guard_maps, cap, sizeof(*m))) == NULL)
			return (-1);
		guard_maps = m;
		guard_cap = cap;
	}
	guard_maps[guard_nmaps].base = base;
	guard_maps[guard_nmaps].len = len;
	guard_nmaps++;
	return (0);
}

/* Forgets a mapping registered with guard_register(). */
void
guard_unregister(const void *base)
{
	size_t	 i;

	for (i = 0; i < guard_nmaps; i++) {
		if (guard_maps[i].base == base) {
			guard_maps[i] = guard_maps[--guard_nmaps];
			break;
		}
	}
	if (guard_nmaps == 0) {
		free(guard_maps);
		guard_maps = NULL;
		guard_cap = 0;
	}
}

/*
 * Calls fn(arg) with the guard armed.  Returns 0 when fn returned (its result in
 * *ret, if not NULL), -1 when a SIGBUS in a registered mapping cut it short:
 * guard_fault_base() says which.  A call inside another catches its own
 * faults; the outer one is armed again after it.
 */
int
guard_call(int (*fn)(void *), void *arg, int *ret)
{
	sigjmp_buf	 outer_env;
	const int	 outer = guard_armed;
	int		 r;

	memcpy(&outer_env, &guard_env, sizeof(outer_env));
	if (sigsetjmp(guard_env, 1) != 0) {
		memcpy(&guard_env, &outer_env, sizeof(guard_env));
		guard_armed = outer;
		return (-1);
	}
	guard_fault = NULL;
	guard_armed = 1;
	r = fn(arg);
	memcpy(&guard_env, &outer_env, sizeof(guard_env));
	guard_armed = outer;
	if (ret != NULL)
		*ret = r;
	return (0);
}

/* The base of the mapping whose fault cut the last guard_call() short. */
const void *
guard_fault_base(void)
{
	return (guard_fault);
}
