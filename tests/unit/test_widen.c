/* xs_hal_widen32 (hal.h): the 32-bit done word of a CUDA stream widened to the engine's
 * 64-bit numbers. Checked:
 * - a word read before another thread widened a later one (stale) gives the widest value,
 *   not one 2^32 above it;
 * - the number carries across the 32-bit wrap;
 * - readers racing on one word while it grows across the wrap never get a number the
 *   word has not reached, each sees its numbers grow, and the widest ends at the last. */
#include <pthread.h>

#include "check.h"
#include "hal/hal.h"

static void sequence(void)
{
	_Atomic uint64_t widest = 0;
	CHECK(xs_hal_widen32(&widest, 1) == 1);
	CHECK(xs_hal_widen32(&widest, 5) == 5);
	CHECK(xs_hal_widen32(&widest, 3) == 5); /* stale */
	CHECK(xs_hal_widen32(&widest, 5) == 5);
	CHECK(atomic_load(&widest) == 5);
	atomic_store(&widest, UINT64_C(0xFFFFFFF0));
	CHECK(xs_hal_widen32(&widest, 0x10) == UINT64_C(0x100000010));
	CHECK(xs_hal_widen32(&widest, 0xFFFFFFF8) == UINT64_C(0x100000010)); /* stale, across */
	CHECK(xs_hal_widen32(&widest, 0x11) == UINT64_C(0x100000011));
}

enum { READERS = 3, STEPS = 300000 };
static const uint64_t START = UINT64_C(0xFFFF0000);
static _Atomic uint32_t g_word; /* the device's done word */
static _Atomic uint64_t g_true; /* its 64-bit value, stored before the word */
static _Atomic uint64_t g_widest;
static atomic_bool g_stop;
static atomic_long g_bad;

static void *writer(void *arg)
{
	(void)arg;
	for (uint64_t v = START + 1; v <= START + STEPS; v++) {
		atomic_store(&g_true, v);
		atomic_store(&g_word, (uint32_t)v);
	}
	atomic_store(&g_stop, true);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	uint64_t prev = 0;
	for (;;) {
		bool stop = atomic_load(&g_stop);
		uint64_t got = xs_hal_widen32(&g_widest, atomic_load(&g_word));
		if (got > atomic_load(&g_true) || got < prev)
			atomic_fetch_add(&g_bad, 1);
		prev = got;
		if (stop)
			return NULL;
	}
}

static void racing(void)
{
	atomic_store(&g_word, (uint32_t)START);
	atomic_store(&g_true, START);
	atomic_store(&g_widest, START);
	pthread_t w, r[READERS];
	for (int i = 0; i < READERS; i++)
		CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);
	CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
	pthread_join(w, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	printf("%d readers over %d steps across the wrap: %ld bad numbers, widest 0x%llx\n",
	       READERS, STEPS, atomic_load(&g_bad), (unsigned long long)atomic_load(&g_widest));
	CHECK(atomic_load(&g_bad) == 0);
	CHECK(atomic_load(&g_widest) == START + STEPS);
}

int main(void)
{
	sequence();
	racing();
	return 0;
}
