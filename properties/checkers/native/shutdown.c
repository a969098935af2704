/*
 * shutdown.c: model/actions/shutdown.py -- controlled shutdown and the clean stop after it --
 * and StopReplica (model/actions/reassignment.py stop_replica): a controlled shutdown's to a
 * follower, without delete, and a topic deletion's (topics.c) and a reassignment's
 * (reassign.c) and a partition removal's (partitions.c), with it.  Each
 * function is named after the Python one it ports, read that one for the why.
 */
#include "state.h"

/* ---------------------------------------------------------------------------------------
 * The StopReplica requests in flight (a set, as model.state keeps it)
 * ------------------------------------------------------------------------------------- */

Stop make_stop(int to, int p, int leader_epoch, int controller_epoch, int topic_id, int delete) {
    Stop m;
    memset(&m, 0, sizeof m);
    m.to = (i8)to;
    m.partition = (i8)p;
    m.leader_epoch = (i8)leader_epoch;
    m.controller_epoch = (i8)controller_epoch;
    m.topic_id = (i8)topic_id;
    m.delete = (i8)delete;
    return m;
}

void add_stop(S *s, Stop m) { SET_ADD(s->stop, s->nstop, MAXSTOP, m); }

static void remove_stop_at(S *s, int i) {
    memmove(&s->stop[i], &s->stop[i + 1], sizeof(Stop) * (size_t)(s->nstop - i - 1));
    s->nstop--;
    memset(&s->stop[s->nstop], 0, sizeof(Stop));
}

/* brokers.py _unanswered_deletions_dropped: every StopReplica to a broker dies with its
 * process (Kafka's controller drops the broker's channel, queue and all) */
void remove_stops_to(S *s, int b) {
    for (int i = s->nstop - 1; i >= 0; i--)
        if (s->stop[i].to == b) remove_stop_at(s, i);
}

/* ---------------------------------------------------------------------------------------
 * model/actions/shutdown.py
 * ------------------------------------------------------------------------------------- */

/* shutdowns_args: the (p, b, leader) of each controlled shutdown worth trying, in its order */
int shutdowns_args(const S *s, int args[][3]) {
    int n = 0, c = s->controller;
    if (c == NO_LEADER || s->shutdowns >= C.max_shutdowns) return 0;
    u8 stopping = s->br[c].shutting_down;
    for (int p = 0; p < C.partition_ids; p++) {
        const Zn *zn = &s->zn[p];
        int leader = zn->leader;
        for (int b = 0; b < C.brokers; b++) /* a follower outside the ISR: nothing to write */
            if (has(zn->ar, b) && !has(zn->isr, b) && b != leader) {
                args[n][0] = p, args[n][1] = b, args[n][2] = leader;
                n++;
            }
        for (int b = 0; b < C.brokers; b++) {
            if (!has(zn->isr, b)) continue;
            if (leader != b && !has(stopping, leader)) { /* the leadership stays (or there is none) */
                args[n][0] = p, args[n][1] = b, args[n][2] = leader;
                n++;
                continue;
            }
            for (int l = 0; l < C.brokers; l++) /* it moves */
                if (has(zn->isr, l) && l != b && !has(stopping, l)) {
                    args[n][0] = p, args[n][1] = b, args[n][2] = l;
                    n++;
                }
        }
    }
    return n;
}

int controlled_shutdown(S *s, int c, int p, int b, int leader) {
    if (!acting_controller(s, c) || s->br[b].status != UP || !has(s->live, b)) return 0;
    if (s->shutdowns >= C.max_shutdowns) return 0;
    Zn *zn = &s->zn[p];
    u8 stopping = s->br[c].shutting_down | (u8)(1 << b);
    if (!has(zn->isr, b) && has(zn->ar, b) && b != zn->leader && leader == zn->leader) {
        s->br[c].shutting_down = stopping;
        add_stop(s, make_stop(b, p, zn->leader_epoch, s->controller_epoch, zn->topic_id, 0));
        return 1;
    }
    if (!has(zn->isr, b) || zn->leader_epoch + 1 > C.max_epoch) return 0;
    u8 isr = zn->isr & (u8)~(1 << b);
    if (has(stopping, zn->leader)) {
        if (!has(isr, leader) || !has(s->live, leader) || has(stopping, leader)) return 0;
    } else if (leader != zn->leader || !isr) {
        return 0;
    }
    s->br[c].shutting_down = stopping;
    write_and_send(s, p, leader, isr);
    add_stop(s, make_stop(b, p, zn->leader_epoch, s->controller_epoch, zn->topic_id, 0));
    return 1;
}

