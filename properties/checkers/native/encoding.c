/*
 * encoding.c: how a state is written down -- the order-preserving encoding of
 * properties/checkers/native.py (``encode``, ``decode``) and its 64-bit fingerprint.
 *
 * States are exchanged with Python in this encoding: the State tuple flattened, each int v
 * written as the byte v + 2, each variable-length tuple as (1, element)* 0.  Comparing two
 * encodings bytewise orders them as Python orders the tuples, so the canonical
 * representative symmetry.c picks (the smallest encoding over the candidate broker
 * renamings) is exactly properties.checkers.symmetry.canonical's.  Encoding takes a
 * renaming (perm[old] = new) so that symmetry.c can compare renamings without copying the
 * state.
 */
#include <stdlib.h>

#include "state.h"

const int IDENTITY[MAXB] = {0, 1, 2, 3,
#if MAXB > 4
                             4,
#endif
};

/* ---------------------------------------------------------------------------------------
 * The order-preserving encoding (properties/checkers/native.py ``encode``), under a broker renaming.
 * ------------------------------------------------------------------------------------- */

static int mapb(const int *perm, int b) { return b == NO_LEADER ? b : perm[b]; }

static void put_set(Buf *b, const int *perm, u8 set, int n) {
    u8 mapped = 0;
    for (int x = 0; x < n; x++)
        if (has(set, x)) mapped |= (u8)(1 << perm[x]);
    for (int x = 0; x < n; x++)
        if (has(mapped, x)) {
            mark(b, 1);
            put(b, x);
        }
    mark(b, 0);
}

void put_log(Buf *b, const Entry *log, int len) {
    u8 *p = b->p + b->n; /* (a local cursor: a byte store through b->p may alias b->n) */
    for (int i = 0; i < len; i++, p += 3) {
        p[0] = 1;
        p[1] = (u8)(log[i].value + 2);
        p[2] = (u8)(log[i].epoch + 2);
    }
    *p++ = 0;
    b->n = (int)(p - b->p);
}

/* One element of a sorted tuple, encoded on its own to be sorted: at most a fetch answer
 * (ten fields and its records); the capacities are the state.h ones, which the judge's step
 * library raises. */
#define ITEM_BYTES (16 + 2 * MAXREC > 64 ? 16 + 2 * MAXREC : 64)
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define MAXITEMS MAX2(MAX2(MAX2(MAXLAI, MAXFETCH), MAX2(MAXCOMMIT, MAXSMALL)), MAX2(MAXLED, MAXSTOP))
typedef struct { u8 bytes[ITEM_BYTES]; int n; } Item;

static int item_cmp(const Item *x, const Item *y) {
    int n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->bytes, y->bytes, (size_t)n);
    return c ? c : x->n - y->n;
}

static void put_items(Buf *b, Item *items, int n);

/* a sorted tuple of (partition, value) pairs: acked, zombie_appends, zombie_commits */
static void put_pvs(Buf *b, Item *items, const PV *pvs, int n) {
    for (int i = 0; i < n; i++) {
        Buf e = {items[i].bytes, 0};
        mark(&e, 1); put(&e, pvs[i].p);
        mark(&e, 1); put(&e, pvs[i].value);
        mark(&e, 0);
        items[i].n = e.n;
    }
    put_items(b, items, n);
}

/* The items written in their order.  A state's sets are short (a few requests, answers,
 * committed records) and mostly in order already, so they are sorted by insertion over
 * their indices rather than moved whole by qsort; items that compare equal are the same
 * bytes, so the order found among them writes the same encoding. */
static void put_items(Buf *b, Item *items, int n) {
    int order[MAXITEMS];
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && item_cmp(&items[order[j - 1]], &items[i]) > 0; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (int i = 0; i < n; i++) {
        const Item *x = &items[order[i]];
        mark(b, 1);
        memcpy(b->p + b->n, x->bytes, (size_t)x->n);
        b->n += x->n;
    }
    mark(b, 0);
}

