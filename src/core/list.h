/* One intrusive doubly linked list, used by every queue of the library (pending and
 * in-flight commands, XQueues of a device, the scheduler's registry, kick lists).
 *
 * A list head is an xs_link whose next/prev point at itself when empty; an element
 * embeds an xs_link and is recovered with xs_container_of(). An element that is on no
 * list has next == prev == NULL (xs_link_init), so membership can be asserted.
 * The list does no locking: each list's owner documents which lock guards it.
 */
#ifndef XS_CORE_LIST_H
#define XS_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct xs_link {
	struct xs_link *next, *prev;
} xs_link;

#define xs_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void xs_list_init(xs_link *head)
{
	head->next = head->prev = head;
}

static inline void xs_link_init(xs_link *l)
{
	l->next = l->prev = NULL;
}

static inline bool xs_list_empty(const xs_link *head)
{
	return head->next == head;
}

static inline bool xs_linked(const xs_link *l)
{
	return l->next != NULL;
}

static inline void xs_list_push_back(xs_link *head, xs_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void xs_list_push_front(xs_link *head, xs_link *l)
{
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
}

static inline void xs_list_remove(xs_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	xs_link_init(l);
}

/* The first element, or NULL when empty. */
static inline xs_link *xs_list_first(const xs_link *head)
{
	return xs_list_empty(head) ? NULL : head->next;
}

static inline xs_link *xs_list_pop_front(xs_link *head)
{
	xs_link *l = xs_list_first(head);
	if (l)
		xs_list_remove(l);
	return l;
}

#define xs_list_for_each(pos, head)                                                                \
	for (xs_link *pos = (head)->next; pos != (head); pos = pos->next)

#endif
