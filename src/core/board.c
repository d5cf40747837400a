/* The board: slots of numbers in a shared file, claimed and written with atomics, and the
 * watcher thread that keeps this process's slot alive and reads the others'. See board.h
 * for the layout, liveness and wake-ups; doc/architecture.md for what the engine does
 * with it.
 *
 * State: one struct (xs__bd), made anew in a fork child. Its lock (a leaf) guards the list
 * of open boards and serializes open, join and leave. Each board's own fields say who
 * writes them: the joining thread before its watcher starts, the watcher alone after, or
 * atomics.
 */
#include "core/board.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/thread.h"

_Static_assert(sizeof(xs_board_slot) == 192, "a slot is three cache lines");
_Static_assert(sizeof(xs_board_hdr) == 128, "the header is two cache lines");
_Static_assert(XS_BOARD_SLOTS <= 64, "masks are 64 bits");

/* What the watcher knows of another slot, kept while its owner token stays. */
typedef struct xs__seen {
	uint64_t token;
	int64_t pid;
	uint64_t start;
	bool same_ns; /* its owner is in this process's pid namespace: /proc tells */
	bool dead;    /* /proc said so: for good, under this token */
} xs__seen;

struct xs_board {
	xs_board *next; /* xs__bd.list */
	char *path;
	dev_t dev; /* the file mapped */
	ino_t ino;
	xs_board_hdr *hdr; /* the mapping, never unmapped */
	xs_board_slot *slots;
	_Atomic int self;      /* this process's slot, -1 = none */
	_Atomic uint64_t live; /* the other slots the watcher last found live (bit i) */
	atomic_bool relay;     /* the watcher should wake the others' sleeping watchers */
	_Atomic uint64_t own;  /* this process's raises of the header's change count */
	/* What this process published, put back into a slot taken again (xs__beat). */
	_Atomic int64_t my_top, my_busy, my_ask;
	/* Written by join (the watcher not running) and by the watcher: */
	uint64_t token; /* the claim of `self` */
	int64_t my_pid;
	uint64_t my_start, my_ns;
	xs__seen seen[XS_BOARD_SLOTS];
	/* The watcher: */
	pthread_t thread;
	bool running; /* under xs__bd.lock */
	atomic_bool stop;
	xs_board_fn fn;
	void *arg;
};

/* The process-wide state: open boards, by path. */
static struct xs__boards {
	xs_mutex lock; /* the list, and open, join and leave */
	xs_board *list;
} xs__bd = {XS_MUTEX_INITIALIZER, NULL};
/* A child's: the parent's boards (their memory stays reachable; volatile: only written). */
static xs_board *volatile xs__parent_boards;

/* ---- futex, identity, /proc ---- */

