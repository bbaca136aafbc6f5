/* bash_waiters.c: the replies that wait (bash.start until exit, bash.poll
 * until output, bash.stop until nothing of the session is left): queued by
 * bash.c and bash_spawn.c, answered when the loop or the reaper
 * (bash_reap.c) finds their condition met. Calls only down, into the table
 * (bash_session.c) and the snapshots (bash_output.c). */

#include "bash_internal.h"

void waiter_add(enum waiter_kind kind, json_object *id, struct session *s, int64_t deadline, struct output_bound bound)
{
	struct bash_state *st = bash_state();
	struct waiter *w = xcalloc(1, sizeof *w);
	w->kind = kind;
	w->id = json_object_get(id);
	w->session = s;
	w->deadline = deadline;
	w->bound = bound;
	struct waiter **tail = &st->waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	st->nwaiters++;
	s->waiters++;
}

static bool waiter_ready(const struct waiter *w, int64_t now)
{
	struct session *s = w->session;
	if (now >= w->deadline)
		return true;
	/* bash.stop answers once nothing is left of the session. */
	if (w->kind == WAIT_STOP)
		return s->ended && !session_has_processes(s);
	return s->ended || (w->kind == WAIT_POLL && session_deliverable(s) > 0);
}

/* Answer every waiter whose condition holds (all of them when force). The
 * list is walked in arrival order, so of two polls on one session the
 * first gets the new output and the second keeps waiting. */
void waiters_answer(bool force)
{
	struct bash_state *st = bash_state();
	int64_t now = bash_clock_ms();
	struct waiter **pp = &st->waiters;
	while (*pp) {
		struct waiter *w = *pp;
		if (!force && !waiter_ready(w, now)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		st->nwaiters--;
		w->session->waiters--;
		rpc_send_result(w->id, session_snapshot(w->session, w->bound));
		json_object_put(w->id);
		free(w);
	}
}
