/*
 * pipe.h - hand work to a helper thread, in order, through a bounded ring
 * of reusable slots.
 *
 * The producer fills the next slot (pano_pipe_next), hands it over
 * (pano_pipe_push) and goes on with the next while the helper thread calls
 * work(slot, user) on the slots pushed, one after the other, in the order
 * pushed. When every slot is pushed and not yet worked on, pano_pipe_next
 * waits until half of them are done: at most nslots slots are ever in
 * hand, and the two threads do not take turns one slot at a time. A slot keeps what it held
 * when it comes round again (a buffer, a parser's scratch memory), so that
 * what the producer made in it stays valid until the helper is done with
 * it.
 *
 * Handing a slot over takes no lock while both threads are busy. A helper
 * that has caught up with a stream of slots lingers: it is woken again once
 * a few more are pushed, not for each one; a slot pushed at the end of a
 * stream waits for it `linger` seconds at most, and a drain or a full ring
 * wakes it at once.
 *
 * One producer thread. When the helper thread cannot start, push calls
 * work itself: the same order, no overlap.
 */
#ifndef PANO_PIPE_H
#define PANO_PIPE_H

#include <stddef.h>

typedef struct pano_pipe pano_pipe;

/* A pipe of nslots slots of slot_size bytes each, zeroed at first, whose
 * helper lingers `linger` seconds (0: woken at every push). */
pano_pipe *pano_pipe_new(size_t nslots, size_t slot_size, double linger,
                         void (*work)(void *slot, void *user), void *user);

/* The next slot to fill, once the helper is done with what it held. */
void *pano_pipe_next(pano_pipe *p);

/* Hand the slot pano_pipe_next gave over to the helper. */
void pano_pipe_push(pano_pipe *p);

/* Wait until the helper has worked on every slot pushed. */
void pano_pipe_drain(pano_pipe *p);

/* Every slot, in place: for what the producer keeps in them (not while
 * slots are in hand: drain first). */
size_t pano_pipe_slots(const pano_pipe *p);
void *pano_pipe_slot(pano_pipe *p, size_t i);

/* Drain, then stop the helper and free the pipe (not the slots' contents:
 * free them through pano_pipe_slot first). */
void pano_pipe_free(pano_pipe *p);

#endif