/* Encode s with broker b renamed perm[b]; returns the length. */
int encode(const S *s, const int *perm, u8 *out) {
    int n = C.brokers;
    int inv[MAXB];
    for (int b = 0; b < n; b++) inv[perm[b]] = b;
    Buf B = {out, 0}, *b = &B;
    Item items[MAXITEMS];
    /* Zk(controller, controller_epoch, live, broker_epochs, zxid, partitions) */
    put(b, mapb(perm, s->controller));
    put(b, s->controller_epoch);
    put_set(b, perm, s->live, n);
    for (int x = 0; x < n; x++) {
        mark(b, 1);
        put(b, s->broker_epochs[inv[x]]);
    }
    mark(b, 0);
    put(b, s->zxid);
    for (int p = 0; p < C.partition_ids; p++) { /* partitions: PartitionZnode(leader, leader_epoch, isr, zk_version, ar, rar, topic_id) */
        const Zn *zn = &s->zn[p];
        mark(b, 1);
        put(b, mapb(perm, zn->leader));
        put(b, zn->leader_epoch);
        put_set(b, perm, zn->isr, n);
        put(b, zn->zk_version);
        put_set(b, perm, zn->ar, n);
        put_set(b, perm, zn->rar, n);
        put(b, zn->topic_id);
    }
    mark(b, 0);
    /* brokers: Broker(status, is_controller, controller_epoch, broker_epoch, replicas, new_brokers,
       shutting_down) */
    for (int x = 0; x < n; x++) {
        const Broker *br = &s->br[inv[x]];
        mark(b, 1);
        put(b, br->status);
        put(b, br->is_controller);
        put(b, br->controller_epoch);
        put(b, br->broker_epoch);
        for (int p = 0; p < C.partition_ids; p++) { /* replicas: Replica, by partition */
            const Replica *r = &br->rp[p];
            mark(b, 1);
            put(b, r->role);
            put(b, mapb(perm, r->leader));
            put(b, r->leader_epoch);
            put_set(b, perm, r->isr, n);
            put(b, r->zk_version);
            put_log(b, r->log, r->loglen);
            put(b, r->hw);
            put(b, r->fetch_state);
            for (int y = 0; y < n; y++) {
                mark(b, 1);
                put(b, r->follower_leo[inv[y]]);
            }
            mark(b, 0);
            put(b, r->epoch_start);
            put(b, r->topic_id);
        }
        mark(b, 0);
        put_set(b, perm, br->new_brokers, n);
        put_set(b, perm, br->shutting_down, n);
    }
    mark(b, 0);
    /* leader_and_isr: LeaderAndIsr(to, partition, leader, leader_epoch, isr, zk_version,
       controller_epoch, max_broker_epoch, topic_id), sorted */
    for (int i = 0; i < s->nlai; i++) {
        const Lai *m = &s->lai[i];
        Buf e = {items[i].bytes, 0};
        put(&e, perm[(int)m->to]);
        put(&e, m->partition);
        put(&e, mapb(perm, m->leader));
        put(&e, m->leader_epoch);
        put_set(&e, perm, m->isr, n);
        put(&e, m->zk_version);
        put(&e, m->controller_epoch);
        put(&e, m->max_broker_epoch);
        put(&e, m->topic_id);
        items[i].n = e.n;
    }
    put_items(b, items, s->nlai);
    /* fetches: Fetch(kind, follower, leader, partition, offset, epoch, records, hw, error, topic_id) */
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        Buf e = {items[i].bytes, 0};
        put(&e, m->kind);
        put(&e, perm[(int)m->follower]);
        put(&e, perm[(int)m->leader]);
        put(&e, m->partition);
        put(&e, m->offset);
        put(&e, m->epoch);
        put_log(&e, m->rec, m->nrec);
        put(&e, m->hw);
        put(&e, m->error);
        put(&e, m->topic_id);
        items[i].n = e.n;
    }
    put_items(b, items, s->nfetch);
    /* ghost: committed, acked, led, unclean, stale_accepts, zombie_appends, produced,
       crashes, pauses, shutdowns, reassignments, zombie_commits, deletions, retired,
       preferred_elections, partition_changes, removed, expiries */
    for (int i = 0; i < s->ncommitted; i++) {
        Buf e = {items[i].bytes, 0};
        mark(&e, 1); put(&e, s->committed[i].p);
        mark(&e, 1); put(&e, s->committed[i].offset);
        mark(&e, 1); put(&e, s->committed[i].e.value); put(&e, s->committed[i].e.epoch);
        mark(&e, 0);
        items[i].n = e.n;
    }
    put_items(b, items, s->ncommitted);
    put_pvs(b, items, s->acked, s->nacked);
    for (int i = 0; i < s->nled; i++) {
        Buf e = {items[i].bytes, 0};
        mark(&e, 1); put(&e, s->led[i].p);
        mark(&e, 1); put(&e, s->led[i].epoch);
        mark(&e, 1); put(&e, perm[(int)s->led[i].b]);
        mark(&e, 0);
        items[i].n = e.n;
    }
    put_items(b, items, s->nled);
    put_set(b, IDENTITY, s->unclean, C.partition_ids); /* partition ids, not renamed */
    put(b, s->stale_accepts);
    put_pvs(b, items, s->zapp, s->nzapp);
    put(b, s->produced);
    put(b, s->crashes);
    put(b, s->pauses);
    put(b, s->shutdowns);
    put(b, s->reassignments);
    put_pvs(b, items, s->zc, s->nzc);
    put(b, s->deletions);
    put_pvs(b, items, s->retired, s->nretired);
    put(b, s->preferred_elections);
    put(b, s->partition_changes);
    put_set(b, IDENTITY, s->removed, C.partition_ids);
    put(b, s->expiries);
    /* stop_replica: StopReplica(to, partition, leader_epoch, controller_epoch, topic_id,
       delete), sorted */
    for (int i = 0; i < s->nstop; i++) {
        const Stop *m = &s->stop[i];
        Buf e = {items[i].bytes, 0};
        put(&e, perm[(int)m->to]);
        put(&e, m->partition);
        put(&e, m->leader_epoch);
        put(&e, m->controller_epoch);
        put(&e, m->topic_id);
        put(&e, m->delete);
        items[i].n = e.n;
    }
    put_items(b, items, s->nstop);
    /* alter_partition: AlterPartition(kind, leader, partition, leader_epoch, isr, zk_version,
       broker_epoch, error, topic_id), sorted */
    for (int i = 0; i < s->nalter; i++) {
        const Alter *m = &s->alter[i];
        Buf e = {items[i].bytes, 0};
        put(&e, m->kind);
        put(&e, perm[(int)m->leader]);
        put(&e, m->partition);
        put(&e, m->leader_epoch);
        put_set(&e, perm, m->isr, n);
        put(&e, m->zk_version);
        put(&e, m->broker_epoch);
        put(&e, m->error);
        put(&e, m->topic_id);
        items[i].n = e.n;
    }
    put_items(b, items, s->nalter);
    if (b->n > MAXENC) die("encoding overflow");
    return b->n;
}

