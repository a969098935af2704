/*
 * judge.c: the trace judge's search for a run of events, over C states -- the compiled twin
 * of conformance/judge/search.py's advance for the events it can take, through
 * conformance/judge/compiled_batch.py.
 *
 * The judge keeps the set of model states the system may be in; for each event it tries, in
 * every state, the observed action's steps by the observed broker, keeps those whose view
 * (model.registry, each action's ``view``) agrees with every field the event observed, and
 * drops none for a property: the new set is the matches, deduplicated and in order when
 * there are several.  When no state explains the event, it searches the silent internal
 * steps before it, the fewest first (iterative deepening, ``bound`` at most); before a
 * freezing event (a LeaderAndISR applied) it also keeps the matches after the victim's own
 * silent steps (search.py _before_freeze).  This file does that for the actions ACTION
 * names -- most events of a recorded run -- and *declines* an event whenever the answer
 * needs more: no step matches, a match breaks a property, a state or counter passes what
 * the C holds, a set of states passes its arrays.  Declining is never a verdict: the caller
 * judges that event with the Python judge, from the states as they were before it, and
 * goes on.
 *
 * An event is a row of ints (compiled_batch.py writes them): action, actor, the records a
 * fetch answer carried (its fetch_max_records, 0: the configuration's), the id of a
 * produced value, the number of fields, then each field as key, tag, length, payload.  A
 * value observed in a record is an id too: values[id] is the set of model values (bits) it
 * may be, as the Python judge's ``values`` map.
 */
#ifdef EPOCHAL_LIBRARY
#include <setjmp.h>
#include <stdlib.h>

#include "state.h"

extern jmp_buf step_failed; /* step.c: where a rule's die() returns */

enum { J_PRODUCE, J_SEND_FETCH, J_HANDLE_FETCH, J_RECEIVE_FETCH, J_NO_STEP, J_BECOME_LEADER, J_BECOME_FOLLOWER,
       J_BROKER_RESTART, J_CONTROLLER_ELECT, J_BROKER_CRASH, J_INIT, J_STOP_REPLICA, J_BROKER_STOP, J_TRUNCATE,
       J_EXPAND_ISR, J_CONTROLLED_SHUTDOWN, J_ELECT_LEADER };
enum { K_LEADER, K_FOLLOWER, K_FETCH_OFFSET, K_LEADER_EPOCH, K_POST_HW, K_POST_LEO, K_POST_ISR, K_OFFSET, K_ERROR,
       K_LEADER_HW, K_RECORDS, K_POST_ROLE, K_POST_LEADER, K_POST_LEADER_EPOCH, K_POST_LOG_END_EPOCH, K_ISR,
       K_ZK_VERSION, K_CONTROLLER_EPOCH, K_TRUNCATED_TO, K_UNCLEAN,
       K_INIT /* not a field: the partition's first leader, epoch, ISR, version and AR (bits) */, K_DELETE,
       K_CURRENT /* not a field: a replica's act renumbered as the current incarnation's */ };
/* a field's tag: an int (bools and whole floats included), None, a known string (its id),
 * a list of ints, a value equal to nothing a view holds, records (offset, epoch, value id)* */
enum { V_INT, V_NONE, V_STR, V_LIST, V_OTHER, V_RECORDS };
/* model.actions.views ERRORS, FENCED; then model.state ROLE_NAMES, role r as STR_ROLE + r */
enum { STR_OUT_OF_RANGE = 1, STR_FENCED = 2, STR_ROLE = 3 };

#define MAXFOUND 256            /* states kept after an event (the judge's limit at most) */
#define MAXFRONT (4 * MAXFOUND) /* states one level of internal steps may reach (limit * 4) */
#define ARENA (1 << 24)         /* encodings of an event's states */

/* a possible state: whether it assumes a step a kill -9 cut short, the state at the start of the
 * event it comes from (its index in cur), its encoding; loud: it may still take such a step */
typedef struct { S s; int spec, origin, len, loud; const u8 *enc; } Hyp;

static Hyp cur[MAXFOUND], found[MAXFOUND], level_a[MAXFRONT], level_b[MAXFRONT];
static int ncur, nfound;
static u8 cur_enc[MAXFOUND * MAXENC], arena[ARENA];
static int arena_used;
typedef struct { uint64_t fp; int spec, len; const u8 *enc; } Seen;
static Seen seen[2 * MAXFRONT + MAXFOUND];
static int nseen;

static int fits(const u8 *enc, int len) {
    u8 over = 0; /* every byte read, no early exit: the loop is then vectorized */
    for (int i = 0; i < len; i++) over |= enc[i] > 129;
    return !over;
}

/* s encoded into the arena as h's encoding; 0 when it does not fit (the event is declined) */
static int encode_into(Hyp *h) {
    if (arena_used + MAXENC > ARENA) return 0;
    u8 *at = arena + arena_used;
    h->len = encode(&h->s, IDENTITY, at);
    if (!fits(at, h->len)) return 0; /* a counter past what the C holds */
    h->enc = at;
    arena_used += h->len;
    return 1;
}

