/*
 * judge.c: the trace judge's search for a run of events, over C states -- the compiled twin
 * of conformance/judge/search.py's advance for the events it can take, through
 * conformance/judge/compiled_batch.py.
 *
 * The judge keeps the set of model states the system may be in; for each event it tries, in
 * every state, the observed action's steps by the observed broker, keeps those whose view
 * (model.registry, each action's ``view``) agrees with every field the event observed, and
 * drops none for a property: the new set is the matches, deduplicated and in order when
 * there are several.  This file does that for produce, send_fetch, handle_fetch and
 * receive_fetch matched with no internal step before them -- most events of a recorded run
 * -- and *declines* an event whenever the answer needs more: no step matches without
 * internal steps, a match breaks a property, a state or counter passes what the C holds.
 * Declining is never a verdict: the caller judges that event with the Python judge, from
 * the states as they were before it, and goes on.
 *
 * An event is a row of ints (compiled_batch.py writes them): action, actor, the records a
 * fetch answer carried (its fetch_max_records, 0: the configuration's), the id of a
 * produced value, the number of fields, then each field as key, tag, length, payload.  A
 * value observed in a record is an id too: values[id] is the set of model values (bits) it
 * may be, as the Python judge's ``values`` map.
 */
#ifdef EPOCHAL_LIBRARY
#include <setjmp.h>

#include "state.h"

extern jmp_buf step_failed; /* step.c: where a rule's die() returns */

enum { J_PRODUCE = 0, J_SEND_FETCH = 1, J_HANDLE_FETCH = 2, J_RECEIVE_FETCH = 3, J_NO_STEP = 4 };
enum { K_LEADER, K_FOLLOWER, K_FETCH_OFFSET, K_LEADER_EPOCH, K_POST_HW, K_POST_LEO, K_POST_ISR, K_OFFSET, K_ERROR,
       K_LEADER_HW, K_RECORDS };
/* a field's tag: an int (bools and whole floats included), None, a known string (its id),
 * a list of ints, a value equal to nothing a view holds, records (offset, epoch, value id)* */
enum { V_INT, V_NONE, V_STR, V_LIST, V_OTHER, V_RECORDS };
enum { STR_OUT_OF_RANGE = 1, STR_FENCED = 2 }; /* model.actions.views ERRORS, FENCED */

#define MAXFOUND 256
#define ARENA (MAXFOUND * MAXENC)

typedef struct { S s; int spec, origin, off, len; } Hyp;

static Hyp cur[MAXFOUND], found[MAXFOUND];
static int ncur, nfound;
static u8 arena[ARENA];

static int fits(const u8 *enc, int len) {
    for (int i = 0; i < len; i++)
        if (enc[i] > 129) return 0;
    return 1;
}

/* A view's value for one key: a tag, an int, and a list */
typedef struct { int tag, v, n; int list[3 * MAXREC]; } Value;