/* ---------------------------------------------------------------------------------------
 * Decoding (the inverse of encode with the identity renaming; sets come out in order)
 * ------------------------------------------------------------------------------------- */

typedef struct { const u8 *p; int i, n; } Rd;

static int get(Rd *r) {
    if (r->i >= r->n) die("bad state encoding (too short)");
    return (int)r->p[r->i++] - 2;
}
static int more(Rd *r) {
    if (r->i >= r->n) die("bad state encoding (too short)");
    int m = r->p[r->i++];
    if (m > 1) die("bad state encoding (expected a tuple marker)");
    return m;
}
static u8 get_set(Rd *r) {
    u8 set = 0;
    while (more(r)) {
        int x = get(r);
        if (x < 0 || x >= MAXB) die("bad state encoding (broker id)");
        set |= (u8)(1 << x);
    }
    return set;
}
static u8 get_partitions(Rd *r) {
    u8 set = 0;
    while (more(r)) {
        int p = get(r);
        if (p < 0 || p >= C.partition_ids) die("bad state encoding (partition id)");
        set |= (u8)(1 << p);
    }
    return set;
}
static int get_log(Rd *r, Entry *log) {
    int n = 0;
    while (more(r)) {
        if (n >= MAXREC) die("bad state encoding (log too long)");
        log[n].value = (i8)get(r);
        log[n].epoch = (i8)get(r);
        n++;
    }
    return n;
}
static void expect_end(Rd *r) {
    if (more(r)) die("bad state encoding (tuple too long)");
}