static void xs__futex_wait(_Atomic uint32_t *w, uint32_t val, int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	/* Shared (no FUTEX_PRIVATE_FLAG): the word is in a mapping of other processes too.
	 * EAGAIN (the word moved), EINTR and ETIMEDOUT all just end the wait. */
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* Wake the watcher of slot @i. */
static void xs__wake_slot(const xs_board *b, int i)
{
	_Atomic uint32_t *w = &b->slots[i].wake;
	atomic_fetch_add_explicit(w, 1, memory_order_release);
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Read /proc/@pid/stat (pid 0: self): the state letter and the start time (field 22).
 * Returns 1 when read, 0 when there is no such process, -1 when /proc says nothing. */
static int xs__proc_stat(int64_t pid, char *state, uint64_t *start)
{
	char path[64], buf[1024];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? 0 : -1;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -1;
	*start = strtoull(p, NULL, 10);
	return 1;
}

/* 1: the process of a slot (@pid, @start, in this pid namespace) lives; 0: it does not (no
 * such pid, a zombie, or another process under a reused pid); -1: cannot tell. */
static int xs__proc_alive(int64_t pid, uint64_t start)
{
	char state = 0;
	uint64_t st = 0;
	int r = xs__proc_stat(pid, &state, &st);
	if (r <= 0)
		return r;
	return state == 'Z' || state == 'X' || st != start ? 0 : 1;
}

/* This process's identity, read at each join (a fork child has its own). */
static void xs__ident(xs_board *b)
{
	char state;
	b->my_pid = getpid();
	b->my_start = 0;
	if (xs__proc_stat(0, &state, &b->my_start) <= 0)
		XS_WARN("board",
			"cannot read /proc/self/stat: this process's slot is judged by its "
			"heartbeat alone");
	struct stat st;
	b->my_ns = stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* A claim token: the time in ms (a half-made claim's age) and bits of no pattern; never 0. */
static uint64_t xs__token(int64_t now)
{
	static _Atomic uint64_t n;
	uint64_t x = (uint64_t)now ^ ((uint64_t)getpid() << 32) ^
		     atomic_fetch_add_explicit(&n, 0x9E3779B97F4A7C15ULL, memory_order_relaxed);
	x ^= x >> 31; /* splitmix64's finish */
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return ((uint64_t)(now / 1000000) << 20) | (x & 0xFFFFF) | 1;
}

/* ---- publishing ---- */

/* Wake the sleeping watchers of the other slots (@all: every other slot, for a newcomer,
 * whom nobody counts yet; else the live ones). */
static void xs__wake_others(const xs_board *b, int self, bool all)
{
	uint64_t s = atomic_load_explicit(&b->hdr->sleepers, memory_order_seq_cst);
	if (!all)
		s &= atomic_load_explicit(&b->live, memory_order_relaxed);
	s &= ~(UINT64_C(1) << self);
	while (s) {
		int i = __builtin_ctzll(s);
		s &= s - 1;
		xs__wake_slot(b, i);
	}
}

/* Tell the other processes that this one's slot @self changed. Their awake watchers see
 * the change count move; the sleeping ones are woken by this process's own watcher (the
 * relay), so that a publish on an application's submitting thread costs at most one
 * wake-up (of its own watcher, if it sleeps), not one per process on the board. @all
 * (join, leave): every other watcher, directly. */
static void xs__signal(xs_board *b, int self, bool all)
{
	atomic_fetch_add_explicit(&b->own, 1, memory_order_seq_cst); /* before the count */
	atomic_fetch_add_explicit(&b->hdr->changes, 1, memory_order_seq_cst);
	if (all) {
		xs__wake_others(b, self, true);
		return;
	}
	uint64_t bit = UINT64_C(1) << self;
	uint64_t s = atomic_load_explicit(&b->hdr->sleepers, memory_order_seq_cst);
	if (!(s & atomic_load_explicit(&b->live, memory_order_relaxed) & ~bit))
		return; /* nobody sleeps: each looks at the count before it sleeps */
	/* Set the relay, then look at the own watcher's bit; the watcher sets its bit, then
	 * looks at the relay (xs__sleep): one of the two sees the other. */
	atomic_store_explicit(&b->relay, true, memory_order_seq_cst);
	if (atomic_load_explicit(&b->hdr->sleepers, memory_order_seq_cst) & bit)
		xs__wake_slot(b, self);
}

/* Store one of this process's numbers in slot @s: whether it changed. */
static bool xs__put(xs_board_slot *sl, _Atomic int64_t *field, int64_t v)
{
	if (atomic_load_explicit(field, memory_order_relaxed) == v)
		return false;
	atomic_store_explicit(field, v, memory_order_release);
	atomic_fetch_add_explicit(&sl->changes, 1, memory_order_relaxed);
	return true;
}

void xs_board_set_top(xs_board *b, int64_t top)
{
	atomic_store_explicit(&b->my_top, top, memory_order_relaxed);
	int s = atomic_load_explicit(&b->self, memory_order_acquire);
	if (s >= 0 && xs__put(&b->slots[s], &b->slots[s].top, top))
		xs__signal(b, s, false);
}

void xs_board_set_busy(xs_board *b, int64_t busy, int64_t ask)
{
	atomic_store_explicit(&b->my_ask, ask, memory_order_relaxed);
	atomic_store_explicit(&b->my_busy, busy, memory_order_relaxed);
	int s = atomic_load_explicit(&b->self, memory_order_acquire);
	if (s < 0)
		return;
	xs_board_slot *sl = &b->slots[s];
	bool changed = xs__put(sl, &sl->ask, ask); /* before busy: a reader of busy sees it */
	if (!xs__put(sl, &sl->busy, busy) && !changed)
		return;
	uint64_t bit = UINT64_C(1) << s;
	if (busy != XS_BOARD_NONE)
		atomic_fetch_or_explicit(&b->hdr->busy, bit, memory_order_release);
	else
		atomic_fetch_and_explicit(&b->hdr->busy, ~bit, memory_order_release);
	xs__signal(b, s, false);
}

void xs_board_set_lower(xs_board *b, const xs_board_lower *w)
{
	int s = atomic_load_explicit(&b->self, memory_order_acquire);
	if (s < 0)
		return;
	xs_board_slot *sl = &b->slots[s];
	xs__put(sl, &sl->charged_ns, w->charged_ns);
	xs__put(sl, &sl->wait_ns, w->wait_ns);
	xs__put(sl, &sl->free_ns, w->free_ns);
	if (atomic_load_explicit(&sl->charged_cmds, memory_order_relaxed) != w->charged_cmds)
		atomic_store_explicit(&sl->charged_cmds, w->charged_cmds, memory_order_release);
	/* The clock's sum first, then its start: a reader that sees the clock stopped (from
	 * 0) sees the sum that includes its last run; one that still sees it running may
	 * count that run twice (board.h: never miss one). */
	xs__put(sl, &sl->lower_end_ns, w->end_ns);
	xs__put(sl, &sl->lower_busy_ns, w->busy_ns);
	if (atomic_load_explicit(&sl->lower_from_ns, memory_order_relaxed) != w->from_ns)
		atomic_store_explicit(&sl->lower_from_ns, w->from_ns, memory_order_release);
}

/* ---- reading ---- */

static uint64_t xs__live(const xs_board *b)
{
	return atomic_load_explicit(&b->live, memory_order_acquire);
}

int64_t xs_board_busy(const xs_board *b, int64_t *ask)
{
	uint64_t m = atomic_load_explicit(&b->hdr->busy, memory_order_acquire) & xs__live(b);
	int64_t best = XS_BOARD_NONE, a = INT64_MAX;
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		int64_t v = atomic_load_explicit(&sl->busy, memory_order_acquire);
		int64_t k = atomic_load_explicit(&sl->ask, memory_order_relaxed);
		if (v == XS_BOARD_NONE || v < best)
			continue;
		if (v > best)
			a = INT64_MAX;
		best = v;
		if (k < a)
			a = k;
	}
	*ask = a;
	return best;
}

void xs_board_look(const xs_board *b, xs_board_view *v)
{
	*v = (xs_board_view){XS_BOARD_NONE, XS_BOARD_NONE, INT64_MAX, 0, 0};
	v->busy = xs_board_busy(b, &v->ask);
	uint64_t m = xs__live(b);
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		int64_t top = atomic_load_explicit(&sl->top, memory_order_acquire);
		if (top > v->top)
			v->top = top;
		v->lower += atomic_load_explicit(&sl->charged_cmds, memory_order_relaxed) != 0 ||
			    atomic_load_explicit(&sl->wait_ns, memory_order_relaxed) != 0;
		v->live++;
	}
}

/* When slot @sl's charged work is within its lead of its end (0: none charged). */
static int64_t xs__free_at(const xs_board_slot *sl)
{
	uint64_t cmds = atomic_load_explicit(&sl->charged_cmds, memory_order_acquire);
	if (!cmds)
		return 0;
	int64_t per = atomic_load_explicit(&sl->charged_ns, memory_order_relaxed) / (int64_t)cmds;
	int64_t lead = per / 8 > XS_BOARD_LEAD_NS ? per / 8 : XS_BOARD_LEAD_NS;
	int64_t end = atomic_load_explicit(&sl->free_ns, memory_order_relaxed);
	return end - lead > 1 ? end - lead : 1;
}

bool xs_board_first(const xs_board *b, int64_t wait_ns, int64_t now)
{
	uint64_t m = xs__live(b);
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		int64_t w = atomic_load_explicit(&sl->wait_ns, memory_order_acquire);
		int64_t free_at = xs__free_at(sl);
		if ((free_at && free_at > now) || (w && w < wait_ns))
			return false;
	}
	return true;
}

int64_t xs_board_free_at(const xs_board *b)
{
	uint64_t m = xs__live(b);
	int64_t first = 0;
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		int64_t t = xs__free_at(sl);
		if (t && (!first || t < first))
			first = t;
	}
	return first;
}

