/* The board: processes that use the library on one device coordinate through it, with no
 * daemon (doc/architecture.md, "Several processes on one GPU: the board").
 *
 * A board is a small file mapped shared by every process that joins it (by default
 * /dev/shm/xsched-<device uuid>, XSCHED_BOARD and XSCHED_BOARD_GROUP in core/config.h): a
 * header (magic, version, size, slot count, the creator's uid) and XS_BOARD_SLOTS slots of
 * atomics. A process holds one slot per board, where it publishes a few numbers and reads
 * the others'. What the numbers mean is the engine's business (preempt/remote.c): here
 * they are only "top", "busy" with its "ask", and the "lower" work charged and waiting.
 * Nothing in this file knows of XQueues.
 *
 * No lock is held across processes. A slot is claimed with a compare-and-swap of its
 * owner word (0 = free) and then written only by its owner; every field is an atomic, so
 * a process killed at any instant leaves at worst a slot that the others find dead and
 * that a newcomer takes over. A process cannot wedge another: nobody ever waits for a
 * word another process must change, except the watchers below, which wake on a timer too.
 *
 * Identity, which survives pid reuse: the pid, the process's start time (clock ticks
 * after boot, /proc/PID/stat field 22) and its pid namespace (the inode of
 * /proc/self/ns/pid), written before the slot is marked whole (ident = owner).
 *
 * Liveness, judged by each process's watcher for the slots of the others:
 *   - a heartbeat (CLOCK_MONOTONIC) the owner's watcher writes every XS_BOARD_BEAT_NS;
 *   - a slot whose heartbeat is older than XS_BOARD_SUSPECT_NS and whose owner shares
 *     the reader's pid namespace is checked in /proc: no such pid, a zombie, or another
 *     start time (a reused pid) = dead, for good;
 *   - one of another pid namespace (or where /proc says nothing) counts while its
 *     heartbeat is younger than XS_BOARD_FOREIGN_NS;
 *   - any slot whose heartbeat is older than XS_BOARD_STALE_NS is not counted (a process
 *     stopped, or that exec'd: it keeps its pid and start time); older than
 *     XS_BOARD_RECLAIM_NS, a newcomer may take it over.
 * So a process killed while it holds others is released within about
 * XS_BOARD_SUSPECT_NS + XS_BOARD_BEAT_NS (70 ms) in one pid namespace, and
 * XS_BOARD_FOREIGN_NS + XS_BOARD_BEAT_NS (100 ms) across namespaces.
 *
 * Wake-ups: each slot has a futex word. Its owner's watcher thread ("xs-board", one per
 * board joined) sleeps on it (FUTEX_WAIT without the private flag: the word is in a shared
 * mapping) for at most XS_BOARD_BEAT_NS, with its bit set in the header's sleepers mask. A
 * publish that the others must see at once (top, busy) raises the header's change count;
 * if another live slot's watcher sleeps, the publisher sets its board's relay and wakes
 * its own watcher (one FUTEX_WAKE, not one per process, on what may be an application's
 * submitting thread), which wakes the sleeping watchers of the other live slots; each
 * watcher then calls the hook its process registered (xs_board_join). Lower work is
 * published without a wake (it changes with every command); readers see it when they
 * look. A reader's decision never waits for a wake-up: the budget reads the busy slots
 * themselves (preempt/remote.c); the wake-ups move the other processes' passes.
 *
 * Permissions: a board is made 0600 (XSCHED_BOARD_GROUP=name: 0660 with that group); one
 * that is not a regular file, is writable by others, is group-writable for another group
 * than the one asked for, is owned by another user (and not shared through that group),
 * or whose header says another version, size or slot count, is refused with a warning:
 * the process runs alone on that device. So is a full board.
 *
 * Thread-safety: xs_board_open, _join and _leave serialize on the board list's lock (a
 * leaf); the setters are called by one thread at a time per board (the engine calls them
 * under its device lock); the readers from any thread, lock-free.
 */