static void as_int(Value *x, int v) { x->tag = V_INT; x->v = v; }
static void as_none(Value *x) { x->tag = V_NONE; }
static void as_error(Value *x, int error) {
    if (error == OUT_OF_RANGE) { x->tag = V_STR; x->v = STR_OUT_OF_RANGE; } else as_none(x);
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

/* The view's value of key for the step (action, actor, message m) from before to after; 0
 * when the view has no such key (the field is then not compared, as mismatch does). */
static int view(int action, int actor, const Fetch *m, const S *before, const S *after, int key, Value *x) {
    if (action == J_PRODUCE) {
        const Replica *r = &after->br[actor].r;
        switch (key) {
        case K_OFFSET: as_int(x, r->loglen - 1); return 1;
        case K_LEADER_EPOCH: as_int(x, r->log[r->loglen - 1].epoch); return 1;
        case K_POST_HW: as_int(x, r->hw); return 1;
        case K_POST_LEO: as_int(x, r->loglen); return 1;
        }
        return 0;
    }
    if (action == J_SEND_FETCH) {
        const Replica *r = &before->br[actor].r;
        switch (key) {
        case K_LEADER: as_int(x, r->leader); return 1;
        case K_FETCH_OFFSET: as_int(x, r->loglen); return 1;
        case K_LEADER_EPOCH: as_int(x, r->leader_epoch); return 1;
        case K_POST_HW: as_int(x, r->hw); return 1;
        case K_POST_LEO: as_int(x, r->loglen); return 1;
        }
        return 0;
    }
    if (action == J_HANDLE_FETCH) {
        const Replica *lr = &after->br[(int)m->leader].r;
        const Fetch *resp = new_response(before, after, m);
        switch (key) {
        case K_FOLLOWER: as_int(x, m->follower); return 1;
        case K_FETCH_OFFSET: as_int(x, m->offset); return 1;
        case K_LEADER_EPOCH: as_int(x, lr->leader_epoch); return 1;
        case K_POST_HW: as_int(x, lr->hw); return 1;
        case K_POST_LEO: as_int(x, lr->loglen); return 1;
        case K_POST_ISR: as_brokers(x, lr->isr); return 1;
        case K_ERROR:
            if (resp == NULL) { x->tag = V_STR; x->v = STR_FENCED; } else as_error(x, resp->error);
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
    /* J_RECEIVE_FETCH */
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

/* One candidate step of the event from cur[h]: taken on found[nfound], kept if its view
 * agrees with the fields.  -1 when the C cannot take it (the event is declined). */
static int try_step(int h, const int *ev, const char *name, const int *args, int nargs, const Fetch *m,
                    const uint64_t (*values)[2]) {
    if (nfound >= MAXFOUND) return -1;
    Hyp *t = &found[nfound];
    t->s = cur[h].s;
    int done = take_step(&t->s, name, args, nargs);
    if (done < 0) return -1;
    if (done == 0) return 0;
    const int *f = ev + 5;
    Value x;
    for (int k = 0; k < ev[4]; k++) {
        int key = f[0], tag = f[1], n = f[2];
        if (view(ev[0], ev[1], m, &cur[h].s, &t->s, key, &x) && !agrees(tag, n, f + 3, &x, values)) return 0;
        f += 3 + n;
    }
    t->spec = cur[h].spec;
    t->origin = h;
    nfound++;
    return 1;
}

static int by_state(const void *a, const void *b) {
    const Hyp *x = a, *y = b;
    int n = x->len < y->len ? x->len : y->len;
    int c = memcmp(arena + x->off, arena + y->off, (size_t)n);
    if (c) return c;
    if (x->len != y->len) return x->len - y->len;
    return x->spec - y->spec;
}

/* One event: 1 judged (cur holds the states after it), 0 declined (cur unchanged) */
static int judge_event(const int *ev, uint64_t (*values)[2], int limit, int fetch_max_records) {
    int action = ev[0], b = ev[1];
    if (action == J_NO_STEP) return 1;
    C.fetch_max_records = action == J_HANDLE_FETCH && ev[2] > 0 ? ev[2] : fetch_max_records;
    nfound = 0;
    int in_range = b >= 0 && b < C.brokers;
    for (int h = 0; h < ncur; h++) {
        const S *s = &cur[h].s;
        int r = 0;
        if (action == J_PRODUCE && in_range) r = try_step(h, ev, "produce", (int[]){b, NO_HOLD}, 2, NULL, values);
        if (action == J_SEND_FETCH && in_range) r = try_step(h, ev, "send_fetch", (int[]){b}, 1, NULL, values);
        if (action == J_HANDLE_FETCH || action == J_RECEIVE_FETCH)
            for (int i = 0; i < s->nfetch && r >= 0; i++) {
                Fetch m = s->fetch[i];
                if (action == J_HANDLE_FETCH && m.leader == b) r = try_step(h, ev, "handle_fetch", (int[]){i, NO_HOLD}, 2, &m, values);
                if (action == J_RECEIVE_FETCH && m.follower == b) r = try_step(h, ev, "receive_fetch", (int[]){i}, 1, &m, values);
            }
        if (r < 0) return 0;
    }
    if (nfound == 0) return 0; /* internal steps, or no step at all: the Python judge's to say */
    int off = 0;
    for (int i = 0; i < nfound; i++) {
        Hyp *t = &found[i];
        if (state_violation(&t->s) || transition_violation(&cur[t->origin].s, &t->s)) return 0;
        if (off + MAXENC > ARENA) return 0;
        t->off = off;
        t->len = encode(&t->s, IDENTITY, arena + off);
        if (!fits(arena + off, t->len)) return 0; /* a counter past what the C holds */
        off += t->len;
    }
    if (action == J_PRODUCE)
        for (int i = 0; i < nfound; i++) {
            const Replica *r = &found[i].s.br[b].r;
            int value = r->log[r->loglen - 1].value;
            values[ev[3]][value >> 6] |= (uint64_t)1 << (value & 63);
        }
    if (nfound > 1) qsort(found, (size_t)nfound, sizeof(Hyp), by_state);
    ncur = 0;
    for (int i = 0; i < nfound && ncur < limit; i++)
        if (ncur == 0 || by_state(&found[i], &cur[ncur - 1]) != 0) cur[ncur++] = found[i];
    return 1;
}

/* The library's entry point for a run of events: the configuration (Cfg's fields in order),
 * the states (nhyps encodings one after the other, their lengths, whether each is
 * speculative), the events (offsets[i] the start of event i in events), the value sets
 * (updated in place) and the most states kept.  Returns how many events were judged, from
 * the first: all of them, or up to the one declined.  The states after them are written to
 * out (the same layout; *nout states), -1 when the states given cannot be held here. */
int epochal_judge(const int *cfg, int nhyps, const u8 *enc, const int *lens, const int *spec, const int *events,
                  const int *offsets, int nevents, uint64_t (*values)[2], int limit, u8 *out, int cap, int *outlens,
                  int *outspec, int *nout) {
    memcpy(&C, cfg, sizeof C);
    int fetch_max_records = C.fetch_max_records;
    if (nhyps > MAXFOUND || limit > MAXFOUND) return -1;
    if (setjmp(step_failed)) return -1;
    ncur = 0;
    for (int h = 0, at = 0; h < nhyps; at += lens[h], h++) {
        if (!fits(enc + at, lens[h])) return -1;
        decode(enc + at, lens[h], &cur[h].s);
        cur[h].spec = spec[h];
        ncur++;
    }
    volatile int judged = 0;
    if (setjmp(step_failed) == 0)
        while (judged < nevents && judge_event(events + offsets[judged], values, limit, fetch_max_records)) judged++;
    /* (a rule's die() mid-event lands here with the states before that event intact) */
    int at = 0;
    for (int h = 0; h < ncur; h++) {
        if (at + MAXENC > cap) return -1;
        outlens[h] = encode(&cur[h].s, IDENTITY, out + at);
        outspec[h] = cur[h].spec;
        at += outlens[h];
    }
    *nout = ncur;
    return judged;
}
#endif