int64_t xs_board_lower_clock(const xs_board *b, int64_t now)
{
	uint64_t m = xs__live(b);
	int64_t sum = 0;
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		int64_t from = atomic_load_explicit(&sl->lower_from_ns, memory_order_acquire);
		sum += atomic_load_explicit(&sl->lower_busy_ns, memory_order_relaxed);
		if (from && now > from)
			sum += now - from;
	}
	return sum;
}

bool xs_board_lower_quiet(const xs_board *b, int64_t since)
{
	uint64_t m = xs__live(b);
	while (m) {
		const xs_board_slot *sl = &b->slots[__builtin_ctzll(m)];
		m &= m - 1;
		if (atomic_load_explicit(&sl->lower_from_ns, memory_order_acquire) ||
		    atomic_load_explicit(&sl->lower_end_ns, memory_order_relaxed) > since)
			return false;
	}
	return true;
}

void xs_board_wake_waiter(const xs_board *b)
{
	uint64_t m = xs__live(b);
	int best = -1;
	int64_t oldest = INT64_MAX;
	while (m) {
		int i = __builtin_ctzll(m);
		m &= m - 1;
		int64_t w = atomic_load_explicit(&b->slots[i].wait_ns, memory_order_acquire);
		if (w && w < oldest) {
			oldest = w;
			best = i;
		}
	}
	if (best >= 0) {
		/* The count moves, so that its watcher looks (and calls its hook) rather than
		 * take the wake-up for its own process's relay (xs__watch). */
		atomic_fetch_add_explicit(&b->hdr->changes, 1, memory_order_seq_cst);
		xs__wake_slot(b, best);
	}
}