#ifndef XS_CORE_BOARD_H
#define XS_CORE_BOARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum {
	XS_BOARD_SLOTS = 64,   /* processes per board */
	XS_BOARD_VERSION = 2,  /* the layout below; another version is refused */
	XS_BOARD_NAME_MAX = 64 /* a device's name (its uuid text), with the terminating 0 */
};

/* Liveness (ns; see above). */
#define XS_BOARD_BEAT_NS    20000000LL    /* the watcher's heartbeat, and its longest sleep */
#define XS_BOARD_SUSPECT_NS 50000000LL    /* then /proc is asked (one pid namespace) */
#define XS_BOARD_FOREIGN_NS 80000000LL    /* then another namespace's slot is not counted */
#define XS_BOARD_STALE_NS   2000000000LL  /* then no slot is counted */
#define XS_BOARD_RECLAIM_NS 10000000000LL /* then a newcomer may take the slot */

/* How long before another process's charged work is expected to end a process may charge
 * the one command that goes beyond the budget (xs_board_first), at least: as the
 * budget's lead within a process (preempt/engine_int.h, XS_BUDGET_LEAD_NS). */
#define XS_BOARD_LEAD_NS 100000LL

/* "Nothing": no top, nobody busy. */
#define XS_BOARD_NONE INT64_MIN

/* The shared layout (version 2: version 1 had no lower-work clock). Every field a process
 * changes after the board is made is an atomic; the header's plain fields are written once,
 * before the file gets its name. */
typedef struct xs_board_slot {
	/* Identity (written at the claim, before ident). */
	_Atomic uint64_t owner; /* 0 = free, else the claim token: claim time in ms << 20 |
				 * random bits */
	_Atomic uint64_t ident; /* = owner once the identity below is written */
	_Atomic int64_t pid;
	_Atomic uint64_t start;  /* the process's start time (clock ticks after boot) */
	_Atomic uint64_t pidns;  /* the inode of its /proc/self/ns/pid, 0 = unknown */
	_Atomic int64_t beat_ns; /* its heartbeat (CLOCK_MONOTONIC) */
	_Atomic uint32_t wake;   /* the futex word its watcher sleeps on */
	uint32_t pad0;
	_Atomic uint64_t changes; /* raised at each publish of this slot */
	/* Published numbers (preempt/remote.c says what they mean). */
	_Atomic int64_t top;  /* XS_BOARD_NONE = none */
	_Atomic int64_t busy; /* XS_BOARD_NONE = none */
	_Atomic int64_t ask;
	_Atomic int64_t charged_ns;
	_Atomic uint64_t charged_cmds;
	_Atomic int64_t wait_ns; /* 0 = not waiting */
	_Atomic int64_t free_ns; /* when its charged work is expected to end (0 = none) */
	/* Its lower-work clock: the time it had lower work charged, summed up to lower_from_ns
	 * (while it has some, 0 otherwise), and when that work last fell to none. */
	_Atomic int64_t lower_busy_ns;
	_Atomic int64_t lower_from_ns;
	_Atomic int64_t lower_end_ns;
	uint64_t pad1[6];
} xs_board_slot;

typedef struct xs_board_hdr {
	uint64_t magic; /* XS_BOARD_MAGIC */
	uint32_t version, size, slots, slot_size;
	uint32_t uid, gid; /* the creator's; the file's owner must be uid */
	char name[XS_BOARD_NAME_MAX];
	_Atomic uint64_t changes;  /* raised by every publish that wakes (top, busy) */
	_Atomic uint64_t sleepers; /* bit i: slot i's watcher sleeps on its wake word */
	_Atomic uint64_t busy;     /* bit i: slot i publishes a busy value */
	uint64_t pad;
} xs_board_hdr;

#define XS_BOARD_MAGIC 0x3144424843535858ULL /* "XXSCHBD1" read little-endian */
#define XS_BOARD_SIZE  (sizeof(xs_board_hdr) + XS_BOARD_SLOTS * sizeof(xs_board_slot))

typedef struct xs_board xs_board;

/* What the other live slots of a board say (xs_board_look). */
typedef struct xs_board_view {
	int64_t top;    /* the greatest top, XS_BOARD_NONE if none */
	int64_t busy;   /* the greatest busy, XS_BOARD_NONE if none */
	int64_t ask;    /* the least ask among the slots busy at `busy` */
	unsigned lower; /* slots with lower work charged or waiting */
	unsigned live;  /* live slots (not this process's) */
} xs_board_view;

