/*
 * reassign.c: model/actions/reassignment.py -- the Reassignment Agent's start of a
 * reassignment (seed 000 F, INIT) and its completion (IN_PROGRESS: RAR in the ISR) -- and
 * what a reassignment's StopReplica leaves of a replica (model/actions/common.py
 * deleted_replica; shutdown.c's stop_replica takes it).  One partition (partition 0: native.py
 * refuses reassignments beside more partition ids); the AR and RAR are
 * sets of brokers, as the model's sorted tuples are.  Each function is named after the
 * Python one it ports, read that one for the why.
 */
#include "state.h"

/* deleted_replica: the log and HW go; the highest leader epoch seen and the topic id stay */
void deleted_replica(Replica *r) {
    int epoch = r->leader_epoch, topic_id = r->topic_id;
    topic_deleted(r, topic_id);
    r->role = NONE;
    r->leader_epoch = (i8)epoch;
}

/* reassign_starts_args: the pending RAR again, or -- within the bound -- every non-empty
 * replica set, by increasing bit mask (the order of the Python enumeration) */
int reassign_starts_args(const S *s, u8 rars[]) {
    if (s->controller == NO_LEADER) return 0;
    if (s->zn_rar) {
        rars[0] = s->zn_rar;
        return 1;
    }
    if (s->reassignments >= C.reassignments) return 0;
    int n = 0;
    for (int mask = 1; mask < 1 << C.brokers; mask++) rars[n++] = (u8)mask;
    return n;
}

/* reassign_start: AR := AR + RAR in the topic path (the leaderAndISR znode and its version
 * stay), LeaderAndISR of the znode as it is to every member of RAR */
int reassign_start(S *s, int c, u8 rar) {
    if (!acting_controller(s, c) || !rar) return 0;
    if (!s->zn_ar) return 0; /* the topic is deleted */
    if (!s->zn_rar) {
        if (s->reassignments >= C.reassignments) return 0;
        s->reassignments++;
    } else if (s->zn_rar != rar) {
        return 0;
    }
    s->zn_ar |= rar;
    s->zn_rar = rar;
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(rar, to))
            add_lai(s, make_lai(to, 0, s->zn_leader, s->zn_leader_epoch, s->zn_isr, s->zn_zk_version, s->controller_epoch, mbe, s->zn_topic_id));
    return 1;
}

/* reassign_complete: once RAR is in the ISR, a conditional write of leader (a live member of
 * RAR not shutting down, the current leader if it is one), leader_epoch + 1 and ISR ∩ RAR;
 * AR := RAR, no RAR; LeaderAndISR to RAR and StopReplica (delete) to the live replicas removed */
int reassign_complete(S *s, int c, int leader) {
    if (!acting_controller(s, c)) return 0;
    u8 rar = s->zn_rar;
    if (!rar || (rar & ~s->zn_isr) || s->zn_leader_epoch + 1 > C.max_epoch) return 0;
    u8 live_rar = rar & s->live & (u8)~shutting_down(s);
    if (!has(live_rar, leader) || (has(live_rar, s->zn_leader) && leader != s->zn_leader)) return 0;
    u8 removed = s->zn_ar & (u8)~rar & s->live; /* stop_removed_replicas: no channel to a broker down */
    s->zn_leader = (i8)leader;
    s->zn_leader_epoch++;
    s->zn_isr &= rar;
    s->zn_zk_version++;
    s->zn_ar = rar;
    s->zn_rar = 0;
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(rar, to))
            add_lai(s, make_lai(to, 0, leader, s->zn_leader_epoch, s->zn_isr, s->zn_zk_version, s->controller_epoch, mbe, s->zn_topic_id));
    for (int b = 0; b < C.brokers; b++)
        if (has(removed, b)) add_stop(s, make_stop(b, 0, s->zn_leader_epoch, s->controller_epoch, s->zn_topic_id, 1));
    return 1;
}