bool xs_board_others(const xs_board *b)
{
	return xs__live(b) != 0;
}

const char *xs_board_path(const xs_board *b)
{
	return b->path;
}

/* ---- claiming a slot ---- */

/* Whether a newcomer may take slot @i, claimed by token @o: a claim never completed, a
 * heartbeat older than XS_BOARD_RECLAIM_NS, or an owner of this pid namespace that /proc
 * says is gone. */
static bool xs__reclaimable(const xs_board *b, int i, uint64_t o, int64_t now)
{
	const xs_board_slot *sl = &b->slots[i];
	if (atomic_load_explicit(&sl->ident, memory_order_acquire) != o)
		return (uint64_t)(now / 1000000) - (o >> 20) > XS_BOARD_RECLAIM_NS / 1000000;
	if (now - atomic_load_explicit(&sl->beat_ns, memory_order_relaxed) > XS_BOARD_RECLAIM_NS)
		return true;
	uint64_t ns = atomic_load_explicit(&sl->pidns, memory_order_relaxed);
	return ns && ns == b->my_ns &&
	       xs__proc_alive(atomic_load_explicit(&sl->pid, memory_order_relaxed),
			      atomic_load_explicit(&sl->start, memory_order_relaxed)) == 0;
}

/* Write this process's identity and its last numbers into slot @i (claimed), mark it
 * whole, and tell the others. */
static void xs__fill(xs_board *b, int i, int64_t now)
{
	xs_board_slot *sl = &b->slots[i];
	uint64_t bit = UINT64_C(1) << i;
	atomic_store_explicit(&sl->pid, b->my_pid, memory_order_relaxed);
	atomic_store_explicit(&sl->start, b->my_start, memory_order_relaxed);
	atomic_store_explicit(&sl->pidns, b->my_ns, memory_order_relaxed);
	atomic_store_explicit(&sl->beat_ns, now, memory_order_relaxed);
	atomic_store_explicit(&sl->top, atomic_load(&b->my_top), memory_order_relaxed);
	atomic_store_explicit(&sl->ask, atomic_load(&b->my_ask), memory_order_relaxed);
	atomic_store_explicit(&sl->busy, atomic_load(&b->my_busy), memory_order_relaxed);
	atomic_store_explicit(&sl->charged_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->charged_cmds, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->wait_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->free_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->lower_busy_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->lower_from_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->lower_end_ns, 0, memory_order_relaxed);
	atomic_fetch_and_explicit(&b->hdr->sleepers, ~bit, memory_order_relaxed);
	if (atomic_load(&b->my_busy) != XS_BOARD_NONE)
		atomic_fetch_or_explicit(&b->hdr->busy, bit, memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&b->hdr->busy, ~bit, memory_order_relaxed);
	atomic_store_explicit(&sl->ident, b->token, memory_order_release);
	atomic_store_explicit(&b->self, i, memory_order_release);
	xs__signal(b, i, true); /* a newcomer: the others count it at once */
}

/* Claim a slot: a free one, else one whose owner is gone (xs__reclaimable). Returns its
 * index, or -1 when the board is full. Called by join, or by the watcher. */
