/*
 * properties.c: the safety properties of properties/safety.py, as one verdict each for a
 * state and for a transition (1: some property breaks).  Which property broke, and its
 * message, is the Python model's to say: the search reports the path, and
 * properties/checkers/native.py replays it through the model.
 */
#include "state.h"

static int log_has_value(const Replica *r, int value) {
    for (int i = 0; i < r->loglen; i++)
        if (r->log[i].value == value) return 1;
    return 0;
}

/* a replica of p's current incarnation (a deleted one's data is not compared) */
static int of_current_incarnation(const S *s, int p, const Replica *r) { return r->topic_id == s->zn[p].topic_id && r->role != DELETED; }

/* the leader ZooKeeper names for p, or NULL */
static const Replica *zk_leader(const S *s, int p) {
    return s->zn[p].leader == NO_LEADER ? NULL : &s->br[(int)s->zn[p].leader].rp[p];
}

int state_violation(const S *s) {
    int n = C.brokers, np = C.partition_ids;
    /* hw_le_leo */
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++)
            if (s->br[b].rp[p].hw > s->br[b].rp[p].loglen) return 1;
    /* single_committing_leader */
    for (int i = 0; i < s->nled; i++)
        for (int j = i + 1; j < s->nled; j++)
            if (s->led[i].p == s->led[j].p && s->led[i].epoch == s->led[j].epoch && s->led[i].b != s->led[j].b) return 1;
    for (int i = 0; i < s->ncommitted; i++)
        for (int j = i + 1; j < s->ncommitted; j++)
            if (s->committed[i].p == s->committed[j].p && s->committed[i].offset == s->committed[j].offset &&
                memcmp(&s->committed[i].e, &s->committed[j].e, sizeof(Entry)) != 0)
                return 1;
    /* committed_durable */
    for (int i = 0; i < s->ncommitted; i++) {
        const Replica *r = zk_leader(s, s->committed[i].p);
        int off = s->committed[i].offset;
        if (r && (off >= r->loglen || r->log[off].value != s->committed[i].e.value || r->log[off].epoch != s->committed[i].e.epoch))
            return 1;
    }
    /* replicas_consistent */
    for (int p = 0; p < np; p++)
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                const Replica *x = &s->br[a].rp[p], *y = &s->br[b].rp[p];
                if (!of_current_incarnation(s, p, x) || !of_current_incarnation(s, p, y)) continue;
                int upto = x->hw < y->hw ? x->hw : y->hw;
                int lx = upto < x->loglen ? upto : x->loglen;
                int ly = upto < y->loglen ? upto : y->loglen;
                if (lx != ly) return 1;
                for (int i = 0; i < lx; i++)
                    if (x->log[i].value != y->log[i].value || x->log[i].epoch != y->log[i].epoch) return 1;
            }
    /* isr_well_formed */
    for (int p = 0; p < np; p++) {
        const Zn *zn = &s->zn[p];
        if (zn->leader != NO_LEADER && (!has(zn->isr, zn->leader) || (zn->isr & ~zn->ar))) return 1;
    }
    /* single_controller */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (s->br[a].is_controller && s->br[b].is_controller && s->br[a].controller_epoch == s->br[b].controller_epoch) return 1;
    if (s->stale_accepts) return 1;
    /* acked_durable */
    for (int i = 0; i < s->nacked; i++) {
        const Replica *r = zk_leader(s, s->acked[i].p);
        if (r && !log_has_value(r, s->acked[i].value)) return 1;
    }
    /* zombie_cannot_commit */
    if (s->nzc) return 1;
    /* deleted_not_served */
    for (int p = 0; p < np && s->nretired; p++) {
        const Replica *r = zk_leader(s, p);
        if (!s->zn[p].ar || !r || !of_current_incarnation(s, p, r)) continue;
        for (int i = 0; i < s->nretired; i++)
            if (s->retired[i].p == p && log_has_value(r, s->retired[i].value)) return 1;
    }
    /* epoch_monotonic (along logs) */
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++) {
            const Replica *r = &s->br[b].rp[p];
            for (int i = 1; i < r->loglen; i++)
                if (r->log[i].epoch < r->log[i - 1].epoch) return 1;
        }
    return 0;
}

int transition_violation(const S *a, const S *b) {
    if (b->controller_epoch < a->controller_epoch) return 1;
    for (int p = 0; p < C.partition_ids; p++) {
        const Zn *zb = &a->zn[p], *za = &b->zn[p];
        if (za->topic_id != zb->topic_id || !za->ar || !zb->ar) continue; /* deleted, removed or created (again) */
        if (za->leader_epoch < zb->leader_epoch) return 1;
        if (za->leader != zb->leader && za->leader_epoch <= zb->leader_epoch) return 1;
    }
    for (int x = 0; x < C.brokers; x++)
        for (int p = 0; p < C.partition_ids; p++) {
            const Replica *ra = &b->br[x].rp[p], *rb = &a->br[x].rp[p];
            if (ra->topic_id != rb->topic_id || ra->role == DELETED) continue;
            if (ra->leader_epoch < rb->leader_epoch) return 1;
        }
    return 0;
}