/* Add h to the seen set: 0 if it was there already */
static int see(const Hyp *h) {
    uint64_t fp = fingerprint(h->enc, h->len);
    for (int i = 0; i < nseen; i++) {
        const Seen *x = &seen[i];
        if (x->fp == fp && x->spec == h->spec && x->len == h->len && memcmp(x->enc, h->enc, (size_t)h->len) == 0)
            return 0;
    }
    if (nseen == (int)(sizeof seen / sizeof seen[0])) die("seen set overflow");
    seen[nseen++] = (Seen){fp, h->spec, h->len, h->enc};
    return 1;
}

/* Hypothesis order: the state's (its order-preserving encoding), then speculative */
static int by_state(const void *a, const void *b) {
    const Hyp *x = a, *y = b;
    int n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->enc, y->enc, (size_t)n);
    if (c) return c;
    if (x->len != y->len) return x->len - y->len;
    return x->spec - y->spec;
}

/* ---------------------------------------------------------------------------------------
 * Views (model.registry's, per action) and the observation's fields
 * ------------------------------------------------------------------------------------- */

/* A view's value for one key: a tag, an int, and a list */
typedef struct { int tag, v, n; int list[3 * MAXREC]; } Value;

static void as_int(Value *x, int v) { x->tag = V_INT; x->v = v; }
static void as_none(Value *x) { x->tag = V_NONE; }
static void as_str(Value *x, int id) { x->tag = V_STR; x->v = id; }
static void as_error(Value *x, int error) {
    if (error == OUT_OF_RANGE) as_str(x, STR_OUT_OF_RANGE); else as_none(x);
}
static void as_brokers(Value *x, u8 set) {
    x->tag = V_LIST; x->n = 0;
    for (int b = 0; b < MAXB; b++)
        if (has(set, b)) x->list[x->n++] = b;
}
static void as_records(Value *x, int offset, const Entry *log, int n) {
    x->tag = V_RECORDS; x->n = n;
    for (int i = 0; i < n; i++) {
        x->list[3 * i] = offset + i; x->list[3 * i + 1] = log[i].epoch; x->list[3 * i + 2] = log[i].value;
    }
}

/* The response a step answering m sent, if it sent one (model.actions.views new_response) */
static const Fetch *new_response(const S *before, const S *after, const Fetch *m) {
    for (int i = 0; i < after->nfetch; i++) {
        const Fetch *x = &after->fetch[i];
        if (x->kind != FETCH_RESPONSE || x->follower != m->follower || x->leader != m->leader) continue;
        int old = 0;
        for (int j = 0; j < before->nfetch && !old; j++) old = memcmp(&before->fetch[j], x, sizeof *x) == 0;
        if (!old) return x;
    }
    return NULL;
}

/* The step's message: a fetch (handle_fetch, receive_fetch), a LeaderAndISR (become_*) or a
 * StopReplica (stop_replica); or the follower an ISR expansion adds */
typedef struct { Fetch fetch; Lai lai; Stop stop; int follower; } Message;

static int produce_view(const S *after, int b, int key, Value *x) {
    const Replica *r = &after->br[b].r;
    switch (key) {
    case K_OFFSET: as_int(x, r->loglen - 1); return 1;
    case K_LEADER_EPOCH: as_int(x, r->log[r->loglen - 1].epoch); return 1;
    case K_POST_HW: as_int(x, r->hw); return 1;
    case K_POST_LEO: as_int(x, r->loglen); return 1;
    }
    return 0;
}

static int send_fetch_view(const S *before, int f, int key, Value *x) {
    const Replica *r = &before->br[f].r;
    switch (key) {
    case K_LEADER: as_int(x, r->leader); return 1;
    case K_FETCH_OFFSET: as_int(x, r->loglen); return 1;
    case K_LEADER_EPOCH: as_int(x, r->leader_epoch); return 1;
    case K_POST_HW: as_int(x, r->hw); return 1;
    case K_POST_LEO: as_int(x, r->loglen); return 1;
    }
    return 0;
}

static int handle_fetch_view(const Fetch *m, const S *before, const S *after, int key, Value *x) {
    const Replica *lr = &after->br[(int)m->leader].r;
    const Fetch *resp = key == K_ERROR || key == K_RECORDS || key == K_LEADER_HW ? new_response(before, after, m) : NULL;
    switch (key) {
    case K_FOLLOWER: as_int(x, m->follower); return 1;
    case K_FETCH_OFFSET: as_int(x, m->offset); return 1;
    case K_LEADER_EPOCH: as_int(x, lr->leader_epoch); return 1;
    case K_POST_HW: as_int(x, lr->hw); return 1;
    case K_POST_LEO: as_int(x, lr->loglen); return 1;
    case K_POST_ISR: as_brokers(x, lr->isr); return 1;
    case K_ERROR:
        if (resp == NULL) as_str(x, STR_FENCED); else as_error(x, resp->error);
        return 1;
    case K_RECORDS:
        if (resp == NULL) as_records(x, m->offset, NULL, 0); else as_records(x, m->offset, resp->rec, resp->nrec);
        return 1;
    case K_LEADER_HW:
        if (resp == NULL) as_none(x); else as_int(x, resp->hw);
        return 1;
    }
    return 0;
}

