/*
 * step.c: one named step of the model, taken by rules.c's own action functions -- the trace
 * judge's step (conformance/judge/compiled.py), through properties/checkers/native_step.py.
 *
 * The search enumerates every step of a state (rules.c successors); the judge instead asks
 * for the step an event names: an action and its arguments, as model.registry's Step holds
 * them.  take_step dispatches to the same function successors calls, then forgets the
 * requests it made stale (as model.registry.apply does); it adds no rule of its own.  The
 * arguments are ints: broker ids, a partition (always 0 here), an assignment as a bit set,
 * and a message (LeaderAndISR, fetch, StopReplica, AlterPartition) as its index in the state's
 * sorted set; a missing hold, checkpointed HW or offline replica as -1.
 *
 * Built into the search binary too (the dispatch is harmless there); with EPOCHAL_LIBRARY it
 * also defines the configuration and die() that main.c defines for the binary, so that the
 * same units build a shared library: die() then returns an error to the caller instead of
 * exiting the judge's process.
 */
#include <setjmp.h>

#include "state.h"

enum { STEP_NO = 0, STEP_YES = 1, STEP_UNKNOWN = -2 };
enum { NO_OFFLINE = -1 }; /* elect_leader's offline argument absent (model.actions.controller) */

static int in_range(int i, int n) { return i >= 0 && i < n; }

/* a set of brokers as bits: non-empty, of this configuration's brokers */
static int brokers_set(int bits) { return bits > 0 && bits < 1 << C.brokers; }

/* a hold argument: NO_HOLD, or a broker */
static int holder(int h) { return h == NO_HOLD || in_range(h, C.brokers); }

/* elect_leader with its offline argument: Kafka's write of dead replica r out of the ISR,
 * which leaves the leader ``leader`` (the model's check that its leader argument is so) */
static int offline_write(S *s, int c, int leader, int r) {
    int left = s->zn_leader == r ? NO_LEADER : s->zn_leader;
    return left == leader && offline_replica_write(s, c, 0, r);
}

/* The action named ``action`` with its int arguments, taken in place on *s: STEP_YES,
 * STEP_NO when its guard fails, STEP_UNKNOWN for an action or argument shape rules.c does
 * not run (the caller takes the Python model's step instead). */
