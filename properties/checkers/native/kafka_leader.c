/*
 * kafka_leader.c: the HW rule of Kafka's leader (model.config.KAFKA_BROKER's
 * hw_waits_outside_isr; model/actions/replication.py held_at, advance_hw_held): a live
 * assigned follower outside the ISR that has caught up within replica.lag.time.max.ms may
 * hold the HW advance a produce or a fetch makes.  Kafka's other broker rules are a line or
 * two each where the rule they change lives (rules.c): the broker start that waits for the
 * controller (broker_restart, stale_reason), the elections alone where the controller's
 * own writes take dead replicas out of the ISR (election_outcomes) and the followers' fetch
 * state a leader keeps across its own new epochs (become_leader).  Kafka's controller taking
 * a dead replica offline is here (offline_replica_write).
 */
#include "state.h"

/* held_at: the offset follower hold holds leader b's HW at, or -1 where it holds nothing back */
static int held_at(const S *s, int b, int p, int hold) {
    const Replica *r = &s->br[b].rp[p];
    if (!C.hw_waits_outside_isr || hold == b || !has(s->zn[p].ar, hold) || !has(s->live, hold)) return -1;
    int leo = r->follower_leo[hold], unheld = isr_least_leo(s, b, p);
    if (has(maximal_isr(s, b, p), hold) || leo == UNKNOWN || leo >= unheld || unheld <= r->hw) return -1;
    return leo;
}

/* advance_hw_held: advance_hw, held by follower hold (unless NO_HOLD); 0 if hold cannot hold it */
int advance_hw_held(S *s, int b, int p, int hold) {
    if (hold == NO_HOLD) {
        advance_hw_to(s, b, p, -1);
        return 1;
    }
    int cap = held_at(s, b, p, hold);
    if (cap < 0) return 0;
    advance_hw_to(s, b, p, cap);
    return 1;
}

/* offline_replica_write (model.actions.controller, Config.offline_replica_writes): Kafka's
 * controller taking dead ISR member r offline by a write of its own -- elect_leader with its
 * offline argument -- and, in a reassignment's phases, a removed one dead or alive
 * (removal_owed).  The leader it writes is -1 if r led, else the leader as it is; the ISR
 * loses r unless r is its only member (the ISR never becomes empty); leader epoch + 1. */
int offline_replica_write(S *s, int c, int p, int r) {
    const Zn *zn = &s->zn[p];
    if (!acting_controller(s, c)) return 0;
    if (zn->leader_epoch + 1 > C.max_epoch) return 0;
    if (!C.offline_replica_writes || !zn->ar || !has(zn->isr, r)) return 0;
    if (has(s->live, r) && !(removal_owed(zn) && !has(zn->rar, r))) return 0; /* offline_replicas */
    int leader = zn->leader == r ? NO_LEADER : zn->leader;
    u8 isr = popcount8(zn->isr) == 1 ? zn->isr : (u8)(zn->isr & ~(1 << r));
    if (removal_owed(zn)) end_reassignment(s, p, isr);
    write_and_send(s, p, leader, isr);
    return 1;
}
