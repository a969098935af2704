/*
 * alter_partition.c: model/actions/controller_isr.py -- ISR changes through the controller
 * (KIP-497's AlterPartition, KIP-841's eligibility): the leader proposes, the acting
 * controller validates and writes, the leader applies the answer -- and the maximal ISR its
 * HW waits for meanwhile (model/actions/replication.py maximal_isr).  Each
 * function is named after the Python one it ports, read that one for the why.
 */
#include "state.h"

/* model.state's answers (OK is the fetches' 0) */
enum { FENCED_LEADER_EPOCH = 2, INVALID_UPDATE_VERSION = 3, INELIGIBLE_REPLICA = 4, STALE_BROKER_EPOCH = 5, UNKNOWN_TOPIC_ID = 6 };

/* ---------------------------------------------------------------------------------------
 * The messages in flight (a set, as model.state keeps it)
 * ------------------------------------------------------------------------------------- */

static void add_alter(S *s, Alter m) { SET_ADD(s->alter, s->nalter, MAXALTER, m); }

static int find_alter(const S *s, const Alter *m) {
    for (int i = 0; i < s->nalter; i++)
        if (memcmp(&s->alter[i], m, sizeof(Alter)) == 0) return i;
    return -1;
}

static void remove_alter_at(S *s, int i) {
    memmove(&s->alter[i], &s->alter[i + 1], sizeof(Alter) * (size_t)(s->nalter - i - 1));
    s->nalter--;
    memset(&s->alter[s->nalter], 0, sizeof(Alter));
}

/* ---------------------------------------------------------------------------------------
 * model/actions/replication.py: the ISR the leader's HW waits for
 * ------------------------------------------------------------------------------------- */

/* maximal_isr: the leader's ISR and, while a proposal of its epoch is unanswered, the ISR it proposed */
u8 maximal_isr(const S *s, int b, int p) {
    const Replica *r = &s->br[b].rp[p];
    u8 isr = r->isr;
    for (int i = 0; i < s->nalter; i++) {
        const Alter *m = &s->alter[i];
        if (m->leader == b && m->partition == p && m->leader_epoch == r->leader_epoch) isr |= m->isr;
    }
    return isr;
}

/* isr_least_leo: where seed 000 G puts the HW, the least LEO of the maximal ISR */
int isr_least_leo(const S *s, int b, int p) {
    const Replica *r = &s->br[b].rp[p];
    u8 isr = maximal_isr(s, b, p);
    int least = 1000;
    for (int x = 0; x < C.brokers; x++)
        if (has(isr, x)) {
            int leo = x == b ? r->loglen : r->follower_leo[x];
            if (leo < least) least = leo;
        }
    return least;
}

/* ---------------------------------------------------------------------------------------
 * model/actions/controller_isr.py
 * ------------------------------------------------------------------------------------- */

/* pending: leader b has a proposal of its current leader epoch unanswered (or unread) */
static int pending(const S *s, int b, int p) {
    int epoch = s->br[b].rp[p].leader_epoch;
    for (int i = 0; i < s->nalter; i++)
        if (s->alter[i].leader == b && s->alter[i].partition == p && s->alter[i].leader_epoch == epoch) return 1;
    return 0;
}

int propose_isr(S *s, int b, int p, int f) {
    if (!C.alter_partition || pending(s, b, p)) return 0;
    const Replica *lr = &s->br[b].rp[p];
    u8 isr;
    if (out_of_sync(s, b, p, f))
        isr = lr->isr & (u8)~(1 << f);
    else if (caught_up(s, b, p, f))
        isr = lr->isr | (u8)(1 << f);
    else
        return 0;
    Alter m;
    memset(&m, 0, sizeof m);
    m.kind = ALTER_REQUEST;
    m.leader = (i8)b;
    m.partition = (i8)p;
    m.leader_epoch = lr->leader_epoch;
    m.isr = isr;
    m.zk_version = lr->zk_version;
    m.broker_epoch = s->br[b].broker_epoch;
    m.error = OK;
    m.topic_id = lr->topic_id;
    add_alter(s, m);
    return 1;
}

/* refusal: why the controller refuses proposal m, in KafkaController.processAlterPartition's order */
static int refusal(const S *s, const Alter *m) {
    if (!has(s->live, m->leader) || s->broker_epochs[(int)m->leader] != m->broker_epoch) return STALE_BROKER_EPOCH;
    const Zn *zn = &s->zn[(int)m->partition];
    if (!zn->ar || (C.topic_ids && m->topic_id != zn->topic_id)) return UNKNOWN_TOPIC_ID;
    if (m->leader_epoch != zn->leader_epoch) return FENCED_LEADER_EPOCH;
    if (m->isr == zn->isr) return OK; /* already so: answered with the znode as it is */
    if (m->zk_version != zn->zk_version) return INVALID_UPDATE_VERSION;
    u8 eligible = zn->ar & s->live & (u8)~shutting_down(s); /* KIP-841 */
    if (m->isr & (u8)~eligible) return INELIGIBLE_REPLICA;
    return OK;
}

int alter_partition(S *s, int c, Alter m) {
    int i = find_alter(s, &m);
    if (m.kind != ALTER_REQUEST || i < 0 || !acting_controller(s, c)) return 0;
    remove_alter_at(s, i);
    Alter answer = m;
    answer.kind = ALTER_RESPONSE;
    int error = refusal(s, &m);
    if (error != OK) {
        answer.error = (i8)error; /* the proposal echoed */
    } else {
        Zn *zn = &s->zn[(int)m.partition];
        if (m.isr != zn->isr) {
            zn->isr = m.isr;
            zn->zk_version++;
        }
        answer.isr = zn->isr;
        answer.zk_version = zn->zk_version;
    }
    add_alter(s, answer);
    return 1;
}

int apply_isr(S *s, Alter m) {
    int b = m.leader, p = m.partition, i = find_alter(s, &m);
    if (m.kind != ALTER_RESPONSE || i < 0 || s->br[b].status != UP) return 0;
    remove_alter_at(s, i);
    Replica *r = &s->br[b].rp[p];
    if (r->role != LEADER || m.error != OK || m.leader_epoch != r->leader_epoch || m.zk_version <= r->zk_version ||
        (C.topic_ids && m.topic_id != r->topic_id))
        return 1; /* only the wait ends */
    r->isr = m.isr;
    r->zk_version = m.zk_version;
    advance_hw_to(s, b, p, -1);
    return 1;
}

/* The three actions' successors, in registry order (after every other action's) */
void alter_successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    S t;
    for (int b = 0; b < C.brokers; b++) /* isr_changes_args */
        for (int p = 0; p < C.partition_ids; p++)
            for (int f = 0; f < C.brokers; f++)
                if (f != b) TRY(propose_isr(&t, b, p, f));
    if (s->controller != NO_LEADER) /* requests_args */
        for (int i = 0; i < s->nalter; i++)
            if (s->alter[i].kind == ALTER_REQUEST) TRY(alter_partition(&t, s->controller, s->alter[i]));
    for (int i = 0; i < s->nalter; i++) /* answers_args */
        if (s->alter[i].kind == ALTER_RESPONSE) TRY(apply_isr(&t, s->alter[i]));
}