static int take(S *s, const char *action, const int *a, int n) {
    /* (the first letter compared inline: most names differ there, and the judge asks often) */
#define IS(name, arity) (action[0] == (name)[0] && strcmp(action, name) == 0 && n == (arity))
    /* a message: its index a[0] in the state's set, checked first */
    int i = n > 0 ? a[0] : -1;
    if (IS("become_leader", 1)) return in_range(i, s->nlai) ? become_leader(s, s->lai[i]) : STEP_UNKNOWN;
    if (IS("become_follower", 1)) return in_range(i, s->nlai) ? become_follower(s, s->lai[i]) : STEP_UNKNOWN;
    if (IS("receive_fetch", 1)) return in_range(i, s->nfetch) ? receive_fetch(s, s->fetch[i]) : STEP_UNKNOWN;
    if (IS("stop_replica", 1)) return in_range(i, s->nstop) ? stop_replica(s, s->stop[i]) : STEP_UNKNOWN;
    if (IS("apply_isr", 1)) return in_range(i, s->nalter) ? apply_isr(s, s->alter[i]) : STEP_UNKNOWN;
    if (IS("reject_leader_and_isr", 1))
        return in_range(i, s->nlai) ? reject_leader_and_isr(s, s->lai[i]) : STEP_UNKNOWN;
    if (IS("handle_fetch", 2))
        return in_range(i, s->nfetch) && holder(a[1]) ? handle_fetch_held(s, s->fetch[i], a[1]) : STEP_UNKNOWN;
    int b = n > 0 ? a[0] : -1;
    if (n > 0 && !in_range(b, C.brokers)) return STEP_UNKNOWN;
    if (IS("alter_partition", 2)) /* (controller, the request's index) */
        return in_range(a[1], s->nalter) ? alter_partition(s, b, s->alter[a[1]]) : STEP_UNKNOWN;
    if (IS("broker_crash", 1)) return broker_crash(s, b);
    if (IS("broker_expire", 1)) return broker_expire(s, b);
    if (IS("broker_restart", 2)) return a[1] >= -1 ? broker_restart(s, b, a[1]) : STEP_UNKNOWN;
    if (IS("broker_pause", 1)) return broker_pause(s, b);
    if (IS("broker_resume", 1)) return broker_resume(s, b);
    if (IS("broker_reregister", 1)) return broker_reregister(s, b);
    if (IS("controller_elect", 1)) return controller_elect(s, b);
    if (IS("controller_resign", 1)) return controller_resign(s, b);
    if (IS("broker_stop", 1)) return broker_stop(s, b);
    if (IS("elect_leader", 3)) {
        if (a[2] == NO_OFFLINE) return elect_leader(s, b, 0, a[1]);
        return in_range(a[2], C.brokers) ? offline_write(s, b, a[1], a[2]) : STEP_UNKNOWN;
    }
    if (IS("on_broker_startup", 2)) return in_range(a[1], C.brokers) && on_broker_startup(s, b, a[1]);
    if (IS("controlled_shutdown", 3))
        return in_range(a[1], C.brokers) && controlled_shutdown(s, b, 0, a[1], a[2]);
    if (IS("truncate", 1)) return truncate_log(s, b, 0);
    if (IS("produce", 2)) return holder(a[1]) ? produce(s, b, 0, a[1]) : STEP_UNKNOWN;
    if (IS("send_fetch", 1)) return send_fetch(s, b, 0);
    if (IS("isr_update_failed", 1)) return isr_update_failed(s, b, 0);
    if (IS("shrink_isr", 2)) return in_range(a[1], C.brokers) && shrink_isr(s, b, 0, a[1]);
    if (IS("expand_isr", 2)) return in_range(a[1], C.brokers) && expand_isr(s, b, 0, a[1]);
    if (IS("propose_isr", 2)) return in_range(a[1], C.brokers) && propose_isr(s, b, 0, a[1]);
    if (IS("delete_topic", 1)) return delete_topic(s, b);
    if (IS("create_topic", 3))
        return brokers_set(a[1]) ? in_range(a[2], C.brokers) && create_topic(s, b, (u8)a[1], a[2]) : STEP_UNKNOWN;
    if (IS("reassign_start", 2)) return brokers_set(a[1]) ? reassign_start(s, b, (u8)a[1]) : STEP_UNKNOWN;
    if (IS("reassign_complete", 2)) return in_range(a[1], C.brokers) && reassign_complete(s, b, a[1]);
    if (IS("preferred_election", 1)) return preferred_election(s, b, 0);
#undef IS
    return STEP_UNKNOWN;
}

/* model.registry.apply: the step, then the requests it made stale forgotten */
int take_step(S *s, const char *action, const int *args, int nargs) {
    int done = take(s, action, args, nargs);
    if (done == STEP_YES) forget_stale_requests(s);
    return done;
}

#ifdef EPOCHAL_LIBRARY
Cfg C;
jmp_buf step_failed; /* also judge.c's: a rule's die() returns to its caller */

void die(const char *msg) {
    (void)msg;
    longjmp(step_failed, 1);
}

/* Whether every int of an encoding fits the state's i8 fields (byte v + 2 <= 129) */
static int fits(const u8 *enc, int len) {
    for (int i = 0; i < len; i++)
        if (enc[i] > 129) return 0;
    return 1;
}

/* The library's entry point: the configuration (the Cfg fields in order), a state's
 * encoding, and the step.  Returns the successor's encoding length (written to out, at most
 * cap bytes), 0 when the guard fails, STEP_UNKNOWN for a step rules.c does not take, and -1
 * for a state this build cannot hold (an array overflowed, a value out of range): the caller
 * then takes the Python model's step. */
int epochal_step(const int *cfg, const u8 *enc, int len, const char *action, const int *args, int nargs,
                 u8 *out, int cap) {
    static S s;
    memcpy(&C, cfg, sizeof C);
    if (!fits(enc, len)) return -1;
    if (setjmp(step_failed)) return -1;
    decode(enc, len, &s);
    int done = take_step(&s, action, args, nargs);
    if (done != STEP_YES) return done;
    u8 buf[MAXENC];
    int n = encode(&s, IDENTITY, buf);
    if (n > cap || !fits(buf, n)) return -1; /* a counter past 127 wrapped */
    memcpy(out, buf, (size_t)n);
    return n;
}

int epochal_caps(void) { return MAXREC; }
#endif
