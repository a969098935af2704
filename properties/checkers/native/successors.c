/*
 * successors.c: the successors of a state, in model.actions.EXPLORED order (the order of
 * model.actions.SECTIONS, each action's arguments in its Python *_args order), self-loops
 * omitted.  The rules themselves are rules.c's and the units it names.
 */
#include "state.h"

int differs(const Expanding *x, const S *t) {
    u8 buf[MAXENC];
    int n = encode(t, IDENTITY, buf);
    return n != x->enclen || memcmp(buf, x->enc, (size_t)n) != 0;
}

/* restarts_args: with Kafka's start, each HW its checkpoint may hold, up to the highest its
 * replicas have */
static int highest_hw(const Broker *br) {
    int h = 0;
    for (int p = 0; p < C.partition_ids; p++)
        if (br->rp[p].hw > h) h = br->rp[p].hw;
    return h;
}

void successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    int n = C.brokers, np = C.partition_ids, c = s->controller;
    S t;
    for (int b = 0; b < n; b++) TRY(broker_crash(&t, b));
    for (int b = 0; b < n; b++)
        for (int h = C.startup_from_controller ? 0 : -1; h <= (C.startup_from_controller ? highest_hw(&s->br[b]) : -1); h++)
            TRY(broker_restart(&t, b, h));
    for (int b = 0; b < n; b++) TRY(broker_pause(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_resume(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_reregister(&t, b));
    if (s->expiries < C.max_expiries)
        for (int b = 0; b < n; b++) TRY(broker_expire(&t, b));
    for (int b = 0; b < n; b++) TRY(controller_elect(&t, b));
    for (int b = 0; b < n; b++) TRY(controller_resign(&t, b));
    if (c != NO_LEADER) {
        for (int p = 0; p < np; p++) { /* elections_args */
            Outcome out[MAXB + 1];
            int k = election_outcomes(s, p, out);
            for (int i = 0; i < k; i++) TRY(elect_leader(&t, c, p, out[i].leader));
            for (int r = 0; r < n; r++) TRY(offline_replica_write(&t, c, p, r));
        }
        for (int b = 0; b < n; b++)
            if (has(s->br[c].new_brokers, b)) TRY(on_broker_startup(&t, c, b));
        int args[MAXP * MAXB * MAXB][3];
        int k = shutdowns_args(s, args);
        for (int i = 0; i < k; i++) TRY(controlled_shutdown(&t, c, args[i][0], args[i][1], args[i][2]));
    }
    for (int b = 0; b < n; b++) TRY(broker_stop(&t, b));
    for (int i = 0; i < s->nlai; i++) TRY(become_leader(&t, s->lai[i]));
    for (int i = 0; i < s->nlai; i++) TRY(become_follower(&t, s->lai[i]));
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++) TRY(truncate_log(&t, b, p));
    for (int b = 0; b < n; b++) /* with_holds: each step, then held by each follower */
        for (int p = 0; p < np; p++)
            for (int h = NO_HOLD; h < (C.hw_waits_outside_isr ? n : 0); h++) TRY(produce(&t, b, p, h));
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++) TRY(send_fetch(&t, b, p));
    for (int i = 0; i < s->nfetch; i++)
        for (int h = NO_HOLD; h < (C.hw_waits_outside_isr && s->fetch[i].kind == FETCH_REQUEST ? n : 0); h++)
            TRY(handle_fetch_held(&t, s->fetch[i], h));
    for (int i = 0; i < s->nfetch; i++) TRY(receive_fetch(&t, s->fetch[i]));
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++)
            for (int f = 0; f < n; f++)
                if (f != b) TRY(shrink_isr(&t, b, p, f));
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++)
            for (int f = 0; f < n; f++)
                if (f != b) TRY(expand_isr(&t, b, p, f));
    for (int b = 0; b < n; b++)
        for (int p = 0; p < np; p++) TRY(isr_update_failed(&t, b, p));
    if (C.reassignments && c != NO_LEADER) reassign_successors(x, emit, ctx);
    for (int i = 0; i < s->nstop; i++) TRY(stop_replica(&t, s->stop[i]));
    if (C.deletions && c != NO_LEADER) topic_successors(x, emit, ctx);
    if (c != NO_LEADER && s->preferred_elections < C.preferred_elections)
        for (int p = 0; p < np; p++) TRY(preferred_election(&t, c, p));
    if (c != NO_LEADER && s->partition_changes < C.partition_changes) partition_successors(x, emit, ctx);
    if (C.alter_partition) alter_successors(x, emit, ctx);
}