static int receive_fetch_view(const Fetch *m, const S *before, const S *after, int key, Value *x) {
    const Replica *rb = &before->br[(int)m->follower].r, *ra = &after->br[(int)m->follower].r;
    switch (key) {
    case K_LEADER: as_int(x, m->leader); return 1;
    case K_FETCH_OFFSET: as_int(x, m->offset); return 1;
    case K_LEADER_EPOCH: as_int(x, ra->leader_epoch); return 1;
    case K_RECORDS: {
        int kept = ra->loglen >= rb->loglen && memcmp(ra->log, rb->log, sizeof(Entry) * (size_t)rb->loglen) == 0;
        if (kept) as_records(x, rb->loglen, ra->log + rb->loglen, ra->loglen - rb->loglen);
        else as_records(x, rb->loglen, NULL, 0);
        return 1;
    }
    case K_LEADER_HW: as_int(x, m->hw); return 1;
    case K_ERROR: as_error(x, m->error); return 1;
    case K_POST_HW: as_int(x, ra->hw); return 1;
    case K_POST_LEO: as_int(x, ra->loglen); return 1;
    }
    return 0;
}

/* become_leader, become_follower: the request, and the replica after it (commands.py
 * _request_view, views.py replica_view) */
static int request_view(const Lai *m, const S *after, int key, Value *x) {
    const Replica *r = &after->br[(int)m->to].r;
    switch (key) {
    case K_POST_ROLE: as_str(x, STR_ROLE + r->role); return 1;
    case K_POST_LEADER: as_int(x, r->leader); return 1;
    case K_POST_LEADER_EPOCH: as_int(x, r->leader_epoch); return 1;
    case K_POST_HW: as_int(x, r->hw); return 1;
    case K_POST_LEO: as_int(x, r->loglen); return 1;
    case K_POST_LOG_END_EPOCH:
        if (r->loglen) as_int(x, r->log[r->loglen - 1].epoch); else as_none(x);
        return 1;
    case K_POST_ISR: as_brokers(x, r->isr); return 1;
    case K_LEADER: as_int(x, m->leader); return 1;
    case K_LEADER_EPOCH: as_int(x, m->leader_epoch); return 1;
    case K_ISR: as_brokers(x, m->isr); return 1;
    case K_ZK_VERSION: as_int(x, m->zk_version); return 1;
    case K_CONTROLLER_EPOCH: as_int(x, m->controller_epoch); return 1;
    case K_TRUNCATED_TO: as_int(x, r->loglen); return 1;
    }
    return 0;
}

/* The partition's first leader and ISR written (search.py init_partition, init_view) */
static int init_partition(S *s, int c, const int *p) {
    if (s->zn_leader_epoch != -1 || s->controller != c || s->br[c].status != UP || !s->br[c].is_controller) return 0;
    s->zn_leader = (i8)p[0];
    s->zn_leader_epoch = (i8)p[1];
    s->zn_isr = (u8)p[2];
    s->zn_zk_version = (i8)p[3];
    s->zn_ar = (u8)p[4];
    s->zn_rar = 0;
    s->zn_topic_id = 0;
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(s->zn_ar, to)) add_lai(s, make_lai(to, 0, p[0], p[1], (u8)p[2], p[3], s->controller_epoch, mbe, 0));
    forget_stale_requests(s);
    return 1;
}

/* commands.py _truncate_view: the leader it followed, the LEO it cut to */
static int truncate_view(const S *before, const S *after, int f, int key, Value *x) {
    switch (key) {
    case K_LEADER: as_int(x, before->br[f].r.leader); return 1;
    case K_TRUNCATED_TO: as_int(x, after->br[f].r.loglen); return 1;
    }
    return 0;
}

/* replication.py _isr_change_view: the follower added, the ISR written and its version */
static int isr_change_view(const S *after, int follower, int key, Value *x) {
    switch (key) {
    case K_FOLLOWER: as_int(x, follower); return 1;
    case K_ISR: as_brokers(x, after->zn_isr); return 1;
    case K_ZK_VERSION: as_int(x, after->zn_zk_version); return 1;
    }
    return 0;
}

/* views.py znode_view: a controller's write of the partition znode */
static int znode_view(const S *before, const S *after, int key, Value *x) {
    switch (key) {
    case K_LEADER: as_int(x, after->zn_leader); return 1;
    case K_LEADER_EPOCH: as_int(x, after->zn_leader_epoch); return 1;
    case K_ISR: as_brokers(x, after->zn_isr); return 1;
    case K_ZK_VERSION: as_int(x, after->zn_zk_version); return 1;
    case K_CONTROLLER_EPOCH: as_int(x, after->controller_epoch); return 1;
    case K_UNCLEAN: as_int(x, (after->unclean & 1) && !(before->unclean & 1)); return 1;
    }
    return 0;
}