static int xs__claim(xs_board *b, int64_t now)
{
	uint64_t token = xs__token(now);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < XS_BOARD_SLOTS; i++) {
			_Atomic uint64_t *owner = &b->slots[i].owner;
			uint64_t o = atomic_load_explicit(owner, memory_order_acquire);
			if (pass == 0 ? o != 0 : o == 0 || !xs__reclaimable(b, i, o, now))
				continue;
			if (!atomic_compare_exchange_strong_explicit(
				owner, &o, token, memory_order_acq_rel, memory_order_acquire))
				continue;
			b->token = token;
			memset(&b->seen[i], 0, sizeof(b->seen[i]));
			xs__fill(b, i, now);
			return i;
		}
	return -1;
}

/* Give slot @s back, published empty. */
static void xs__release(xs_board *b, int s)
{
	xs_board_slot *sl = &b->slots[s];
	atomic_store_explicit(&sl->busy, XS_BOARD_NONE, memory_order_relaxed);
	atomic_store_explicit(&sl->top, XS_BOARD_NONE, memory_order_relaxed);
	atomic_store_explicit(&sl->charged_cmds, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->wait_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->lower_from_ns, 0, memory_order_relaxed);
	atomic_fetch_and_explicit(&b->hdr->busy, ~(UINT64_C(1) << s), memory_order_release);
	atomic_store_explicit(&sl->ident, 0, memory_order_release);
	uint64_t token = b->token;
	atomic_compare_exchange_strong_explicit(&sl->owner, &token, 0, memory_order_acq_rel,
						memory_order_relaxed);
	xs__signal(b, s, true); /* the watcher is stopped: directly */
}

/* ---- the watcher ---- */

/* Whether slot @i, whole under token @o, counts as live at @now (board.h, "Liveness"). */
static bool xs__alive(xs_board *b, int i, uint64_t o, int64_t now)
{
	xs__seen *c = &b->seen[i];
	const xs_board_slot *sl = &b->slots[i];
	if (c->token != o) {
		uint64_t ns = atomic_load_explicit(&sl->pidns, memory_order_relaxed);
		c->token = o;
		c->pid = atomic_load_explicit(&sl->pid, memory_order_relaxed);
		c->start = atomic_load_explicit(&sl->start, memory_order_relaxed);
		c->same_ns = ns && ns == b->my_ns;
		c->dead = false;
	}
	if (c->dead)
		return false;
	int64_t age = now - atomic_load_explicit(&sl->beat_ns, memory_order_relaxed);
	if (age <= XS_BOARD_SUSPECT_NS)
		return true;
	if (age > XS_BOARD_STALE_NS)
		return false;
	if (c->same_ns) {
		int st = xs__proc_alive(c->pid, c->start);
		if (st == 0)
			c->dead = true;
		if (st >= 0)
			return st == 1;
	}
	return age <= XS_BOARD_FOREIGN_NS;
}

/* Find the other live slots (for the readers). */
static void xs__scan(xs_board *b, int self, int64_t now)
{
	uint64_t live = 0;
	for (int i = 0; i < XS_BOARD_SLOTS; i++) {
		const xs_board_slot *sl = &b->slots[i];
		uint64_t o = atomic_load_explicit(&sl->owner, memory_order_acquire);
		if (i == self || !o || atomic_load_explicit(&sl->ident, memory_order_acquire) != o)
			continue;
		if (xs__alive(b, i, o, now))
			live |= UINT64_C(1) << i;
	}
	atomic_store_explicit(&b->live, live, memory_order_release);
}

/* The heartbeat; a slot taken over meanwhile (this process stopped for longer than
 * XS_BOARD_RECLAIM_NS) is claimed again. Returns the slot, -1 if none. */
static int xs__beat(xs_board *b, int64_t now)
{
	int s = atomic_load_explicit(&b->self, memory_order_acquire);
	if (s >= 0 && atomic_load_explicit(&b->slots[s].owner, memory_order_acquire) == b->token) {
		atomic_store_explicit(&b->slots[s].beat_ns, now, memory_order_release);
		return s;
	}
	if (s >= 0)
		XS_WARN("board",
			"%s: this process's slot was taken over (stopped for %lld s or "
			"more?); claiming one again",
			b->path, XS_BOARD_RECLAIM_NS / 1000000000LL);
	atomic_store_explicit(&b->self, -1, memory_order_release);
	return xs__claim(b, now); /* -1: full; the next heartbeat tries again */
}

