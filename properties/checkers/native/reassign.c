/*
 * reassign.c: model/actions/reassignment.py -- the Reassignment Agent's start of a
 * reassignment (seed 000 F, INIT) and its completion (IN_PROGRESS: RAR in the ISR) -- and
 * what a reassignment's StopReplica leaves of a replica (model/actions/common.py
 * deleted_replica; shutdown.c's stop_replica takes it).  Each partition id is reassigned on
 * its own; the AR and RAR are sets of brokers, as the model's sorted tuples are.  Each
 * function is named after the Python one it ports, read that one for the why.
 */
#include "state.h"

/* deleted_replica: the log and HW go; the highest leader epoch seen and the topic id stay */
void deleted_replica(Replica *r) {
    int epoch = r->leader_epoch, topic_id = r->topic_id;
    topic_deleted(r, topic_id);
    r->role = NONE;
    r->leader_epoch = (i8)epoch;
}

/* reassign_starts_args: p's pending RAR again, or -- within the bound -- every non-empty
 * replica set, by increasing bit mask (the order of the Python enumeration) */
int reassign_starts_args(const S *s, int p, u8 rars[]) {
    if (s->controller == NO_LEADER) return 0;
    if (s->zn[p].rar) {
        rars[0] = s->zn[p].rar;
        return 1;
    }
    if (s->reassignments >= C.reassignments) return 0;
    int n = 0;
    for (int mask = 1; mask < 1 << C.brokers; mask++) rars[n++] = (u8)mask;
    return n;
}

/* stop_removed_replicas: StopReplica (delete) with leader_epoch to each live broker of
 * removed -- no channel to a broker down */
static void stop_removed_replicas(S *s, int p, u8 removed, int leader_epoch) {
    for (int b = 0; b < C.brokers; b++)
        if (has(removed & s->live, b)) add_stop(s, make_stop(b, p, leader_epoch, s->controller_epoch, s->zn[p].topic_id, 1));
}

/* LeaderAndISR of p's znode as it is now to every member of to */
static void send_znode(S *s, int p, u8 to) {
    const Zn *zn = &s->zn[p];
    int mbe = max_broker_epoch(s);
    for (int b = 0; b < C.brokers; b++)
        if (has(to, b)) add_lai(s, make_lai(b, p, zn->leader, zn->leader_epoch, zn->isr, zn->zk_version, s->controller_epoch, mbe, zn->topic_id));
}

/* _kafka_start (Config.reassign_phases): AR := AR + RAR; unless the target is all in the
 * ISR already, the leader's epoch bumped for the same leader and ISR, sent to AR + RAR (the
 * epoch bound is reassign_start_of's guard) */
static void kafka_start(S *s, int p, u8 rar) {
    Zn *zn = &s->zn[p];
    int bump = (rar & (u8)~zn->isr) != 0;
    zn->ar |= rar;
    zn->rar = rar;
    if (!bump) return;
    zn->leader_epoch++;
    zn->zk_version++;
    send_znode(s, p, zn->ar);
}

/* reassign_start: AR := AR + RAR in the topic path (the leaderAndISR znode and its version
 * stay), LeaderAndISR of the znode as it is to every member of RAR */
int reassign_start_of(S *s, int c, int p, u8 rar) {
    Zn *zn = &s->zn[p];
    if (!acting_controller(s, c) || !rar || (rar >> C.brokers)) return 0;
    if (!zn->ar) return 0; /* the topic is deleted */
    if (C.reassign_phases && (rar & (u8)~zn->isr) && zn->leader_epoch + 1 > C.max_epoch) return 0;
    if (!zn->rar) {
        if (s->reassignments >= C.reassignments) return 0;
        s->reassignments++;
    } else if (zn->rar != rar) {
        return 0;
    }
    if (C.reassign_phases) {
        kafka_start(s, p, rar);
        return 1;
    }
    zn->ar |= rar;
    zn->rar = rar;
    send_znode(s, p, rar);
    return 1;
}

/* reassign_complete: once RAR is in the ISR, a conditional write of leader (a live member of
 * RAR not shutting down, the current leader if it is one) and leader_epoch + 1; then
 * seed 000 F's: ISR ∩ RAR, AR := RAR, no RAR, LeaderAndISR to RAR and StopReplica (delete) to
 * the live replicas removed.  With Config.reassign_phases the ISR stays, and while a removed
 * replica is in it the move stays pending too (removal_owed: rules.c's elect_leader ends it) */
int reassign_complete_of(S *s, int c, int p, int leader) {
    Zn *zn = &s->zn[p];
    if (!acting_controller(s, c)) return 0;
    u8 rar = zn->rar;
    if (!rar || (rar & ~zn->isr) || zn->leader_epoch + 1 > C.max_epoch) return 0;
    u8 live_rar = rar & s->live & (u8)~shutting_down(s);
    if (!has(live_rar, leader) || (has(live_rar, zn->leader) && leader != zn->leader)) return 0;
    int owed = C.reassign_phases && (zn->isr & (u8)~rar);
    u8 removed = zn->ar & (u8)~rar;
    zn->leader = (i8)leader;
    zn->leader_epoch++;
    zn->zk_version++;
    if (!owed) {
        if (!C.reassign_phases) zn->isr &= rar;
        zn->ar = rar;
        zn->rar = 0;
    }
    send_znode(s, p, rar);
    if (!owed) stop_removed_replicas(s, p, removed, zn->leader_epoch);
    return 1;
}

/* removal_owed (model/actions/controller.py, Config.reassign_phases): p's move has its target
 * in the ISR and leading, and removed replicas still in the ISR to take out */
int removal_owed(const Zn *zn) {
    return C.reassign_phases && zn->rar && has(zn->rar, zn->leader) && !(zn->rar & (u8)~zn->isr) && (zn->isr & (u8)~zn->rar);
}

/* end_reassignment: the write of isr that takes the last removed replica out of p's ISR ends
 * the move -- AR := RAR, StopReplica (delete) to the live replicas removed, with the epoch
 * of that write (write_and_send's, about to be made) */
void end_reassignment(S *s, int p, u8 isr) {
    Zn *zn = &s->zn[p];
    if (isr & (u8)~zn->rar) return;
    u8 removed = zn->ar & (u8)~zn->rar;
    zn->ar = zn->rar;
    zn->rar = 0;
    stop_removed_replicas(s, p, removed, zn->leader_epoch + 1);
}

/* partition 0's, for the judge's step (step.c) */
int reassign_start(S *s, int c, u8 rar) { return reassign_start_of(s, c, 0, rar); }
int reassign_complete(S *s, int c, int leader) { return reassign_complete_of(s, c, 0, leader); }

/* reassign_starts_args, then reassign_completions_args, partition by partition */
void reassign_successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    int c = s->controller;
    S t;
    for (int p = 0; p < C.partition_ids; p++) {
        u8 rars[1 << MAXB];
        int k = reassign_starts_args(s, p, rars);
        for (int i = 0; i < k; i++) TRY(reassign_start_of(&t, c, p, rars[i]));
    }
    for (int p = 0; p < C.partition_ids; p++)
        for (int b = 0; b < C.brokers; b++)
            if (has(s->zn[p].rar & s->live & (u8)~shutting_down(s), b)) TRY(reassign_complete_of(&t, c, p, b));
}