static int init_view(const S *after, int key, Value *x) {
    switch (key) {
    case K_LEADER: as_int(x, after->zn_leader); return 1;
    case K_LEADER_EPOCH: as_int(x, after->zn_leader_epoch); return 1;
    case K_ISR: as_brokers(x, after->zn_isr); return 1;
    case K_ZK_VERSION: as_int(x, after->zn_zk_version); return 1;
    case K_CONTROLLER_EPOCH: as_int(x, after->controller_epoch); return 1;
    case K_UNCLEAN: as_int(x, 0); return 1;
    }
    return 0;
}

/* The view's value of key for the step from before to after; 0 when the view has no such
 * key (the field is then not compared, as observation.py mismatch does) */
static int view(int action, int actor, const Message *m, const S *before, const S *after, int key, Value *x) {
    switch (action) {
    case J_PRODUCE: return produce_view(after, actor, key, x);
    case J_SEND_FETCH: return send_fetch_view(before, actor, key, x);
    case J_HANDLE_FETCH: return handle_fetch_view(&m->fetch, before, after, key, x);
    case J_RECEIVE_FETCH: return receive_fetch_view(&m->fetch, before, after, key, x);
    case J_BECOME_LEADER: case J_BECOME_FOLLOWER: return request_view(&m->lai, after, key, x);
    case J_INIT: return init_view(after, key, x);
    case J_TRUNCATE: return truncate_view(before, after, actor, key, x);
    case J_EXPAND_ISR: return isr_change_view(after, m->follower, key, x);
    case J_CONTROLLED_SHUTDOWN: case J_ELECT_LEADER: return znode_view(before, after, key, x);
    case J_CONTROLLER_ELECT:
        if (key != K_CONTROLLER_EPOCH) return 0;
        as_int(x, after->controller_epoch);
        return 1;
    case J_STOP_REPLICA: /* whether the replica was deleted (reassignment.py _stop_replica_view) */
        if (key != K_DELETE) return 0;
        as_int(x, m->stop.delete);
        return 1;
    }
    return 0; /* broker_restart, broker_crash, broker_stop: nothing observed (broker epochs are zxids) */
}

/* Whether the observed field (tag, n, payload) equals the view's value (observation.py
 * mismatch: records by offset, epoch and the values an observed value may be) */
static int agrees(int tag, int n, const int *p, const Value *x, const uint64_t (*values)[2]) {
    if (x->tag == V_RECORDS) {
        if (tag != V_RECORDS || n != 3 * x->n) return 0;
        for (int i = 0; i < x->n; i++) {
            int value = x->list[3 * i + 2];
            if (p[3 * i] != x->list[3 * i] || p[3 * i + 1] != x->list[3 * i + 1]) return 0;
            if (value < 0 || value > 127 || !((values[p[3 * i + 2]][value >> 6] >> (value & 63)) & 1)) return 0;
        }
        return 1;
    }
    if (tag != x->tag) return 0;
    if (tag == V_NONE) return 1;
    if (tag == V_INT || tag == V_STR) return p[0] == x->v;
    if (tag == V_LIST) {
        if (n != x->n) return 0;
        for (int i = 0; i < n; i++)
            if (p[i] != x->list[i]) return 0;
        return 1;
    }
    return 0; /* V_OTHER: equal to nothing */
}

/* ---------------------------------------------------------------------------------------
 * Matching an event in one state (search.py _match_in, _candidates)
 * ------------------------------------------------------------------------------------- */

/* One candidate step of the event from h: taken on found[nfound], kept if its view agrees
 * with the fields.  -1 when the C cannot take it (the event is declined).  name NULL: the
 * partition's first leader written (init_partition, its numbers in args); "": the step
 * before seen again, the state unchanged (a later truncation round). */
static int try_step(const Hyp *h, const int *ev, const char *name, const int *args, int nargs, const Message *m,
                    const uint64_t (*values)[2]) {
    if (nfound >= MAXFOUND) return -1;
    Hyp *t = &found[nfound];
    t->s = h->s;
    int done = name == NULL ? init_partition(&t->s, ev[1], args) : *name == 0 ? 1 : take_step(&t->s, name, args, nargs);
    if (done < 0) return -1;
    if (done == 0) return 0;
    const int *f = ev + 5;
    Value x;
    for (int k = 0; k < ev[4]; k++) {
        int key = f[0], tag = f[1], n = f[2];
        if (view(ev[0], ev[1], m, &h->s, &t->s, key, &x) && !agrees(tag, n, f + 3, &x, values)) return 0;
        f += 3 + n;
    }
    t->spec = h->spec;
    t->origin = h->origin;
    nfound++;
    return 1;
}

/* Whether a stop_replica event says its replica was only stopped (delete observed false) */
static int observed_kept(const int *ev) {
    const int *f = ev + 5;
    for (int k = 0; k < ev[4]; f += 3 + f[2], k++)
        if (f[0] == K_DELETE) return f[1] == V_INT && f[3] == 0;
    return 0;
}