/* Sleep until another process publishes (the change count moved from @seen) or a
 * heartbeat is due. */
static void xs__sleep(xs_board *b, int s, uint64_t seen)
{
	if (s < 0) { /* no slot (full after a take-over): look again later */
		struct timespec ts = {0, XS_BOARD_BEAT_NS};
		nanosleep(&ts, NULL);
		return;
	}
	xs_board_slot *me = &b->slots[s];
	uint64_t bit = UINT64_C(1) << s;
	uint32_t w = atomic_load_explicit(&me->wake, memory_order_acquire);
	/* Set the bit, then look at the count; a publisher raises the count, then looks at
	 * the bits: one of the two sees the other (both sequentially consistent). */
	atomic_fetch_or_explicit(&b->hdr->sleepers, bit, memory_order_seq_cst);
	if (!atomic_load_explicit(&b->relay, memory_order_seq_cst) &&
	    atomic_load_explicit(&b->hdr->changes, memory_order_seq_cst) == seen &&
	    !atomic_load_explicit(&b->stop, memory_order_acquire))
		xs__futex_wait(&me->wake, w, XS_BOARD_BEAT_NS);
	atomic_fetch_and_explicit(&b->hdr->sleepers, ~bit, memory_order_relaxed);
}

/* The watcher: a heartbeat and the relay at each wake-up; the look (the others' slots,
 * then the hook) when another process changed something or a heartbeat period passed.
 * Woken only to relay this process's own publish, it is done in a few microseconds: it
 * may have taken the CPU of the very thread that published, an application's. */
static void *xs__watch(void *arg)
{
	xs_board *b = arg;
	uint64_t seen = 0, own = 0;
	int64_t looked = 0;
	while (!atomic_load_explicit(&b->stop, memory_order_acquire)) {
		uint64_t c = atomic_load_explicit(&b->hdr->changes, memory_order_seq_cst);
		uint64_t o = atomic_load_explicit(&b->own, memory_order_seq_cst);
		int64_t now = xs_now_ns();
		int s = xs__beat(b, now);
		if (s >= 0 && atomic_exchange_explicit(&b->relay, false, memory_order_acq_rel))
			xs__wake_others(b, s, false); /* this process published (xs__signal) */
		if (!looked || c - seen != o - own || now - looked >= XS_BOARD_BEAT_NS / 2) {
			xs__scan(b, s, now);
			b->fn(b->arg);
			looked = now;
		}
		seen = c;
		own = o;
		xs__sleep(b, s, c);
	}
	return NULL;
}

bool xs_board_join(xs_board *b, xs_board_fn fn, void *arg)
{
	xs_mutex_lock(&xs__bd.lock);
	bool ok = !b->running;
	if (ok) {
		xs__ident(b);
		atomic_store_explicit(&b->my_top, XS_BOARD_NONE, memory_order_relaxed);
		atomic_store_explicit(&b->my_busy, XS_BOARD_NONE, memory_order_relaxed);
		atomic_store_explicit(&b->my_ask, 0, memory_order_relaxed);
		memset(b->seen, 0, sizeof(b->seen));
		int64_t now = xs_now_ns();
		int s = xs__claim(b, now);
		if (s >= 0)
			xs__scan(b, s, now); /* the readers count the others from the start */
		if (s < 0)
			XS_WARN("board",
				"%s is full (%d processes): this process runs alone on the device",
				b->path, XS_BOARD_SLOTS);
		ok = s >= 0;
	}
	if (ok) {
		b->fn = fn;
		b->arg = arg;
		atomic_store_explicit(&b->stop, false, memory_order_relaxed);
		int err = xs_thread_start(&b->thread, "xs-board", xs__watch, b);
		if (err) {
			XS_ERROR("board",
				 "cannot start the board's watcher (errno %d): this "
				 "process runs alone on the device",
				 err);
			int s = atomic_exchange_explicit(&b->self, -1, memory_order_acq_rel);
			xs__release(b, s);
		}
		ok = b->running = !err;
	}
	xs_mutex_unlock(&xs__bd.lock);
	return ok;
}