static int get_pvs(Rd *r, PV *pvs, const char *what) {
    int n = 0;
    while (more(r)) {
        if (n >= MAXSMALL) {
            fprintf(stderr, "epochal-search: state too large (%s)\n", what);
            exit(3);
        }
        more(r); pvs[n].p = (i8)get(r);
        more(r); pvs[n].value = (i8)get(r);
        expect_end(r);
        n++;
    }
    return n;
}

void decode(const u8 *p, int len, S *s) {
    memset(s, 0, sizeof *s);
    Rd R = {p, 0, len}, *r = &R;
    int n = 0;
    s->controller = (i8)get(r);
    s->controller_epoch = (i8)get(r);
    s->live = get_set(r);
    while (more(r)) {
        if (n >= MAXB) die("bad state encoding (too many brokers)");
        s->broker_epochs[n++] = (i8)get(r);
    }
    if (n != C.brokers) die("state has a different number of brokers than --brokers");
    s->zxid = (i8)get(r);
    for (int p = 0; p < C.partition_ids; p++) {
        if (!more(r)) die("bad state encoding (fewer partitions than --partitions and --partition-changes)");
        Zn *zn = &s->zn[p];
        zn->leader = (i8)get(r);
        zn->leader_epoch = (i8)get(r);
        zn->isr = get_set(r);
        zn->zk_version = (i8)get(r);
        zn->ar = get_set(r);
        zn->rar = get_set(r);
        zn->topic_id = (i8)get(r);
    }
    expect_end(r);
    for (int x = 0; x < n; x++) {
        if (!more(r)) die("bad state encoding (brokers)");
        Broker *br = &s->br[x];
        br->status = (i8)get(r);
        br->is_controller = (i8)get(r);
        br->controller_epoch = (i8)get(r);
        br->broker_epoch = (i8)get(r);
        for (int p = 0; p < C.partition_ids; p++) {
            Replica *q = &br->rp[p];
            if (!more(r)) die("bad state encoding (replicas)");
            q->role = (i8)get(r);
            q->leader = (i8)get(r);
            q->leader_epoch = (i8)get(r);
            q->isr = get_set(r);
            q->zk_version = (i8)get(r);
            q->loglen = (i8)get_log(r, q->log);
            q->hw = (i8)get(r);
            q->fetch_state = (i8)get(r);
            for (int y = 0; y < n; y++) {
                if (!more(r)) die("bad state encoding (follower_leo)");
                q->follower_leo[y] = (i8)get(r);
            }
            expect_end(r);
            q->epoch_start = (i8)get(r);
            q->topic_id = (i8)get(r);
        }
        expect_end(r);
        br->new_brokers = get_set(r);
        br->shutting_down = get_set(r);
    }
    expect_end(r);
    while (more(r)) {
        if (s->nlai >= MAXLAI) die("state too large for the native search (LeaderAndISR requests)");
        Lai *m = &s->lai[(int)s->nlai++];
        m->to = (i8)get(r);
        m->partition = (i8)get(r);
        m->leader = (i8)get(r);
        m->leader_epoch = (i8)get(r);
        m->isr = get_set(r);
        m->zk_version = (i8)get(r);
        m->controller_epoch = (i8)get(r);
        m->max_broker_epoch = (i8)get(r);
        m->topic_id = (i8)get(r);
    }
    while (more(r)) {
        if (s->nfetch >= MAXFETCH) die("state too large for the native search (fetches)");
        Fetch *m = &s->fetch[(int)s->nfetch++];
        m->kind = (i8)get(r);
        m->follower = (i8)get(r);
        m->leader = (i8)get(r);
        m->partition = (i8)get(r);
        m->offset = (i8)get(r);
        m->epoch = (i8)get(r);
        m->nrec = (i8)get_log(r, m->rec);
        m->hw = (i8)get(r);
        m->error = (i8)get(r);
        m->topic_id = (i8)get(r);
    }
    while (more(r)) {
        if (s->ncommitted >= MAXCOMMIT) die("state too large (committed)");
        Committed *c = &s->committed[(int)s->ncommitted++];
        more(r); c->p = (i8)get(r);
        more(r); c->offset = (i8)get(r);
        more(r); c->e.value = (i8)get(r); c->e.epoch = (i8)get(r);
        expect_end(r);
    }
    s->nacked = (i8)get_pvs(r, s->acked, "acked");
    while (more(r)) {
        if (s->nled >= MAXLED) die("state too large (led)");
        Led *l = &s->led[(int)s->nled++];
        more(r); l->p = (i8)get(r);
        more(r); l->epoch = (i8)get(r);
        more(r); l->b = (i8)get(r);
        expect_end(r);
    }
    s->unclean = get_partitions(r);
    s->stale_accepts = (i8)get(r);
    s->nzapp = (i8)get_pvs(r, s->zapp, "zombie appends");
    s->produced = (i8)get(r);
    s->crashes = (i8)get(r);
    s->pauses = (i8)get(r);
    s->shutdowns = (i8)get(r);
    s->reassignments = (i8)get(r);
    s->nzc = (i8)get_pvs(r, s->zc, "zombie commits");
    s->deletions = (i8)get(r);
    s->nretired = (i8)get_pvs(r, s->retired, "retired");
    s->preferred_elections = (i8)get(r);
    s->partition_changes = (i8)get(r);
    s->removed = get_partitions(r);
    s->expiries = (i8)get(r);
    while (more(r)) {
        if (s->nstop >= MAXSTOP) die("state too large for the native search (StopReplica requests)");
        Stop *m = &s->stop[(int)s->nstop++];
        m->to = (i8)get(r);
        m->partition = (i8)get(r);
        m->leader_epoch = (i8)get(r);
        m->controller_epoch = (i8)get(r);
        m->topic_id = (i8)get(r);
        m->delete = (i8)get(r);
    }
    while (more(r)) {
        if (s->nalter >= MAXALTER) die("state too large for the native search (AlterPartition messages)");
        Alter *m = &s->alter[(int)s->nalter++];
        m->kind = (i8)get(r);
        m->leader = (i8)get(r);
        m->partition = (i8)get(r);
        m->leader_epoch = (i8)get(r);
        m->isr = get_set(r);
        m->zk_version = (i8)get(r);
        m->broker_epoch = (i8)get(r);
        m->error = (i8)get(r);
        m->topic_id = (i8)get(r);
    }
    if (r->i != len) die("bad state encoding (trailing bytes)");
}

/* ---------------------------------------------------------------------------------------
 * Fingerprints: properties/checkers/native.py ``fingerprint`` computes the same function
 * ------------------------------------------------------------------------------------- */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t fingerprint(const u8 *p, int n) {
    /* MurmurHash3's 64-bit body and finaliser, one lane (each word is mixed on its own
       before it enters the state, so structured inputs that differ in a few small values
       do not cancel) */
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t h = 0x243F6A8885A308D3ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(n - i < 8 ? n - i : 8));
        w *= c1;
        w = rotl64(w, 31);
        w *= c2;
        h ^= w;
        h = rotl64(h, 27) * 5 + 0x52dce729;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1; /* 0 marks an empty slot of the seen-set */
}