/* A stop_replica event's candidates (search.py _deletion_candidates): the StopReplica
 * requests pending for its broker; and, when none of them is a deletion's, a deletion or a
 * removal of the partition taken just before one of its StopReplica(delete) -- which no
 * event whose replica was only stopped matches (their view says delete), so the C skips
 * them for such an event and declines any other: remove_partitions is the Python judge's. */
static int stop_candidates(const Hyp *h, const int *ev, const uint64_t (*values)[2]) {
    const S *s = &h->s;
    int b = ev[1], r = 0, deleting = 0;
    Message m;
    for (int i = 0; i < s->nstop; i++) deleting |= s->stop[i].to == b && s->stop[i].leader_epoch == EPOCH_DURING_DELETE;
    if (!deleting && s->zn_ar && s->controller != NO_LEADER && !observed_kept(ev)) return -1;
    for (int i = 0; i < s->nstop && r >= 0; i++) {
        m.stop = s->stop[i];
        if (m.stop.to == b) r = try_step(h, ev, "stop_replica", (int[]){i}, 1, &m, values);
    }
    return r;
}

/* search.py later_truncation_round: a truncate event of a follower that has truncated and
 * fetched nothing since, under a rule that takes rounds, is that truncation seen again */
static int later_round(const S *s, int f) {
    const Replica *r = &s->br[f].r;
    if ((C.truncation != T_KIP279 && C.truncation != T_KIP320) || s->br[f].status != UP || r->role != FOLLOWER ||
        r->fetch_state != FETCHING || r->leader == NO_LEADER)
        return 0;
    for (int i = 0; i < s->nfetch; i++)
        if (s->fetch[i].follower == f) return 0;
    return 1;
}

/* Every candidate step of the event from h (search.py _candidates, _actor_args) */
static int match(const Hyp *h, const int *ev, const uint64_t (*values)[2]) {
    int action = ev[0], b = ev[1], r = 0;
    const S *s = &h->s;
    Message m;
    if (b < 0 || b >= C.brokers) return 0;
    switch (action) {
    case J_PRODUCE: return try_step(h, ev, "produce", (int[]){b, NO_HOLD}, 2, NULL, values);
    case J_SEND_FETCH: return try_step(h, ev, "send_fetch", (int[]){b}, 1, NULL, values);
    case J_BROKER_RESTART: return try_step(h, ev, "broker_restart", (int[]){b, -1}, 2, NULL, values);
    case J_CONTROLLER_ELECT: return try_step(h, ev, "controller_elect", (int[]){b}, 1, NULL, values);
    case J_BROKER_CRASH: return try_step(h, ev, "broker_crash", (int[]){b}, 1, NULL, values);
    case J_BROKER_STOP: return try_step(h, ev, "broker_stop", (int[]){b}, 1, NULL, values);
    case J_STOP_REPLICA: return stop_candidates(h, ev, values);
    case J_TRUNCATE:
        r = try_step(h, ev, "truncate", (int[]){b}, 1, NULL, values);
        return r < 0 || !later_round(s, b) ? r : try_step(h, ev, "", NULL, 0, NULL, values);
    case J_EXPAND_ISR:
        for (int f = 0; f < C.brokers && r >= 0; f++) {
            m.follower = f;
            if (f != b) r = try_step(h, ev, "expand_isr", (int[]){b, f}, 2, &m, values);
        }
        return r;
    case J_ELECT_LEADER: { /* (c, p, leader): the controller's elections_args, of partition 0 */
        Outcome out[MAXB + 1];
        /* before the partition's life its first elect_leader (search.py _init_candidate), and
         * Kafka's writes of a dead replica out of the ISR: the Python judge's */
        if (s->zn_leader_epoch == -1 || C.offline_replica_writes) return -1;
        if (b != s->controller) return 0;
        int k = election_outcomes(s, 0, out);
        for (int i = 0; i < k && r >= 0; i++)
            r = try_step(h, ev, "elect_leader", (int[]){b, out[i].leader, -1}, 3, NULL, values);
        return r;
    }
    case J_CONTROLLED_SHUTDOWN: { /* (c, p, b, leader): the controller's, of partition 0 */
        int args[MAXP * MAXB * MAXB][3];
        if (b != s->controller) return 0;
        int k = shutdowns_args(s, args);
        for (int i = 0; i < k && r >= 0; i++)
            r = args[i][0] != 0 ? -1 : try_step(h, ev, "controlled_shutdown", (int[]){b, args[i][1], args[i][2]}, 3, NULL, values);
        return r;
    }
    case J_INIT: { /* in a state whose partition was written before, create_topic: Python's */
        const int *f = ev + 5;
        for (int k = 0; k < ev[4]; f += 3 + f[2], k++)
            if (f[0] == K_INIT && s->zn_leader_epoch == -1 && cur[0].s.zn_ar) /* (else renumbered) */
                return try_step(h, ev, NULL, f + 3, 5, NULL, values);
        return -1;
    }
    case J_HANDLE_FETCH: case J_RECEIVE_FETCH:
        for (int i = 0; i < s->nfetch && r >= 0; i++) {
            m.fetch = s->fetch[i];
            if (action == J_HANDLE_FETCH && m.fetch.leader == b)
                r = try_step(h, ev, "handle_fetch", (int[]){i, NO_HOLD}, 2, &m, values);
            if (action == J_RECEIVE_FETCH && m.fetch.follower == b)
                r = try_step(h, ev, "receive_fetch", (int[]){i}, 1, &m, values);
        }
        return r;
    case J_BECOME_LEADER: case J_BECOME_FOLLOWER:
        for (int i = 0; i < s->nlai && r >= 0; i++) {
            m.lai = s->lai[i];
            if (m.lai.to == b)
                r = try_step(h, ev, action == J_BECOME_LEADER ? "become_leader" : "become_follower", (int[]){i}, 1, &m,
                             values);
        }
        return r;
    }
    return -1;
}