void xs_board_leave(xs_board *b)
{
	xs_mutex_lock(&xs__bd.lock);
	if (b->running) {
		atomic_store_explicit(&b->stop, true, memory_order_release);
		int s = atomic_load_explicit(&b->self, memory_order_acquire);
		if (s >= 0)
			xs__wake_slot(b, s);
		xs_thread_join(b->thread);
		b->running = false;
		s = atomic_exchange_explicit(&b->self, -1, memory_order_acq_rel);
		if (s >= 0)
			xs__release(b, s);
		atomic_store_explicit(&b->live, 0, memory_order_release);
	}
	xs_mutex_unlock(&xs__bd.lock);
}

/* ---- opening ---- */

/* The gid of group @name; false (logged) if there is none. */
static bool xs__group(const char *name, gid_t *gid)
{
	char buf[4096];
	struct group g, *res = NULL;
	if (getgrnam_r(name, &g, buf, sizeof(buf), &res) == 0 && res) {
		*gid = res->gr_gid;
		return true;
	}
	XS_WARN("board", "XSCHED_BOARD_GROUP=%s is not a group: boards are this user's only", name);
	return false;
}

/* Make the board at @path whole under a temporary name, then give it its name (link: a
 * board is never seen half-made). Returns 0, or -1 (logged). An existing one is no error. */
static int xs__make(const char *path, const char *name, bool group, gid_t gid)
{
	char tmp[PATH_MAX + 48];
	snprintf(tmp, sizeof(tmp), "%s.%d.%llx", path, (int)getpid(),
		 (unsigned long long)xs__token(xs_now_ns()));
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		XS_WARN("board", "cannot make %s: %s: this process runs alone on the device", tmp,
			strerror(errno));
		return -1;
	}
	xs_board_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = XS_BOARD_MAGIC;
	h.version = XS_BOARD_VERSION;
	h.size = (uint32_t)XS_BOARD_SIZE;
	h.slots = XS_BOARD_SLOTS;
	h.slot_size = sizeof(xs_board_slot);
	h.uid = (uint32_t)geteuid();
	h.gid = group ? (uint32_t)gid : (uint32_t)getegid();
	snprintf(h.name, sizeof(h.name), "%s", name);
	const char *what = "fchmod";
	bool ok = fchmod(fd, group ? 0660 : 0600) == 0;
	if (ok && group && !(ok = fchown(fd, (uid_t)-1, gid) == 0))
		what = "giving it to the group";
	if (ok && !(ok = ftruncate(fd, (off_t)XS_BOARD_SIZE) == 0))
		what = "ftruncate";
	if (ok && !(ok = pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)))
		what = "writing its header";
	if (ok && !(ok = link(tmp, path) == 0 || errno == EEXIST))
		what = "link";
	if (!ok)
		XS_WARN("board", "cannot make %s (%s: %s): this process runs alone on the device",
			path, what, strerror(errno));
	close(fd);
	unlink(tmp);
	return ok ? 0 : -1;
}

/* Open the board at @path, making it first where there is none. -1 when it cannot be
 * opened (logged). */
static int xs__open_or_make(const char *path, const char *name, bool group, gid_t gid)
{
	for (int tries = 0; tries < 3; tries++) {
		int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT) {
			XS_WARN("board",
				"cannot open %s: %s: this process runs alone on the device", path,
				strerror(errno));
			return -1;
		}
		if (xs__make(path, name, group, gid) < 0)
			return -1;
	}
	return -1;
}

/* Whether the file of @fd may be joined: a regular file of the right size, written only
 * by its owner (or the group asked for), owned by this user or shared through that group. */
static bool xs__accept_file(int fd, const char *path, bool group, gid_t gid, struct stat *out)
{
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_mode & S_IWOTH)
		why = "writable by every user";
	else if ((st.st_mode & S_IWGRP) && (!group || st.st_gid != gid))
		why = "writable by a group not named by XSCHED_BOARD_GROUP";
	else if (st.st_uid != geteuid() && !(group && st.st_gid == gid))
		why = "owned by another user and not shared through XSCHED_BOARD_GROUP";
	else if (st.st_size != (off_t)XS_BOARD_SIZE)
		why = "of another size (another version of the library, or not a board)";
	if (why)
		XS_WARN("board", "refusing %s: %s; this process runs alone on the device", path,
			why);
	*out = st;
	return !why;
}