int broker_stop(S *s, int b) {
    if (s->br[b].status != UP || s->shutdowns >= C.max_shutdowns) return 0;
    for (int p = 0; p < C.partition_ids; p++) /* controlled shutdown first moves it out of every ISR it can leave */
        if (has(s->zn[p].isr, b) && popcount8(s->zn[p].isr) > 1) return 0;
    process_ends(s, b);
    s->shutdowns++;
    return 1;
}

/* model/actions/commands.py sent_earlier and waits_in_channel: a broker takes one
 * controller's requests in the order they were sent (Kafka's ControllerChannelManager: one
 * queue and one sender thread per broker). */
static int sent_earlier(int to, int p, int cepoch, int topic_id, int epoch, int removal, int then_to, int then_p,
                        int then_cepoch, int then_topic_id, int then_epoch) {
    if (to != then_to || p != then_p || cepoch != then_cepoch) return 0;
    if (topic_id != then_topic_id) return topic_id < then_topic_id;
    if (epoch == EPOCH_DURING_DELETE || then_epoch == EPOCH_DURING_DELETE) return 0;
    if (C.reuse_partition_ids && !C.partition_identity) return 0; /* a re-added id's epochs start again */
    if (epoch == then_epoch) return removal; /* a reassignment's StopReplica (delete) comes first */
    return epoch < then_epoch;
}

/* a LeaderAndISR waits behind a StopReplica sent before it */
int lai_waits(const S *s, const Lai *m) {
    for (int i = 0; i < s->nstop; i++) {
        const Stop *x = &s->stop[i];
        if (sent_earlier(x->to, x->partition, x->controller_epoch, x->topic_id, x->leader_epoch, x->delete,
                         m->to, m->partition, m->controller_epoch, m->topic_id, m->leader_epoch)) return 1;
    }
    return 0;
}

/* a StopReplica waits behind a LeaderAndISR sent before it that the broker would still take */
int stop_waits(const S *s, const Stop *m) {
    for (int i = 0; i < s->nlai; i++) {
        const Lai *x = &s->lai[i];
        if (sent_earlier(x->to, x->partition, x->controller_epoch, x->topic_id, x->leader_epoch, 0,
                         m->to, m->partition, m->controller_epoch, m->topic_id, m->leader_epoch) && !stale_reason(s, x))
            return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * model/actions/reassignment.py stop_replica: a controlled shutdown's (stopped_replica), a
 * topic deletion's (topic_deleted) and a reassignment's (deleted_replica)
 * ------------------------------------------------------------------------------------- */

int stop_replica(S *s, Stop m) {
    int b = m.to, p = m.partition, i;
    Broker *br = &s->br[b];
    Replica *r = &br->rp[p];
    for (i = 0; i < s->nstop; i++)
        if (memcmp(&s->stop[i], &m, sizeof m) == 0) break;
    if (i == s->nstop || br->status != UP || stop_waits(s, &m)) return 0;
    remove_stop_at(s, i);
    if (C.fence_controller_epoch && m.controller_epoch < br->controller_epoch) return 1; /* refused */
    int deletion = m.leader_epoch == EPOCH_DURING_DELETE;
    if (deletion && C.topic_ids && m.topic_id < r->topic_id) return 1; /* a newer incarnation's replica */
    if (!deletion && m.leader_epoch < r->leader_epoch) return 1;
    if (m.controller_epoch > br->controller_epoch) { /* seed 002: a newer controller exists */
        br->controller_epoch = m.controller_epoch;
        stop_controlling(br);
    }
    drop_responses_to(s, b, p);
    if (!m.delete)
        replica_stops(r); /* it stops fetching and keeps its log, HW and leader epoch */
    else if (deletion)
        topic_deleted(r, m.topic_id > r->topic_id ? m.topic_id : r->topic_id);
    else
        deleted_replica(r);
    return 1;
}