/* ---------------------------------------------------------------------------------------
 * Internal steps (search.py _internal_steps): silent ones, and before a kill -9 one loud
 * step of its victim (one the kill cut short before its trace line)
 * ------------------------------------------------------------------------------------- */

static int same_replica(const Replica *a, const Replica *b) {
    if (a->role != b->role || a->leader != b->leader || a->leader_epoch != b->leader_epoch || a->isr != b->isr ||
        a->zk_version != b->zk_version || a->loglen != b->loglen || a->hw != b->hw || a->fetch_state != b->fetch_state ||
        a->epoch_start != b->epoch_start || a->topic_id != b->topic_id)
        return 0;
    if (memcmp(a->log, b->log, sizeof(Entry) * (size_t)a->loglen) != 0) return 0;
    return memcmp(a->follower_leo, b->follower_leo, (size_t)C.brokers) == 0;
}

/* reassignment.py _only_consumed: the step from s to t took its StopReplica and changed
 * nothing else (its encoding, with s's requests, is s's: enc) */
static int only_consumed(const S *s, const S *t, const u8 *enc, int len) {
    static S u;
    static u8 buf[MAXENC];
    u = *t;
    u.nstop = s->nstop;
    memcpy(u.stop, s->stop, sizeof u.stop);
    return encode(&u, IDENTITY, buf) == len && memcmp(buf, enc, (size_t)len) == 0;
}

static int same_znode(const S *a, const S *b) {
    return a->zn_leader == b->zn_leader && a->zn_leader_epoch == b->zn_leader_epoch && a->zn_isr == b->zn_isr &&
           a->zn_zk_version == b->zn_zk_version && a->zn_ar == b->zn_ar && a->zn_rar == b->zn_rar &&
           a->zn_topic_id == b->zn_topic_id;
}

/* The next level: where successors go, the state they come from, and whether it may take
 * a loud step */
typedef struct { Hyp *out; int n; const Hyp *from; int loud; } Expansion;

/* Keep t (a step from lv->from) if it is a step at all (not a self-loop) and not seen yet */
static int keep(Expansion *lv, Hyp *t, int silent) {
    t->spec = lv->from->spec || !silent;
    t->loud = lv->loud && silent;
    t->origin = lv->from->origin;
    if (!encode_into(t)) return -1;
    if (t->len == lv->from->len && memcmp(t->enc, lv->from->enc, (size_t)t->len) == 0) return 0;
    if (!see(t)) return 0;
    lv->n++;
    return 1;
}

/* One internal step named with args by broker actor, if silent (its action's ``silent``) */
static int internal(Expansion *lv, int by, int actor, const char *name, const int *args, int nargs) {
    if (by >= 0 && actor != by) return 0;
    if (lv->n >= MAXFRONT) return -1;
    const S *s = &lv->from->s;
    Hyp *t = &lv->out[lv->n];
    t->s = *s;
    int done = take_step(&t->s, name, args, nargs);
    if (done < 0) return -1;
    if (done == 0) return 0;
    int silent = 1;
    if (strcmp(name, "controlled_shutdown") == 0) silent = same_znode(s, &t->s);
    if (strcmp(name, "truncate") == 0)
        silent = s->br[actor].r.loglen == t->s.br[actor].r.loglen &&
                 memcmp(s->br[actor].r.log, t->s.br[actor].r.log, sizeof(Entry) * (size_t)s->br[actor].r.loglen) == 0;
    if (strcmp(name, "handle_fetch") == 0) {
        const Fetch *resp = new_response(s, &t->s, &s->fetch[args[0]]);
        silent = same_replica(&s->br[actor].r, &t->s.br[actor].r) && (resp == NULL || resp->nrec == 0);
    }
    if (strcmp(name, "receive_fetch") == 0) silent = same_replica(&s->br[actor].r, &t->s.br[actor].r);
    if (strcmp(name, "stop_replica") == 0) silent = only_consumed(s, &t->s, lv->from->enc, lv->from->len);
    if (strcmp(name, "shrink_isr") == 0 || strcmp(name, "expand_isr") == 0) silent = 0; /* cut short only */
    return silent || lv->loud ? keep(lv, t, silent) : 0;
}

