/*
 * topics.c: model/actions/topics.py -- an administrator deletes the topic and creates it
 * again under the same name with any assignment -- and the rules on a replica of a deleted
 * incarnation (model/actions/common.py topic_deleted, for_incarnation, is_current).  Each
 * partition id is deleted and created on its own, as the model's (c, p) arguments have it;
 * partition_gone is partitions.c's removal too.  Each function is named after the Python one
 * it ports, read that one for the why.
 */
#include "state.h"

/* ---------------------------------------------------------------------------------------
 * model/actions/common.py: a replica and the topic's incarnations
 * ------------------------------------------------------------------------------------- */

/* topic_deleted: the partition's directory goes, and with it log, HW and leader epoch */
void topic_deleted(Replica *r, int topic_id) {
    memset(r, 0, sizeof *r);
    r->role = DELETED;
    r->leader = NO_LEADER;
    r->zk_version = -1;
    r->fetch_state = IDLE;
    unknown_leo(r);
    r->topic_id = (i8)topic_id;
}

/* for_incarnation: with topic ids, a replica of an older incarnation is deleted before the
 * broker acts for incarnation topic_id */
void for_incarnation(Replica *r, int topic_id) {
    if (C.topic_ids && topic_id > r->topic_id) {
        topic_deleted(r, topic_id);
        r->role = NONE;
    }
}

/* is_current: the topic exists and r acts for its current incarnation */
int is_current(const S *s, int p, const Replica *r) { return s->zn[p].ar && r->topic_id == s->zn[p].topic_id; }

/* ---------------------------------------------------------------------------------------
 * model/actions/topics.py
 * ------------------------------------------------------------------------------------- */

static void retire(S *s, int p, const Entry *log, int len) {
    for (int i = 0; i < len; i++) {
        PV x = {(i8)p, log[i].value};
        SET_ADD(s->retired, s->nretired, MAXSMALL, x);
    }
}

/* the (partition, value) pairs of pvs[0..n) not of partition p, in order */
static i8 pvs_without(PV *pvs, int n, int p) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (pvs[i].p != p) pvs[k++] = pvs[i];
    memset(&pvs[k], 0, sizeof(PV) * (size_t)(n - k));
    return (i8)k;
}

/* partition_gone: StopReplica(delete) to the live assigned replicas, the znode loses its AR,
 * leader and ISR (its version moves on), and the history forgets the partition's records,
 * every one of them retired */
void partition_gone(S *s, int p) {
    Zn *zn = &s->zn[p];
    for (int b = 0; b < C.brokers; b++)
        if (has(zn->ar, b) && has(s->live, b))
            add_stop(s, make_stop(b, p, EPOCH_DURING_DELETE, s->controller_epoch, zn->topic_id, 1));
    zn->leader = NO_LEADER;
    zn->isr = 0;
    zn->zk_version++;
    zn->ar = 0;
    for (int b = 0; b < C.brokers; b++) retire(s, p, s->br[b].rp[p].log, s->br[b].rp[p].loglen);
    for (int i = 0; i < s->nfetch; i++)
        if (s->fetch[i].partition == p) retire(s, p, s->fetch[i].rec, s->fetch[i].nrec);
    int k = 0;
    for (int i = 0; i < s->ncommitted; i++)
        if (s->committed[i].p != p) s->committed[k++] = s->committed[i];
    memset(&s->committed[k], 0, sizeof(Committed) * (size_t)(s->ncommitted - k));
    s->ncommitted = (i8)k;
    k = 0;
    for (int i = 0; i < s->nled; i++)
        if (s->led[i].p != p) s->led[k++] = s->led[i];
    memset(&s->led[k], 0, sizeof(Led) * (size_t)(s->nled - k));
    s->nled = (i8)k;
    s->nacked = pvs_without(s->acked, s->nacked, p);
    s->nzapp = pvs_without(s->zapp, s->nzapp, p);
    s->nzc = pvs_without(s->zc, s->nzc, p);
    s->unclean &= (u8)~(1 << p);
}

int delete_topic_of(S *s, int c, int p) {
    if (!acting_controller(s, c) || s->deletions >= C.deletions || !s->zn[p].ar || s->zn[p].rar) return 0;
    partition_gone(s, p);
    s->deletions++;
    return 1;
}

/* create_topic: the name is free once every live replica has answered the deletion's
 * StopReplica; leader epoch 1 again, a new topic id, LeaderAndISR to the assigned brokers */
int create_topic_of(S *s, int c, int p, u8 ar, int leader) {
    Zn *zn = &s->zn[p];
    if (!acting_controller(s, c) || !ar || zn->ar || removal_pending(s, p)) return 0;
    u8 isr = ar & s->live & (u8)~shutting_down(s);
    if (!has(isr, leader)) return 0;
    *zn = (Zn){(i8)leader, 1, isr, (i8)(zn->zk_version + 1), ar, 0, (i8)(zn->topic_id + 1)};
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(ar, to)) add_lai(s, make_lai(to, p, leader, 1, isr, zn->zk_version, s->controller_epoch, mbe, zn->topic_id));
    Led l = {(i8)p, 1, (i8)leader};
    SET_ADD(s->led, s->nled, MAXLED, l);
    return 1;
}

/* partition 0's, for the judge's step (step.c) */
int delete_topic(S *s, int c) { return delete_topic_of(s, c, 0); }
int create_topic(S *s, int c, u8 ar, int leader) { return create_topic_of(s, c, 0, ar, leader); }

/* deletions_args, then creations_args (topics.py assignments: any non-empty AR, any live
 * member of it as leader), partition by partition */
void topic_successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    int c = s->controller, n = C.brokers;
    S t;
    if (s->deletions < C.deletions)
        for (int p = 0; p < C.partition_ids; p++)
            if (s->zn[p].ar && !s->zn[p].rar) TRY(delete_topic_of(&t, c, p));
    for (int p = 0; p < C.partition_ids; p++)
        if (!s->zn[p].ar)
            for (int ar = 1; ar < 1 << n; ar++)
                for (int l = 0; l < n; l++)
                    if (has((u8)ar, l) && has(s->live, l)) TRY(create_topic_of(&t, c, p, (u8)ar, l));
}
