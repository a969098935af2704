/*
 * expire.c: model/actions/brokers.py broker_expire -- a running broker's ZooKeeper session
 * expires -- and model/actions/commands.py reject_leader_and_isr -- a broker refuses a stale
 * LeaderAndISR.  Each function is named after the Python one it ports, read that one for
 * the why.
 */
#include "state.h"

/* broker_expire: its registration (and /controller, if it held it) vanishes and the
 * controller's broker-change event no longer shows it; the process keeps every role it had */
int broker_expire(S *s, int b) {
    if (s->br[b].status != UP || !has(s->live, b) || s->expiries >= C.max_expiries) return 0;
    deregister(s, b);
    s->expiries++;
    return 1;
}

/* reject_leader_and_isr: a running broker refuses a request stale_reason names, but for a
 * repetition of the decision its replica holds (taken silently) -- a self-loop (nothing
 * changes), so no search takes it; main.c's rejects mode answers it for the tests */
int reject_leader_and_isr(S *s, Lai m) {
    return s->br[(int)m.to].status == UP && stale_reason(s, &m) != 0 && !repeats_held_decision(s, &m);
}