/* The watcher's hook: called on its thread after a wake-up or a heartbeat, with nothing
 * of the board's held. */
typedef void (*xs_board_fn)(void *arg);

/* The board named @name (a device's uuid text: letters, digits, '-' and '_') in directory
 * @dir, opened or made (0600; 0660 with @group, a group name, or NULL). The same board for
 * the same path while the process lives: a board is never unmapped, so lock-free readers
 * may always touch it. NULL when it cannot be used (logged as a warning): the caller runs
 * alone on that device. */
xs_board *xs_board_open(const char *dir, const char *name, const char *group);
/* Its path (for messages). */
const char *xs_board_path(const xs_board *b);
/* Claim a slot and start the watcher, which calls @fn(@arg) after each wake-up and
 * heartbeat; false when the board is full (logged as a warning) or the thread cannot
 * start. At most one join per board at a time. */
bool xs_board_join(xs_board *b, xs_board_fn fn, void *arg);
/* Stop the watcher (not from its own hook) and give the slot back, published empty. */
void xs_board_leave(xs_board *b);

/* The owner's numbers, each stored only when it changed. Top and busy wake the others'
 * watchers; lower work does not. Lock-free; one thread at a time per board. */
void xs_board_set_top(xs_board *b, int64_t top);
void xs_board_set_busy(xs_board *b, int64_t busy, int64_t ask);
/* The owner's lower work, as its slot holds it (without a wake): charged
 * (ns, commands), waiting since wait_ns (0 = not), expected to end at free_ns (0 = none),
 * and its lower-work clock (monotonic ns): busy_ns summed up to from_ns, the moment its
 * lower work last rose from none (0 while it has none), and end_ns, when it last fell to
 * none (lower_busy_ns, lower_from_ns, lower_end_ns in the slot). */
typedef struct xs_board_lower {
	int64_t charged_ns;
	uint64_t charged_cmds;
	int64_t wait_ns, free_ns;
	int64_t busy_ns, from_ns, end_ns;
} xs_board_lower;
void xs_board_set_lower(xs_board *b, const xs_board_lower *w);

/* Readers, over the slots the watcher last found live (not this process's). Lock-free,
 * any thread; a board not joined reads as empty. */
/* The greatest busy value published, XS_BOARD_NONE if none; *@ask: the least ask among
 * the slots busy at it. One load when nobody is busy. */
int64_t xs_board_busy(const xs_board *b, int64_t *ask);
void xs_board_look(const xs_board *b, xs_board_view *v);
/* Whether a process that waits since @wait_ns (monotonic) goes first at @now: no other has
 * lower work charged that is expected to run longer than its lead (100 us or an eighth of
 * a command of it), and none waits since earlier. */
bool xs_board_first(const xs_board *b, int64_t wait_ns, int64_t now);
/* When the other processes' charged work is within its lead of its end, the earliest of
 * them (monotonic ns); 0 when none has work charged. */
int64_t xs_board_free_at(const xs_board *b);
/* The other processes' lower-work clocks at @now, summed (ns): how long, in all, they had
 * lower work charged. It only grows while the live set stays the same; a process that
 * joins adds its whole past at once, one that leaves takes it back (the caller clamps a
 * difference at 0). A reading may count a moment twice (a clock read while its owner
 * stops it), never miss one. */
int64_t xs_board_lower_clock(const xs_board *b, int64_t now);
/* Whether no other process has had lower work charged since @since (monotonic ns). */
bool xs_board_lower_quiet(const xs_board *b, int64_t since);
/* Wake the watcher of the other process that waits longest (wait_ns), if one does. */
void xs_board_wake_waiter(const xs_board *b);
/* Whether another live process is on the board. */
bool xs_board_others(const xs_board *b);

/* In a child after fork(): the parent's boards and slots are not the child's; its first
 * open makes the list anew (the parent's mappings stay, unused). */
void xs_board_forked(void);

#endif