/* Every silent internal step from lv->from, of broker by (-1: of any) */
static int internal_steps(Expansion *lv, int by) {
    const S *s = &lv->from->s;
    int n = C.brokers, r = 0;
    /* declined, the Python judge's to take: propose_isr, alter_partition, apply_isr */
    if (C.alter_partition || s->nalter) return -1;
    for (int f = 0; f < n; f++) { /* search.py skip_empty_lookup */
        const Replica *x = &s->br[f].r;
        if ((by >= 0 && f != by) || s->br[f].status != UP || x->role != FOLLOWER || x->fetch_state != TRUNCATING ||
            x->loglen)
            continue;
        if (lv->n >= MAXFRONT) return -1;
        Hyp *t = &lv->out[lv->n];
        t->s = *s;
        t->s.br[f].r.fetch_state = FETCHING;
        if (keep(lv, t, 1) < 0) return -1;
    }
    for (int b = 0; b < n && r >= 0; b++) r = internal(lv, by, b, "controller_resign", (int[]){b}, 1);
    int c = s->controller;
    if (c != NO_LEADER) {
        for (int b = 0; b < n && r >= 0; b++)
            if (has(s->br[c].new_brokers, b)) r = internal(lv, by, c, "on_broker_startup", (int[]){c, b}, 2);
        int args[MAXP * MAXB * MAXB][3]; /* (p, b, leader); step.c takes partition 0's */
        int k = shutdowns_args(s, args);
        for (int i = 0; i < k && r >= 0; i++)
            r = args[i][0] != 0 ? -1
                                : internal(lv, by, c, "controlled_shutdown", (int[]){c, args[i][1], args[i][2]}, 3);
    }
    for (int f = 0; f < n && r >= 0; f++) r = internal(lv, by, f, "truncate", (int[]){f}, 1);
    for (int f = 0; f < n && r >= 0; f++) r = internal(lv, by, f, "send_fetch", (int[]){f}, 1);
    for (int i = 0; i < s->nfetch && r >= 0; i++)
        r = internal(lv, by, s->fetch[i].leader, "handle_fetch", (int[]){i, NO_HOLD}, 2);
    for (int i = 0; i < s->nfetch && r >= 0; i++)
        r = internal(lv, by, s->fetch[i].follower, "receive_fetch", (int[]){i}, 1);
    for (int i = 0; i < s->nstop && r >= 0; i++) r = internal(lv, by, s->stop[i].to, "stop_replica", (int[]){i}, 1);
    if (lv->loud) /* search.py CUT_SHORT_ACTIONS */
        for (const char *const *name = (const char *const[]){"shrink_isr", "expand_isr", NULL}; *name; name++)
            for (int b = 0; b < n && r >= 0; b++)
                for (int f = 0; f < n && r >= 0; f++)
                    if (f != b) r = internal(lv, by, b, *name, (int[]){b, f}, 2);
    return r < 0 ? -1 : 0;
}

/* Every state of from[0..n) expanded into out: how many, -1 when the C cannot say.  loud:
 * whether the states may take a loud step, -1: as each says */
static int expand(const Hyp *from, int n, Hyp *out, int by, int loud) {
    Expansion lv = {out, 0, NULL, 0};
    for (int i = 0; i < n; i++) {
        lv.from = &from[i];
        lv.loud = loud < 0 ? from[i].loud : loud;
        if (internal_steps(&lv, by) < 0) return -1;
    }
    return lv.n;
}

