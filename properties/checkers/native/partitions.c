/*
 * partitions.c: model/actions/partitions.py -- partitions added to and removed from the
 * topic (seed 000 H).  The state has one slot per partition id the topic can ever have
 * (C.partition_ids, model.state.initial): the ids past C.partitions are not created yet
 * (leader epoch -1, no AR) until add_partitions fills one; a removed partition keeps its
 * znode's leader epoch, so its id stays used (ever_created).  Each function is named after
 * the Python one it ports, read that one for the why.
 */
#include "state.h"

/* removal_pending (model/actions/topics.py): p's removal still waits for a live replica's
 * answer to its StopReplica(delete) */
int removal_pending(const S *s, int p) {
    for (int i = 0; i < s->nstop; i++)
        if (s->stop[i].partition == p && s->stop[i].leader_epoch == EPOCH_DURING_DELETE) return 1;
    return 0;
}

/* fresh_partition_id: one past every id the topic ever had, or -1 when no slot is left */
static int fresh_partition_id(const S *s) {
    int p = 0;
    for (int q = 0; q < C.partition_ids; q++)
        if (ever_created(&s->zn[q])) p = q + 1;
    return p < C.partition_ids ? p : -1;
}

/* added_partition_id: a fresh id, or with reuse_partition_ids the lowest id without a
 * partition (a removed one's included); -1 for none */
static int added_partition_id(const S *s) {
    if (!C.reuse_partition_ids) return fresh_partition_id(s);
    for (int p = 0; p < C.partition_ids; p++)
        if (!s->zn[p].ar) return p;
    return -1;
}

/* added_incarnation: with partition_identity a removed id added again is a new incarnation */
static int added_incarnation(const Zn *zn) {
    return C.partition_identity && ever_created(zn) ? zn->topic_id + 1 : zn->topic_id;
}

int add_partitions(S *s, int c, int p, u8 ar, int leader) {
    if (!acting_controller(s, c) || s->partition_changes >= C.partition_changes) return 0;
    if (!ar || (ar >> C.brokers)) return 0;
    if (p != added_partition_id(s) || removal_pending(s, p)) return 0;
    Zn *zn = &s->zn[p];
    u8 isr = ar & s->live & (u8)~shutting_down(s);
    if (!has(isr, leader)) return 0;
    *zn = (Zn){(i8)leader, 1, isr, (i8)(zn->zk_version + 1), ar, 0, (i8)added_incarnation(zn)};
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(ar, to)) add_lai(s, make_lai(to, p, leader, 1, isr, zn->zk_version, s->controller_epoch, mbe, zn->topic_id));
    Led l = {(i8)p, 1, (i8)leader};
    SET_ADD(s->led, s->nled, MAXLED, l);
    s->partition_changes++;
    return 1;
}

int remove_partitions(S *s, int c, int p) {
    if (!acting_controller(s, c) || s->partition_changes >= C.partition_changes) return 0;
    if (!s->zn[p].ar || s->zn[p].rar) return 0;
    partition_gone(s, p);
    s->partition_changes++;
    s->removed |= (u8)(1 << p);
    return 1;
}

/* partition_adds_args (topics.py assignments: any non-empty AR, any live member of it as
 * leader), then partition_removals_args */
void partition_successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    int c = s->controller, n = C.brokers;
    S t;
    int p = added_partition_id(s);
    if (p >= 0 && !removal_pending(s, p))
        for (int ar = 1; ar < 1 << n; ar++)
            for (int l = 0; l < n; l++)
                if (has((u8)ar, l) && has(s->live, l)) TRY(add_partitions(&t, c, p, (u8)ar, l));
    for (int q = 0; q < C.partition_ids; q++)
        if (s->zn[q].ar && !s->zn[q].rar) TRY(remove_partitions(&t, c, q));
}