/* Whether the header of @fd is a board of this version made by @owner. */
static bool xs__accept_header(int fd, const char *path, uid_t owner)
{
	xs_board_hdr h;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		XS_WARN("board",
			"refusing %s: its header cannot be read; this process runs alone "
			"on the device",
			path);
		return false;
	}
	const char *why = h.magic != XS_BOARD_MAGIC       ? "not a board (magic)"
			  : h.version != XS_BOARD_VERSION ? "another version"
			  : h.size != XS_BOARD_SIZE || h.slots != XS_BOARD_SLOTS ? "another size"
			  : h.slot_size != sizeof(xs_board_slot) ? "another slot size"
			  : h.uid != (uint32_t)owner ? "made by another user than its owner"
						     : NULL;
	if (why)
		XS_WARN("board",
			"refusing %s: %s (version %u, %u slots, %u bytes; this library: version "
			"%d, %d slots, %zu bytes); this process runs alone on the device (remove "
			"the file once no process uses it)",
			path, why, h.version, h.slots, h.size, XS_BOARD_VERSION, XS_BOARD_SLOTS,
			(size_t)XS_BOARD_SIZE);
	return !why;
}

/* Map a board that was accepted. NULL when out of memory or mappings (logged). */
static xs_board *xs__map(int fd, const char *path)
{
	void *m = mmap(NULL, XS_BOARD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	xs_board *b = m != MAP_FAILED ? calloc(1, sizeof(*b)) : NULL;
	char *p = b ? strdup(path) : NULL;
	if (!p) {
		XS_WARN("board", "cannot map %s: %s: this process runs alone on the device", path,
			m == MAP_FAILED ? strerror(errno) : "out of memory");
		if (m != MAP_FAILED)
			munmap(m, XS_BOARD_SIZE);
		free(b);
		return NULL;
	}
	b->path = p;
	b->hdr = m;
	b->slots = (xs_board_slot *)(void *)((char *)m + sizeof(xs_board_hdr));
	atomic_init(&b->self, -1);
	atomic_init(&b->live, 0);
	atomic_init(&b->my_top, XS_BOARD_NONE);
	atomic_init(&b->my_busy, XS_BOARD_NONE);
	atomic_init(&b->my_ask, 0);
	atomic_init(&b->stop, false);
	atomic_init(&b->relay, false);
	atomic_init(&b->own, 0);
	return b;
}

/* Whether @name may be part of a file name. */
static bool xs__good_name(const char *name)
{
	size_t n = strlen(name);
	if (!n || n >= XS_BOARD_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(name[i] >= '0' && name[i] <= '9') && !(name[i] >= 'a' && name[i] <= 'z') &&
		    !(name[i] >= 'A' && name[i] <= 'Z') && name[i] != '-' && name[i] != '_')
			return false;
	return true;
}

xs_board *xs_board_open(const char *dir, const char *name, const char *group)
{
	char path[PATH_MAX];
	if (!xs__good_name(name) ||
	    snprintf(path, sizeof(path), "%s/xsched-%s", dir, name) >= (int)sizeof(path)) {
		XS_WARN("board",
			"no board for device \"%s\" in %s: a name or path that cannot "
			"be used",
			name, dir);
		return NULL;
	}
	xs_mutex_lock(&xs__bd.lock);
	gid_t gid = 0;
	bool grp = group && xs__group(group, &gid);
	int fd = xs__open_or_make(path, name, grp, gid);
	struct stat st;
	xs_board *b = NULL;
	if (fd >= 0 && xs__accept_file(fd, path, grp, gid, &st) &&
	    xs__accept_header(fd, path, st.st_uid)) {
		/* The file checked again at each open: the one mapped before, if it is still
		 * the file of that name (else the old mapping stays, unused). */
		for (b = xs__bd.list; b; b = b->next)
			if (b->dev == st.st_dev && b->ino == st.st_ino && !strcmp(b->path, path))
				break;
		if (!b && (b = xs__map(fd, path))) {
			b->dev = st.st_dev;
			b->ino = st.st_ino;
			b->next = xs__bd.list;
			xs__bd.list = b;
			XS_INFO("board", "opened the board %s", path);
		}
	}
	if (fd >= 0)
		close(fd);
	xs_mutex_unlock(&xs__bd.lock);
	return b;
}

void xs_board_forked(void)
{
	/* The parent's watchers do not exist here, and its slots are its own. */
	xs__parent_boards = xs__bd.list;
	xs__bd = (struct xs__boards){XS_MUTEX_INITIALIZER, NULL};
}
