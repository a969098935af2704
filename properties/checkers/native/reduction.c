/*
 * reduction.c: the partial-order reduction of properties/checkers/reduction.py -- a state's
 * free (ample) fetch step, taken alone when there is one, and the normal form that forgets
 * messages no step can consume with an effect.  Both are used only with --reduction;
 * reduction.py argues why nothing a property could see is lost.
 */
#include "state.h"

static int take(const Expanding *x, S *t, int ok) {
    if (!ok) return 0;
    forget_stale_requests(t);
    return differs(x, t);
}

/* 1 and the successor in *t if the state has a free (ample) step */
int free_step(const Expanding *x, S *t) {
    const S *s = &x->s;
    if (!C.fenced) return 0;
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        if (m->kind == FETCH_REQUEST && m->epoch < s->br[(int)m->leader].rp[(int)m->partition].leader_epoch) {
            *t = *s;
            if (take(x, t, handle_fetch(t, *m))) return 1;
        }
    }
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        if (m->kind != FETCH_RESPONSE) continue;
        const Replica *r = &s->br[(int)m->follower].rp[(int)m->partition];
        int dead = m->epoch < r->leader_epoch;
        int empty = m->error == OK && m->nrec == 0 && r->role == FOLLOWER && r->leader == m->leader &&
                    r->fetch_state == FETCHING && m->offset == r->loglen && m->epoch == r->leader_epoch &&
                    (m->hw < r->loglen ? m->hw : r->loglen) == r->hw;
        if (dead || empty) {
            *t = *s;
            if (take(x, t, receive_fetch(t, *m))) return 1;
        }
    }
    for (int f = 0; f < C.brokers; f++)
        for (int p = 0; p < C.partitions; p++) { /* the partitions at the start only, as reduction.py */
            const Replica *r = &s->br[f].rp[p];
            if (r->fetch_state == FETCHING && r->leader != NO_LEADER && s->br[(int)r->leader].rp[p].leader_epoch <= r->leader_epoch) {
                *t = *s;
                if (take(x, t, send_fetch(t, f, p))) return 1;
            }
        }
    return 0;
}

void normal_form(S *s) {
    int any_down = 0;
    for (int b = 0; b < C.brokers; b++) any_down |= s->br[b].status == DOWN;
    if (!any_down) return;
    for (int i = s->nfetch - 1; i >= 0; i--)
        if (s->fetch[i].kind == FETCH_RESPONSE && s->br[(int)s->fetch[i].follower].status == DOWN) remove_fetch_at(s, i);
    if (C.fence_broker_epoch) /* a restart's new broker epoch fences them */
        for (int i = s->nlai - 1; i >= 0; i--)
            if (s->br[(int)s->lai[i].to].status == DOWN) remove_lai_at(s, i);
}