/* search.py _before_freeze: the victim's silent steps, and before a kill -9 one loud one */
static int before_freeze(const Hyp *frontier, int n, const int *ev, const uint64_t (*values)[2], int bound) {
    nseen = 0;
    for (int i = 0; i < n; i++) see(&frontier[i]);
    const Hyp *level = frontier;
    for (int d = 0; d < bound && n > 0; d++) {
        Hyp *next = level == level_a ? level_b : level_a;
        n = expand(level, n, next, ev[1], d == 0 ? ev[0] == J_BROKER_CRASH : -1);
        if (n < 0) return -1;
        for (int i = 0; i < n; i++)
            if (match(&next[i], ev, values) < 0) return -1;
        level = next;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * One event (search.py advance, replay.py TraceJudge._search)
 * ------------------------------------------------------------------------------------- */

static int freezing(int action) {
    return action == J_BECOME_LEADER || action == J_BECOME_FOLLOWER || action == J_BROKER_CRASH ||
           action == J_STOP_REPLICA || action == J_BROKER_STOP;
}

/* The matches of the event with the fewest internal steps, into found: 0 when none */
static int advance(const int *ev, const uint64_t (*values)[2], int limit, int bound) {
    const Hyp *frontier = cur;
    int n = ncur;
    nseen = 0;
    for (int depth = 0; depth <= bound; depth++) {
        for (int i = 0; i < n; i++)
            if (match(&frontier[i], ev, values) < 0) return 0;
        if (nfound) return !freezing(ev[0]) || before_freeze(frontier, n, ev, values, bound - depth) == 0;
        if (depth == bound) return 0;
        if (depth == 0)
            for (int i = 0; i < ncur; i++) see(&cur[i]);
        Hyp *next = frontier == level_a ? level_b : level_a;
        n = expand(frontier, n, next, -1, 0);
        if (n <= 0) return 0;
        qsort(next, (size_t)n, sizeof(Hyp), by_state);
        if (n > 4 * limit) n = 4 * limit;
        frontier = next;
    }
    return 0;
}

/* A row renumbered as the current incarnation's (K_CURRENT) of a broker whose replica is,
 * in the first state, an older incarnation's: replay.py _of_older_incarnation, a zombie's
 * act the Python judge reads unrenumbered */
static int zombie(const int *ev) {
    const int *f = ev + 5;
    int b = ev[1];
    for (int k = 0; k < ev[4]; f += 3 + f[2], k++)
        if (f[0] == K_CURRENT) return b >= 0 && b < C.brokers && cur[0].s.br[b].r.topic_id < cur[0].s.zn_topic_id;
    return 0;
}

/* One event: 1 judged (cur holds the states after it), 0 declined (cur unchanged) */
static int judge_event(const int *ev, uint64_t (*values)[2], int limit, int bound, int fetch_max_records) {
    int action = ev[0], b = ev[1];
    if (action == J_NO_STEP) return 1;
    if (zombie(ev)) return 0;
    C.fetch_max_records = action == J_HANDLE_FETCH && ev[2] > 0 ? ev[2] : fetch_max_records;
    nfound = 0;
    arena_used = 0;
    if (!advance(ev, (const uint64_t(*)[2])values, limit, bound)) return 0;
    for (int i = 0; i < nfound; i++) {
        Hyp *t = &found[i];
        if (state_violation(&t->s) || transition_violation(&cur[t->origin].s, &t->s)) return 0;
        if (!encode_into(t)) return 0;
    }
    if (action == J_PRODUCE)
        for (int i = 0; i < nfound; i++) {
            const Replica *r = &found[i].s.br[b].r;
            int value = r->log[r->loglen - 1].value;
            values[ev[3]][value >> 6] |= (uint64_t)1 << (value & 63);
        }
    /* the matches in order, the first of equal ones kept: sorted (stably) by their indices,
     * so that each state is copied once, into cur, rather than moved by the sort */
    int order[MAXFOUND], kept = 0;
    for (int i = 0; i < nfound; i++) {
        int j = i;
        for (; j > 0 && by_state(&found[order[j - 1]], &found[i]) > 0; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (int i = 0; i < nfound && kept < limit; i++)
        if (kept == 0 || by_state(&found[order[i]], &found[order[kept - 1]]) != 0) order[kept++] = order[i];
    for (int h = 0, at = 0; h < kept; at += cur[h].len, h++) {
        cur[h] = found[order[h]];
        memcpy(cur_enc + at, cur[h].enc, (size_t)cur[h].len);
        cur[h].enc = cur_enc + at;
        cur[h].origin = h;
    }
    ncur = kept;
    return 1;
}

/* The library's entry point for a run of events: the configuration (Cfg's fields in order),
 * the states (nhyps encodings one after the other, their lengths, whether each is
 * speculative), the events (offsets[i] the start of event i in events), the value sets
 * (updated in place), the most states kept and the internal steps searched before an
 * event.  Returns how many events were judged, from the first: all of them, or up to the
 * one declined.  The states after them are written to out (the same layout; *nout states),
 * -1 when the states given cannot be held here. */
int epochal_judge(const int *cfg, int nhyps, const u8 *enc, const int *lens, const int *spec, const int *events,
                  const int *offsets, int nevents, uint64_t (*values)[2], int limit, int bound, u8 *out, int cap,
                  int *outlens, int *outspec, int *nout) {
    memcpy(&C, cfg, sizeof C);
    int fetch_max_records = C.fetch_max_records;
    if (nhyps > MAXFOUND || limit > MAXFOUND || bound < 0) return -1;
    if (setjmp(step_failed)) return -1;
    ncur = 0;
    for (int h = 0, at = 0; h < nhyps; at += lens[h], h++) {
        if (!fits(enc + at, lens[h]) || lens[h] > MAXENC) return -1;
        decode(enc + at, lens[h], &cur[h].s);
        memcpy(cur_enc + at, enc + at, (size_t)lens[h]);
        cur[h].spec = spec[h];
        cur[h].origin = h;
        cur[h].len = lens[h];
        cur[h].loud = 0;
        cur[h].enc = cur_enc + at;
        ncur++;
    }
    volatile int judged = 0;
    if (setjmp(step_failed) == 0)
        while (judged < nevents &&
               judge_event(events + offsets[judged], values, limit, bound, fetch_max_records))
            judged++;
    /* (a rule's die() mid-event lands here with the states before that event intact) */
    for (int h = 0, at = 0; h < ncur; at += cur[h].len, h++) {
        if (at + cur[h].len > cap) return -1;
        memcpy(out + at, cur[h].enc, (size_t)cur[h].len);
        outlens[h] = cur[h].len;
        outspec[h] = cur[h].spec;
    }
    *nout = ncur;
    return judged;
}
#endif
