/*
 * epochal-search: the exhaustive checker's breadth-first search, compiled.
 *
 * A port of model/actions/ (the rules), properties/checkers/reduction.py (the partial-order reduction),
 * properties/checkers/symmetry.py (the canonical representative), the properties of properties/ and the
 * loop of properties/checkers/bfs.py -- for one partition, up to four brokers, no reassignment and no
 * controlled shutdown: the shape of every named configuration.  properties/checkers/native.py rejects
 * anything else with a message naming what is not supported.  Each function below is named
 * after the Python one it ports; read that one for the why.
 *
 * It is a second copy of the rules, so it is held to the Python model by tests
 * (tests/properties/test_native.py): for every state of the two-broker searches and samples of
 * three-broker ones, the canonical encoding and the successors computed here (in order)
 * equal the Python model's, and whole searches reach the same states, transitions,
 * verdicts and counterexamples.
 *
 * The search: breadth-first, level by level.  A level is a file of encodings (written in
 * order as found, mapped back to be expanded); the states seen are a table of 64-bit
 * fingerprints; each level's (fingerprint, parent index) pairs go to a file, read back only
 * to report a counterexample's path.  Several threads expand batches of a level; the main
 * thread merges their results in order, so the level's order -- and so the first violation
 * and its path -- is that of one thread, and of the Python checker.
 *
 * States are exchanged as the order-preserving encoding of properties/checkers/native.py: the Python
 * State tuple flattened, each int v written as the byte v + 2, each variable-length tuple
 * as (1, element)* 0.  Comparing two encodings bytewise orders them as Python orders the
 * tuples, so the canonical representative picked here (the smallest encoding over the
 * candidate broker renamings) is exactly properties.checkers.symmetry.canonical's.
 *
 * Modes:
 *   epochal-search search [options]      breadth-first search, JSON result on stdout
 *   epochal-search successors [options]  for each hex-encoded state on stdin: its key and
 *                                        the keys of its successors (differential tests)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAXB 4
#define MAXREC 6
#define MAXLAI 48
#define MAXFETCH 24
#define MAXCOMMIT 16
#define MAXLED 16
#define MAXSMALL 8
#define MAXENC 2048

typedef int8_t i8;
typedef uint8_t u8;

/* model/state.py constants */
enum { NO_LEADER = -1, UNKNOWN = -1 };
enum { UP = 0, DOWN = 1, PAUSED = 2 };
enum { NONE = 0, LEADER = 1, FOLLOWER = 2 };
enum { IDLE = 0, TRUNCATING = 1, FETCHING = 2 };
enum { FETCH_REQUEST = 0, FETCH_RESPONSE = 1 };
enum { OK = 0, OUT_OF_RANGE = 1 };
enum { T_HW = 0, T_KIP101 = 1, T_KIP279 = 2, T_KIP320 = 3 };

typedef struct { i8 value, epoch; } Entry;

typedef struct {
    i8 role, leader, leader_epoch;
    u8 isr; /* bit set of brokers (the sorted tuple of model.state) */
    i8 zk_version;
    i8 loglen;
    Entry log[MAXREC];
    i8 hw, fetch_state;
    i8 follower_leo[MAXB];
    i8 epoch_start;
} Replica;

typedef struct {
    i8 status, is_controller, controller_epoch, broker_epoch;
    Replica r;
    u8 new_brokers; /* controller only: registrations whose onBrokerStartup is still to run */
} Broker;

typedef struct { i8 to, partition, leader, leader_epoch; u8 isr; i8 zk_version, controller_epoch, max_broker_epoch; } Lai;

typedef struct { i8 kind, follower, leader, partition, offset, epoch, nrec; Entry rec[MAXREC]; i8 hw, error; } Fetch;

typedef struct { i8 p, offset; Entry e; } Committed;
typedef struct { i8 p, value; } PV;
typedef struct { i8 p, epoch, b; } Led;

/* One partition: the Zk's partitions tuple has one PartitionZnode (rar always empty). */
typedef struct {
    i8 controller, controller_epoch;
    u8 live;
    i8 broker_epochs[MAXB];
    i8 zxid;
    i8 zn_leader, zn_leader_epoch;
    u8 zn_isr;
    i8 zn_zk_version;
    u8 zn_ar;
    Broker br[MAXB];
    i8 nlai;
    Lai lai[MAXLAI];
    i8 nfetch;
    Fetch fetch[MAXFETCH];
    i8 ncommitted;
    Committed committed[MAXCOMMIT];
    i8 nacked;
    PV acked[MAXSMALL];
    i8 nled;
    Led led[MAXLED];
    i8 unclean; /* 1: partition 0 has had an unclean election */
    i8 stale_accepts;
    i8 nzapp;
    PV zapp[MAXSMALL];
    i8 produced, crashes, pauses, shutdowns, reassignments;
    i8 nzc;
    PV zc[MAXSMALL];
} S;

typedef struct {
    int brokers, records, max_epoch, max_crashes, max_pauses, min_insync;
    int unclean, truncation, fenced, refollow;
    int symmetry, reduction;
} Cfg;

static Cfg C;

static void die(const char *msg) {
    fprintf(stderr, "epochal-search: %s\n", msg);
    exit(3);
}

static int popcount8(u8 x) { return __builtin_popcount(x); }
static int has(u8 set, int b) { return b >= 0 && ((set >> b) & 1); }

/* ---------------------------------------------------------------------------------------
 * Sets kept as arrays; membership by bytewise equality (every struct is zeroed before use,
 * so unused bytes compare equal).
 * ------------------------------------------------------------------------------------- */

#define SET_ADD(arr, n, cap, item)                                      \
    do {                                                                \
        int _found = 0;                                                 \
        for (int _i = 0; _i < (n); _i++)                                \
            if (memcmp(&(arr)[_i], &(item), sizeof(item)) == 0) {       \
                _found = 1;                                             \
                break;                                                  \
            }                                                           \
        if (!_found) {                                                  \
            if ((n) >= (cap)) die("state too large for the native search (a set overflowed)"); \
            (arr)[(n)++] = (item);                                      \
        }                                                               \
    } while (0)

static void remove_fetch_at(S *s, int i) {
    memmove(&s->fetch[i], &s->fetch[i + 1], sizeof(Fetch) * (size_t)(s->nfetch - i - 1));
    s->nfetch--;
    memset(&s->fetch[s->nfetch], 0, sizeof(Fetch));
}

static void remove_lai_at(S *s, int i) {
    memmove(&s->lai[i], &s->lai[i + 1], sizeof(Lai) * (size_t)(s->nlai - i - 1));
    s->nlai--;
    memset(&s->lai[s->nlai], 0, sizeof(Lai));
}

static int find_fetch(const S *s, const Fetch *m) {
    for (int i = 0; i < s->nfetch; i++)
        if (memcmp(&s->fetch[i], m, sizeof(Fetch)) == 0) return i;
    return -1;
}

static void add_fetch(S *s, Fetch m) { SET_ADD(s->fetch, s->nfetch, MAXFETCH, m); }
static void add_lai(S *s, Lai m) { SET_ADD(s->lai, s->nlai, MAXLAI, m); }

/* ---------------------------------------------------------------------------------------
 * The order-preserving encoding (properties/checkers/native.py ``encode``), under a broker renaming.
 * ------------------------------------------------------------------------------------- */

typedef struct { u8 *p; int n; } Buf;

static inline void put(Buf *b, int v) { b->p[b->n++] = (u8)(v + 2); }
static inline void mark(Buf *b, int m) { b->p[b->n++] = (u8)m; } /* 1: an element follows, 0: end */

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

static void put_log(Buf *b, const Entry *log, int len) {
    for (int i = 0; i < len; i++) {
        mark(b, 1);
        put(b, log[i].value);
        put(b, log[i].epoch);
    }
    mark(b, 0);
}

typedef struct { u8 bytes[64]; int n; } Item;

static int item_cmp(const void *a, const void *b) {
    const Item *x = a, *y = b;
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

static void put_items(Buf *b, Item *items, int n) {
    qsort(items, (size_t)n, sizeof(Item), item_cmp);
    for (int i = 0; i < n; i++) {
        mark(b, 1);
        memcpy(b->p + b->n, items[i].bytes, (size_t)items[i].n);
        b->n += items[i].n;
    }
    mark(b, 0);
}

/* Encode s with broker b renamed perm[b]; returns the length. */
static int encode(const S *s, const int *perm, u8 *out) {
    int n = C.brokers;
    int inv[MAXB];
    for (int b = 0; b < n; b++) inv[perm[b]] = b;
    Buf B = {out, 0}, *b = &B;
    Item items[MAXLAI > MAXFETCH ? MAXLAI : MAXFETCH];
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
    mark(b, 1); /* partitions: one PartitionZnode(leader, leader_epoch, isr, zk_version, ar, rar) */
    put(b, mapb(perm, s->zn_leader));
    put(b, s->zn_leader_epoch);
    put_set(b, perm, s->zn_isr, n);
    put(b, s->zn_zk_version);
    put_set(b, perm, s->zn_ar, n);
    mark(b, 0); /* rar () */
    mark(b, 0);
    /* brokers: Broker(status, is_controller, controller_epoch, broker_epoch, replicas, new_brokers) */
    for (int x = 0; x < n; x++) {
        const Broker *br = &s->br[inv[x]];
        const Replica *r = &br->r;
        mark(b, 1);
        put(b, br->status);
        put(b, br->is_controller);
        put(b, br->controller_epoch);
        put(b, br->broker_epoch);
        mark(b, 1); /* replicas: one Replica */
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
        mark(b, 0);
        put_set(b, perm, br->new_brokers, n);
    }
    mark(b, 0);
    /* leader_and_isr: LeaderAndIsr(to, partition, leader, leader_epoch, isr, zk_version,
       controller_epoch, max_broker_epoch), sorted */
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
        items[i].n = e.n;
    }
    put_items(b, items, s->nlai);
    /* fetches: Fetch(kind, follower, leader, partition, offset, epoch, records, hw, error) */
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
        items[i].n = e.n;
    }
    put_items(b, items, s->nfetch);
    /* ghost: committed, acked, led, unclean, stale_accepts, zombie_appends, produced,
       crashes, pauses, shutdowns, reassignments, zombie_commits */
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
    if (s->unclean) {
        mark(b, 1);
        put(b, 0);
    }
    mark(b, 0);
    put(b, s->stale_accepts);
    put_pvs(b, items, s->zapp, s->nzapp);
    put(b, s->produced);
    put(b, s->crashes);
    put(b, s->pauses);
    put(b, s->shutdowns);
    put(b, s->reassignments);
    put_pvs(b, items, s->zc, s->nzc);
    mark(b, 0); /* stop_replica () */
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

static void expect_end(Rd *r);

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

static void decode(const u8 *p, int len, S *s) {
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
    if (!more(r)) die("bad state encoding (no partition)");
    s->zn_leader = (i8)get(r);
    s->zn_leader_epoch = (i8)get(r);
    s->zn_isr = get_set(r);
    s->zn_zk_version = (i8)get(r);
    s->zn_ar = get_set(r);
    if (get_set(r)) die("reassignment (rar) is not supported by the native search");
    expect_end(r);
    for (int x = 0; x < n; x++) {
        if (!more(r)) die("bad state encoding (brokers)");
        Broker *br = &s->br[x];
        Replica *q = &br->r;
        br->status = (i8)get(r);
        br->is_controller = (i8)get(r);
        br->controller_epoch = (i8)get(r);
        br->broker_epoch = (i8)get(r);
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
        expect_end(r);
        br->new_brokers = get_set(r);
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
    while (more(r)) {
        if (get(r) != 0) die("bad state encoding (unclean partition)");
        s->unclean = 1;
    }
    s->stale_accepts = (i8)get(r);
    s->nzapp = (i8)get_pvs(r, s->zapp, "zombie appends");
    s->produced = (i8)get(r);
    s->crashes = (i8)get(r);
    s->pauses = (i8)get(r);
    s->shutdowns = (i8)get(r);
    s->reassignments = (i8)get(r);
    s->nzc = (i8)get_pvs(r, s->zc, "zombie commits");
    if (more(r)) die("StopReplica requests are not supported by the native search");
    if (r->i != len) die("bad state encoding (trailing bytes)");
}

/* ---------------------------------------------------------------------------------------
 * model/state.py initial
 * ------------------------------------------------------------------------------------- */

static void initial(S *s) {
    int n = C.brokers;
    memset(s, 0, sizeof *s);
    u8 everyone = (u8)((1 << n) - 1);
    s->controller = 0;
    s->controller_epoch = 1;
    s->live = everyone;
    for (int b = 0; b < n; b++) s->broker_epochs[b] = 1;
    s->zxid = 1;
    s->zn_leader = 0;
    s->zn_leader_epoch = 1;
    s->zn_isr = everyone;
    s->zn_zk_version = 0;
    s->zn_ar = everyone;
    for (int b = 0; b < n; b++) {
        Broker *br = &s->br[b];
        Replica *r = &br->r;
        br->status = UP;
        br->is_controller = b == 0;
        br->controller_epoch = 1;
        br->broker_epoch = 1;
        for (int y = 0; y < n; y++) r->follower_leo[y] = UNKNOWN;
        if (b == 0) {
            r->role = LEADER;
            r->leader = 0;
            r->leader_epoch = 1;
            r->isr = everyone;
            r->zk_version = 0;
            r->fetch_state = IDLE;
        } else {
            r->role = FOLLOWER;
            r->leader = 0;
            r->leader_epoch = 1;
            r->zk_version = -1;
            r->fetch_state = FETCHING;
        }
    }
    s->nled = 1;
    s->led[0] = (Led){0, 1, 0};
}

/* ---------------------------------------------------------------------------------------
 * model/truncation.py
 * ------------------------------------------------------------------------------------- */

static int end_offset_for_epoch(const Entry *log, int len, int epoch, int current) {
    if (current >= 0 && epoch == current) return len;
    for (int i = 0; i < len; i++)
        if (log[i].epoch > epoch) return i;
    return len;
}

static int truncation_point(const Replica *f, const Replica *l) {
    int flen = f->loglen;
    if (C.truncation == T_HW) return f->hw < flen ? f->hw : flen;
    if (!flen) return 0;
    int latest = f->log[flen - 1].epoch;
    int lepoch = l->leader_epoch;
    if (C.truncation == T_KIP101) {
        int e = end_offset_for_epoch(l->log, l->loglen, latest, lepoch);
        return flen < e ? flen : e;
    }
    /* kip279 / kip320 (model/truncation.py kip279): rounds until the follower has the
     * epoch the leader answers with */
    for (;;) {
        if (!flen) return 0;
        latest = f->log[flen - 1].epoch;
        /* the largest epoch the leader knows that is <= latest */
        int common = -1000;
        for (int i = 0; i < l->loglen; i++)
            if (l->log[i].epoch <= latest && l->log[i].epoch > common) common = l->log[i].epoch;
        if (lepoch <= latest && lepoch > common) common = lepoch;
        if (common == -1000) return 0;
        /* the follower's own largest epoch <= common */
        int ours = -1000;
        for (int i = 0; i < flen; i++)
            if (f->log[i].epoch <= common && f->log[i].epoch > ours) ours = f->log[i].epoch;
        if (ours == -1000) return 0;
        int fe = end_offset_for_epoch(f->log, flen, ours, -1);
        if (ours != common) { flen = fe; continue; }  /* it never had that epoch: ask again */
        int le = end_offset_for_epoch(l->log, l->loglen, common, lepoch);
        return le < fe ? le : fe;
    }
}

/* ---------------------------------------------------------------------------------------
 * model/actions/ -- each function returns 0 when its guard does not hold, else applies
 * its effect to *s (a copy of the state it was given) and returns 1.
 * ------------------------------------------------------------------------------------- */

static void unknown_leo(Replica *r) {
    for (int y = 0; y < MAXB; y++) r->follower_leo[y] = y < C.brokers ? UNKNOWN : 0;
}

static int superseded(const S *s, int epoch) {
    for (int i = 0; i < s->nled; i++)
        if (s->led[i].p == 0 && s->led[i].epoch > epoch) return 1;
    return 0;
}

static int pv_in(const PV *arr, int n, int p, int value) {
    for (int i = 0; i < n; i++)
        if (arr[i].p == p && arr[i].value == value) return 1;
    return 0;
}

/* advance_hw: leader.hw = min LEO of the ISR, never backwards; commits and acks */
static void advance_hw(S *s, int b) {
    Replica *r = &s->br[b].r;
    int new_hw = 1000;
    for (int x = 0; x < C.brokers; x++)
        if (has(r->isr, x)) {
            int leo = x == b ? r->loglen : r->follower_leo[x];
            if (leo < new_hw) new_hw = leo;
        }
    if (new_hw == 1000 || new_hw <= r->hw) return;
    int sup = superseded(s, r->leader_epoch);
    for (int off = r->hw; off < new_hw; off++) {
        Entry e = r->log[off];
        Committed c;
        memset(&c, 0, sizeof c);
        c.p = 0;
        c.offset = (i8)off;
        c.e = e;
        SET_ADD(s->committed, s->ncommitted, MAXCOMMIT, c);
        if (e.epoch == r->leader_epoch && popcount8(r->isr) >= C.min_insync) {
            PV a = {0, e.value};
            SET_ADD(s->acked, s->nacked, MAXSMALL, a);
        }
        if (sup && pv_in(s->zapp, s->nzapp, 0, e.value)) {
            PV z = {0, e.value};
            SET_ADD(s->zc, s->nzc, MAXSMALL, z);
        }
    }
    r->hw = (i8)new_hw;
}

/* _deregister, and _unannounce: a registration gone before the controller started it */
static void deregister(S *s, int b) {
    s->live &= (u8)~(1 << b);
    if (s->controller == b) s->controller = NO_LEADER;
    for (int x = 0; x < C.brokers; x++) s->br[x].new_brokers &= (u8)~(1 << b);
}

/* _announce: the controller's broker-change watch will run onBrokerStartup for b once */
static void announce(S *s, int b) {
    int c = s->controller;
    if (c != NO_LEADER) s->br[c].new_brokers |= (u8)(1 << b);
}

/* _stops_controlling: no longer controller, and its owed startups go with it */
static void stop_controlling(Broker *br) {
    br->is_controller = 0;
    br->new_brokers = 0;
}

static int addressee(const Fetch *m) { return m->kind == FETCH_REQUEST ? m->leader : m->follower; }

static void process_ends(S *s, int b) {
    Broker *br = &s->br[b];
    Replica *r = &br->r;
    r->role = NONE;
    r->leader = NO_LEADER;
    r->isr = 0;
    r->zk_version = -1;
    r->fetch_state = IDLE;
    unknown_leo(r);
    r->epoch_start = 0;
    br->status = DOWN;
    stop_controlling(br);
    for (int i = s->nfetch - 1; i >= 0; i--)
        if (addressee(&s->fetch[i]) == b) remove_fetch_at(s, i);
    deregister(s, b);
}

static int broker_crash(S *s, int b) {
    if (s->br[b].status != UP || s->crashes >= C.max_crashes) return 0;
    process_ends(s, b);
    s->crashes++;
    return 1;
}

static void do_register(S *s, int b) {
    s->zxid++;
    s->live |= (u8)(1 << b);
    s->broker_epochs[b] = s->zxid;
}

static void cut_log(Replica *r, int cut) {
    for (int i = cut; i < r->loglen; i++) r->log[i] = (Entry){0, 0};
    if (cut < r->loglen) r->loglen = (i8)cut;
    if (r->hw > cut) r->hw = (i8)cut;
}

/* _follow: the design truncates to its own HW at once; KIP-101 on reconcile first */
static void follow(Replica *r, int leader, int epoch) {
    if (C.truncation == T_HW) {
        cut_log(r, truncation_point(r, NULL));
        r->fetch_state = FETCHING;
    } else {
        r->fetch_state = TRUNCATING;
    }
    r->role = FOLLOWER;
    r->leader = (i8)leader;
    r->leader_epoch = (i8)epoch;
    r->isr = 0;
    r->zk_version = -1;
    unknown_leo(r);
    r->epoch_start = 0;
}

static int broker_restart(S *s, int b) {
    Broker *br = &s->br[b];
    if (br->status != DOWN) return 0;
    do_register(s, b);
    for (int i = s->nfetch - 1; i >= 0; i--)
        if (s->fetch[i].follower == b) remove_fetch_at(s, i);
    br->status = UP;
    br->is_controller = 0;
    if (s->controller_epoch > br->controller_epoch) br->controller_epoch = s->controller_epoch;
    br->broker_epoch = s->zxid;
    announce(s, b);
    /* every broker is in the AR (no reassignment) */
    Replica *r = &br->r;
    int epoch = r->leader_epoch > s->zn_leader_epoch ? r->leader_epoch : s->zn_leader_epoch;
    if (s->zn_leader == b) {
        r->role = LEADER;
        r->leader = (i8)b;
        r->leader_epoch = (i8)epoch;
        r->isr = s->zn_isr;
        r->zk_version = s->zn_zk_version;
        r->fetch_state = IDLE;
        unknown_leo(r);
        r->epoch_start = r->loglen;
        advance_hw(s, b);
    } else if (s->zn_leader == NO_LEADER) {
        r->role = FOLLOWER;
        r->leader = NO_LEADER;
        r->leader_epoch = (i8)epoch;
    } else {
        follow(r, s->zn_leader, epoch);
    }
    return 1;
}

static int broker_pause(S *s, int b) {
    if (s->br[b].status != UP || s->pauses >= C.max_pauses) return 0;
    s->br[b].status = PAUSED;
    s->pauses++;
    deregister(s, b);
    return 1;
}

static int broker_resume(S *s, int b) {
    if (s->br[b].status != PAUSED) return 0;
    s->br[b].status = UP;
    return 1;
}

static int broker_reregister(S *s, int b) {
    if (s->br[b].status != UP || has(s->live, b)) return 0;
    do_register(s, b);
    s->br[b].broker_epoch = s->zxid;
    announce(s, b);
    return 1;
}

static int max_broker_epoch(const S *s) {
    int m = 0;
    for (int b = 0; b < C.brokers; b++)
        if (has(s->live, b) && s->broker_epochs[b] > m) m = s->broker_epochs[b];
    return m;
}

static Lai make_lai(int to, int leader, int epoch, u8 isr, int zkv, int cepoch, int mbe) {
    Lai m;
    memset(&m, 0, sizeof m);
    m.to = (i8)to;
    m.partition = 0;
    m.leader = (i8)leader;
    m.leader_epoch = (i8)epoch;
    m.isr = isr;
    m.zk_version = (i8)zkv;
    m.controller_epoch = (i8)cepoch;
    m.max_broker_epoch = (i8)mbe;
    return m;
}

static int controller_elect(S *s, int b) {
    Broker *br = &s->br[b];
    if (s->controller != NO_LEADER || br->status != UP || !has(s->live, b)) return 0;
    int epoch = s->controller_epoch + 1;
    s->controller = (i8)b;
    s->controller_epoch = (i8)epoch;
    br->is_controller = 1;
    br->controller_epoch = (i8)epoch;
    br->new_brokers = 0;
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(s->zn_ar, to))
            add_lai(s, make_lai(to, s->zn_leader, s->zn_leader_epoch, s->zn_isr, s->zn_zk_version, epoch, mbe));
    return 1;
}

static int controller_resign(S *s, int b) {
    Broker *br = &s->br[b];
    if (br->status != UP || !br->is_controller) return 0;
    if (s->controller == b && s->controller_epoch == br->controller_epoch) return 0;
    stop_controlling(br);
    return 1;
}

typedef struct { int leader; u8 isr; int unclean; } Outcome;

/* election_outcomes (seed 000 A 3.2) */
static int election_outcomes(const S *s, Outcome *out) {
    int n = 0;
    u8 live_isr = s->zn_isr & s->live;
    if (s->zn_leader != NO_LEADER && has(s->live, s->zn_leader)) {
        if (live_isr == s->zn_isr) return 0;
        out[n++] = (Outcome){s->zn_leader, live_isr, 0};
        return n;
    }
    if (live_isr) {
        for (int b = 0; b < C.brokers; b++)
            if (has(live_isr, b)) out[n++] = (Outcome){b, live_isr, 0};
        return n;
    }
    if (C.unclean) {
        u8 live_ar = s->zn_ar & s->live;
        if (live_ar) {
            for (int b = 0; b < C.brokers; b++)
                if (has(live_ar, b)) out[n++] = (Outcome){b, (u8)(1 << b), 1};
            return n;
        }
    }
    if (s->zn_leader == NO_LEADER) return 0;
    out[n++] = (Outcome){NO_LEADER, s->zn_isr, 0};
    return n;
}

static int acting_controller(const S *s, int c) {
    const Broker *br = &s->br[c];
    return br->status == UP && br->is_controller && s->controller == c && br->controller_epoch == s->controller_epoch;
}

static void write_and_send(S *s, int leader, u8 isr) {
    s->zn_leader = (i8)leader;
    s->zn_leader_epoch++;
    s->zn_isr = isr;
    s->zn_zk_version++;
    int mbe = max_broker_epoch(s);
    for (int to = 0; to < C.brokers; to++)
        if (has(s->zn_ar, to))
            add_lai(s, make_lai(to, leader, s->zn_leader_epoch, isr, s->zn_zk_version, s->controller_epoch, mbe));
}

static int elect_leader(S *s, int c, int leader) {
    if (!acting_controller(s, c)) return 0;
    if (s->zn_leader_epoch + 1 > C.max_epoch) return 0;
    Outcome out[MAXB + 1];
    int n = election_outcomes(s, out);
    for (int i = 0; i < n; i++) {
        if (out[i].leader != leader) continue;
        write_and_send(s, leader, out[i].isr);
        if (out[i].unclean) s->unclean = 1;
        return 1;
    }
    return 0;
}

static int on_broker_startup(S *s, int c, int b) {
    if (!acting_controller(s, c) || !has(s->br[c].new_brokers, b)) return 0;
    s->br[c].new_brokers &= (u8)~(1 << b);
    if (has(s->zn_ar, b)) {
        Lai m = make_lai(b, s->zn_leader, s->zn_leader_epoch, s->zn_isr, s->zn_zk_version, s->controller_epoch, max_broker_epoch(s));
        add_lai(s, m);
    }
    return 1;
}

/* stale_reason != None */
static int stale(const S *s, const Lai *m) {
    const Broker *br = &s->br[(int)m->to];
    if (m->controller_epoch < br->controller_epoch) return 1;
    if (m->max_broker_epoch < br->broker_epoch) return 1;
    if (m->leader_epoch <= br->r.leader_epoch) return 1;
    return 0;
}

static void accept_request(S *s, const Lai *m) {
    Broker *br = &s->br[(int)m->to];
    if (m->controller_epoch < br->controller_epoch || m->max_broker_epoch < br->broker_epoch) s->stale_accepts++;
    if (m->controller_epoch > br->controller_epoch) {
        br->controller_epoch = m->controller_epoch;
        stop_controlling(br);
    }
}

static void drop_responses_to(S *s, int b) {
    for (int i = s->nfetch - 1; i >= 0; i--)
        if (s->fetch[i].kind == FETCH_RESPONSE && s->fetch[i].follower == b && s->fetch[i].partition == 0) remove_fetch_at(s, i);
}

static int become_leader(S *s, Lai m) {
    int b = m.to;
    if (m.leader != b || s->br[b].status != UP) return 0;
    if (stale(s, &m)) return 0;
    accept_request(s, &m);
    drop_responses_to(s, b);
    Replica *r = &s->br[b].r;
    r->role = LEADER;
    r->leader = (i8)b;
    r->leader_epoch = m.leader_epoch;
    r->isr = m.isr;
    r->zk_version = m.zk_version;
    r->fetch_state = IDLE;
    unknown_leo(r);
    r->epoch_start = r->loglen;
    Led l = {0, m.leader_epoch, (i8)b};
    SET_ADD(s->led, s->nled, MAXLED, l);
    advance_hw(s, b);
    return 1;
}

static int become_follower(S *s, Lai m) {
    int b = m.to;
    if (m.leader == b || s->br[b].status != UP) return 0;
    if (stale(s, &m)) return 0;
    accept_request(s, &m);
    Replica *r = &s->br[b].r;
    if (m.leader == NO_LEADER) {
        drop_responses_to(s, b);
        r->role = FOLLOWER;
        r->leader = NO_LEADER;
        r->leader_epoch = m.leader_epoch;
        r->isr = 0;
        r->zk_version = -1;
        r->fetch_state = IDLE;
        unknown_leo(r);
        r->epoch_start = 0;
        return 1;
    }
    int already = r->role == FOLLOWER && r->leader == m.leader && !C.refollow;
    if (already) {
        r->leader_epoch = m.leader_epoch;
        return 1;
    }
    drop_responses_to(s, b);
    follow(r, m.leader, m.leader_epoch);
    return 1;
}

static int truncate_log(S *s, int f) {
    Replica *r = &s->br[f].r;
    if (s->br[f].status != UP || r->role != FOLLOWER || r->fetch_state != TRUNCATING) return 0;
    if (r->leader == NO_LEADER || s->br[(int)r->leader].status != UP) return 0;
    const Replica *lr = &s->br[(int)r->leader].r;
    if (lr->role != LEADER || (C.fenced && lr->leader_epoch != r->leader_epoch)) return 0;
    int cut = truncation_point(r, lr);
    cut_log(r, cut);
    r->fetch_state = FETCHING;
    return 1;
}

static int produce(S *s, int b) {
    Replica *r = &s->br[b].r;
    if (s->br[b].status != UP || r->role != LEADER || s->produced >= C.records) return 0;
    if (popcount8(r->isr) < C.min_insync) return 0;
    int value = s->produced + 1;
    if (r->loglen >= MAXREC) die("log overflow");
    r->log[(int)r->loglen++] = (Entry){(i8)value, r->leader_epoch};
    s->produced = (i8)value;
    if (superseded(s, r->leader_epoch)) {
        PV z = {0, (i8)value};
        SET_ADD(s->zapp, s->nzapp, MAXSMALL, z);
    }
    advance_hw(s, b);
    return 1;
}

static Fetch make_fetch(int kind, int follower, int leader, int offset, int epoch, int hw, int error) {
    Fetch m;
    memset(&m, 0, sizeof m); /* unused bytes zero: sets compare messages bytewise */
    m.kind = (i8)kind;
    m.follower = (i8)follower;
    m.leader = (i8)leader;
    m.partition = 0;
    m.offset = (i8)offset;
    m.epoch = (i8)epoch;
    m.hw = (i8)hw;
    m.error = (i8)error;
    return m;
}

static int send_fetch(S *s, int f) {
    Replica *r = &s->br[f].r;
    if (s->br[f].status != UP || r->role != FOLLOWER || r->fetch_state != FETCHING || r->leader == NO_LEADER) return 0;
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        if (m->follower == f && m->partition == 0 && m->leader == r->leader) return 0;
    }
    add_fetch(s, make_fetch(FETCH_REQUEST, f, r->leader, r->loglen, r->leader_epoch, -1, OK));
    return 1;
}

static int handle_fetch(S *s, Fetch m) {
    if (m.kind != FETCH_REQUEST) return 0;
    int i = find_fetch(s, &m);
    if (i < 0) return 0;
    int lb = m.leader;
    Replica *lr = &s->br[lb].r;
    if (s->br[lb].status != UP || lr->role != LEADER) return 0;
    remove_fetch_at(s, i);
    if (C.fenced && m.epoch != lr->leader_epoch) return 1;
    if (m.offset > lr->loglen) {
        add_fetch(s, make_fetch(FETCH_RESPONSE, m.follower, lb, m.offset, lr->leader_epoch, lr->loglen, OUT_OF_RANGE));
        return 1;
    }
    lr->follower_leo[(int)m.follower] = m.offset;
    advance_hw(s, lb);
    Fetch resp = make_fetch(FETCH_RESPONSE, m.follower, lb, m.offset, lr->leader_epoch, lr->hw, OK);
    resp.nrec = (i8)(lr->loglen - m.offset);
    for (int k = 0; k < resp.nrec; k++) resp.rec[k] = lr->log[m.offset + k];
    add_fetch(s, resp);
    return 1;
}

static int receive_fetch(S *s, Fetch m) {
    if (m.kind != FETCH_RESPONSE) return 0;
    int i = find_fetch(s, &m);
    if (i < 0) return 0;
    int f = m.follower;
    if (s->br[f].status != UP) return 0;
    remove_fetch_at(s, i);
    Replica *r = &s->br[f].r;
    if (r->role != FOLLOWER || r->leader != m.leader || r->fetch_state != FETCHING || m.offset != r->loglen ||
        (C.fenced && m.epoch != r->leader_epoch))
        return 1;
    if (m.error == OUT_OF_RANGE) {
        int cut = m.hw < r->loglen ? m.hw : r->loglen;
        cut_log(r, cut);
        return 1;
    }
    if (r->loglen + m.nrec > MAXREC) die("log overflow");
    for (int k = 0; k < m.nrec; k++) r->log[(int)r->loglen++] = m.rec[k];
    r->hw = m.hw < r->loglen ? m.hw : r->loglen;
    return 1;
}

static int conditional_isr_write(S *s, int b, u8 isr) {
    Replica *lr = &s->br[b].r;
    if (s->zn_zk_version != lr->zk_version) return 0;
    s->zn_isr = isr;
    s->zn_zk_version++;
    lr->isr = isr;
    lr->zk_version = s->zn_zk_version;
    advance_hw(s, b);
    return 1;
}

static int shrink_isr(S *s, int b, int f) {
    Replica *lr = &s->br[b].r;
    if (s->br[b].status != UP || lr->role != LEADER || f == b || !has(lr->isr, f)) return 0;
    if (lr->follower_leo[f] >= lr->loglen) return 0;
    return conditional_isr_write(s, b, lr->isr & (u8)~(1 << f));
}

static int expand_isr(S *s, int b, int f) {
    Replica *lr = &s->br[b].r;
    if (s->br[b].status != UP || lr->role != LEADER || has(lr->isr, f) || !has(s->zn_ar, f)) return 0;
    int leo = lr->follower_leo[f];
    if (leo == UNKNOWN || leo < lr->hw || (C.fenced && leo < lr->epoch_start)) return 0;
    return conditional_isr_write(s, b, lr->isr | (u8)(1 << f));
}

static int isr_update_failed(S *s, int b) {
    Replica *lr = &s->br[b].r;
    if (s->br[b].status != UP || lr->role != LEADER || s->zn_zk_version == lr->zk_version) return 0;
    lr->role = NONE;
    lr->leader = NO_LEADER;
    lr->isr = 0;
    lr->zk_version = -1;
    unknown_leo(lr);
    lr->epoch_start = 0;
    return 1;
}

static void forget_stale_requests(S *s) {
    for (int i = s->nlai - 1; i >= 0; i--)
        if (stale(s, &s->lai[i])) remove_lai_at(s, i);
}

/* ---------------------------------------------------------------------------------------
 * Successors, in model.actions.EXPLORED order (self-loops omitted)
 * ------------------------------------------------------------------------------------- */

static const int IDENTITY[MAXB] = {0, 1, 2, 3};

typedef struct {
    S s;
    u8 enc[MAXENC]; /* encoding of s itself (identity renaming), to omit self-loops */
    int enclen;
} Expanding;

typedef void (*Emit)(void *ctx, const S *t);

static int differs(const Expanding *x, const S *t) {
    u8 buf[MAXENC];
    int n = encode(t, IDENTITY, buf);
    return n != x->enclen || memcmp(buf, x->enc, (size_t)n) != 0;
}

#define TRY(call)                                  \
    do {                                           \
        t = x->s;                                  \
        if (call) {                                \
            forget_stale_requests(&t);             \
            if (differs(x, &t)) emit(ctx, &t);     \
        }                                          \
    } while (0)

static void successors(const Expanding *x, Emit emit, void *ctx) {
    const S *s = &x->s;
    int n = C.brokers;
    S t;
    for (int b = 0; b < n; b++) TRY(broker_crash(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_restart(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_pause(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_resume(&t, b));
    for (int b = 0; b < n; b++) TRY(broker_reregister(&t, b));
    for (int b = 0; b < n; b++) TRY(controller_elect(&t, b));
    for (int b = 0; b < n; b++) TRY(controller_resign(&t, b));
    if (s->controller != NO_LEADER) {
        Outcome out[MAXB + 1];
        int k = election_outcomes(s, out);
        for (int i = 0; i < k; i++) TRY(elect_leader(&t, s->controller, out[i].leader));
        for (int b = 0; b < n; b++)
            if (has(s->br[s->controller].new_brokers, b)) TRY(on_broker_startup(&t, s->controller, b));
    }
    for (int i = 0; i < s->nlai; i++) TRY(become_leader(&t, s->lai[i]));
    for (int i = 0; i < s->nlai; i++) TRY(become_follower(&t, s->lai[i]));
    for (int b = 0; b < n; b++) TRY(truncate_log(&t, b));
    for (int b = 0; b < n; b++) TRY(produce(&t, b));
    for (int b = 0; b < n; b++) TRY(send_fetch(&t, b));
    for (int i = 0; i < s->nfetch; i++) TRY(handle_fetch(&t, s->fetch[i]));
    for (int i = 0; i < s->nfetch; i++) TRY(receive_fetch(&t, s->fetch[i]));
    for (int b = 0; b < n; b++)
        for (int f = 0; f < n; f++)
            if (f != b) TRY(shrink_isr(&t, b, f));
    for (int b = 0; b < n; b++)
        for (int f = 0; f < n; f++)
            if (f != b) TRY(expand_isr(&t, b, f));
    for (int b = 0; b < n; b++) TRY(isr_update_failed(&t, b));
}

/* ---------------------------------------------------------------------------------------
 * properties/checkers/reduction.py: the free step and the normal form
 * ------------------------------------------------------------------------------------- */

static int take(const Expanding *x, S *t, int ok) {
    if (!ok) return 0;
    forget_stale_requests(t);
    return differs(x, t);
}

/* 1 and the successor in *t if the state has a free (ample) step */
static int free_step(const Expanding *x, S *t) {
    const S *s = &x->s;
    if (!C.fenced) return 0;
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        if (m->kind == FETCH_REQUEST && m->epoch < s->br[(int)m->leader].r.leader_epoch) {
            *t = *s;
            if (take(x, t, handle_fetch(t, *m))) return 1;
        }
    }
    for (int i = 0; i < s->nfetch; i++) {
        const Fetch *m = &s->fetch[i];
        if (m->kind != FETCH_RESPONSE) continue;
        const Replica *r = &s->br[(int)m->follower].r;
        int dead = m->epoch < r->leader_epoch;
        int empty = m->error == OK && m->nrec == 0 && r->role == FOLLOWER && r->leader == m->leader &&
                    r->fetch_state == FETCHING && m->offset == r->loglen && m->epoch == r->leader_epoch &&
                    (m->hw < r->loglen ? m->hw : r->loglen) == r->hw;
        if (dead || empty) {
            *t = *s;
            if (take(x, t, receive_fetch(t, *m))) return 1;
        }
    }
    for (int f = 0; f < C.brokers; f++) {
        const Replica *r = &s->br[f].r;
        if (r->fetch_state == FETCHING && r->leader != NO_LEADER && s->br[(int)r->leader].r.leader_epoch <= r->leader_epoch) {
            *t = *s;
            if (take(x, t, send_fetch(t, f))) return 1;
        }
    }
    return 0;
}

static void normal_form(S *s) {
    int any_down = 0;
    for (int b = 0; b < C.brokers; b++) any_down |= s->br[b].status == DOWN;
    if (!any_down) return;
    for (int i = s->nfetch - 1; i >= 0; i--)
        if (s->fetch[i].kind == FETCH_RESPONSE && s->br[(int)s->fetch[i].follower].status == DOWN) remove_fetch_at(s, i);
    for (int i = s->nlai - 1; i >= 0; i--)
        if (s->br[(int)s->lai[i].to].status == DOWN) remove_lai_at(s, i);
}

/* ---------------------------------------------------------------------------------------
 * properties/checkers/symmetry.py: rename_versions, candidate_permutations, canonical
 * ------------------------------------------------------------------------------------- */

static void rename_versions(S *s) {
    /* zk_versions, dense from 0; zxids (broker epochs), dense from 1 */
    int vs[2 + MAXB + MAXLAI], nv = 0;
    int zs[2 + 2 * MAXB + MAXLAI], nz = 0;
    vs[nv++] = s->zn_zk_version;
    for (int b = 0; b < C.brokers; b++)
        if (s->br[b].r.zk_version >= 0) vs[nv++] = s->br[b].r.zk_version;
    for (int i = 0; i < s->nlai; i++) vs[nv++] = s->lai[i].zk_version;
    for (int b = 0; b < C.brokers; b++) zs[nz++] = s->broker_epochs[b];
    for (int b = 0; b < C.brokers; b++) zs[nz++] = s->br[b].broker_epoch;
    for (int i = 0; i < s->nlai; i++) zs[nz++] = s->lai[i].max_broker_epoch;
    zs[nz++] = s->zxid;
    /* rank = number of distinct values below it */
    int vmap[256], zmap[256];
    u8 vpresent[256] = {0}, zpresent[256] = {0};
    for (int i = 0; i < nv; i++) vpresent[vs[i] + 128] = 1;
    for (int i = 0; i < nz; i++) zpresent[zs[i] + 128] = 1;
    int rank = 0;
    for (int v = 0; v < 256; v++)
        if (vpresent[v]) vmap[v] = rank++;
    rank = 1;
    for (int v = 0; v < 256; v++)
        if (zpresent[v]) zmap[v] = rank++;
#define VM(x) ((i8)vmap[(x) + 128])
#define ZM(x) ((i8)zmap[(x) + 128])
    s->zn_zk_version = VM(s->zn_zk_version);
    for (int b = 0; b < C.brokers; b++) {
        if (s->br[b].r.zk_version >= 0) s->br[b].r.zk_version = VM(s->br[b].r.zk_version);
        s->broker_epochs[b] = ZM(s->broker_epochs[b]);
        s->br[b].broker_epoch = ZM(s->br[b].broker_epoch);
    }
    for (int i = 0; i < s->nlai; i++) {
        s->lai[i].zk_version = VM(s->lai[i].zk_version);
        s->lai[i].max_broker_epoch = ZM(s->lai[i].max_broker_epoch);
    }
    s->zxid = ZM(s->zxid);
#undef VM
#undef ZM
}

typedef struct { u8 bytes[64]; int n; int b; } Sig;

static void signature(const S *s, int b, Sig *sig) {
    const Broker *br = &s->br[b];
    const Replica *r = &br->r;
    Buf B = {sig->bytes, 0}, *o = &B;
    mark(o, 1); put(o, br->status);
    mark(o, 1); put(o, br->is_controller);
    mark(o, 1); put(o, br->controller_epoch);
    mark(o, 1); put(o, br->broker_epoch);
    mark(o, 1); put(o, has(s->live, b));
    mark(o, 1); put(o, s->controller == b);
    mark(o, 1);
    mark(o, 1); /* the one partition's tuple */
    mark(o, 1); put(o, r->role);
    mark(o, 1); put(o, r->leader == b);
    mark(o, 1); put(o, r->leader_epoch);
    mark(o, 1); put_log(o, r->log, r->loglen);
    mark(o, 1); put(o, r->hw);
    mark(o, 1); put(o, r->fetch_state);
    mark(o, 1); put(o, popcount8(r->isr));
    mark(o, 1); put(o, s->zn_leader == b);
    mark(o, 1); put(o, has(s->zn_isr, b));
    mark(o, 0);
    mark(o, 0);
    mark(o, 0);
    sig->n = o->n;
    sig->b = b;
}

static int sig_cmp(const Sig *x, const Sig *y) {
    int n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->bytes, y->bytes, (size_t)n);
    return c ? c : x->n - y->n;
}

/* candidate_permutations: perms[k][old] = new; returns how many */
static int candidate_permutations(const S *s, int perms[][MAXB]) {
    int n = C.brokers;
    Sig sigs[MAXB];
    for (int b = 0; b < n; b++) signature(s, b, &sigs[b]);
    /* stable insertion sort of broker ids by signature */
    int order[MAXB];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) {
        int v = order[i], j = i - 1;
        while (j >= 0 && sig_cmp(&sigs[order[j]], &sigs[v]) > 0) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
    /* groups of equal signatures: [start, end) in order */
    int gstart[MAXB], gend[MAXB], ng = 0;
    for (int i = 0; i < n; i++) {
        if (ng && sig_cmp(&sigs[order[gstart[ng - 1]]], &sigs[order[i]]) == 0) {
            gend[ng - 1] = i + 1;
        } else {
            gstart[ng] = i;
            gend[ng] = i + 1;
            ng++;
        }
    }
    /* every arrangement within each group: enumerate permutations of positions */
    int count = 0;
    /* recursive enumeration via explicit stack over groups (n <= 4: at most 24) */
    int total = 1;
    for (int g = 0; g < ng; g++) {
        int k = gend[g] - gstart[g];
        for (int f = 2; f <= k; f++) total *= f;
    }
    for (int idx = 0; idx < total; idx++) {
        int rem = idx;
        int arr[MAXB];
        memcpy(arr, order, sizeof arr);
        for (int g = 0; g < ng; g++) {
            int k = gend[g] - gstart[g];
            /* the rem-th permutation (factorial number system) of the group's members */
            int pool[MAXB], np = k;
            for (int i = 0; i < k; i++) pool[i] = order[gstart[g] + i];
            int fact = 1;
            for (int f = 2; f <= k; f++) fact *= f;
            int code = rem % fact;
            rem /= fact;
            for (int i = 0; i < k; i++) {
                int f = 1;
                for (int j = 2; j <= k - 1 - i; j++) f *= j;
                int pick = code / f;
                code %= f;
                arr[gstart[g] + i] = pool[pick];
                for (int j = pick; j < np - 1; j++) pool[j] = pool[j + 1];
                np--;
            }
        }
        for (int pos = 0; pos < n; pos++) perms[count][arr[pos]] = pos;
        count++;
    }
    return count;
}

/* The canonical encoding of s (s is renamed in place); returns its length. */
static int canonical(S *s, u8 *out) {
    rename_versions(s);
    int perms[24][MAXB];
    int k = candidate_permutations(s, perms);
    int best = encode(s, perms[0], out);
    u8 buf[MAXENC];
    for (int i = 1; i < k; i++) {
        int n = encode(s, perms[i], buf);
        int m = n < best ? n : best;
        int c = memcmp(buf, out, (size_t)m);
        if (c < 0 || (c == 0 && n < best)) {
            memcpy(out, buf, (size_t)n);
            best = n;
        }
    }
    return best;
}

/* search_key: the state the search stores for t */
static int key(const S *t, u8 *out) {
    S c = *t;
    if (C.reduction) normal_form(&c);
    if (C.symmetry) return canonical(&c, out);
    return encode(&c, IDENTITY, out);
}

/* ---------------------------------------------------------------------------------------
 * properties/safety.py: 1 when some property breaks
 * ------------------------------------------------------------------------------------- */

static int log_has_value(const Replica *r, int value) {
    for (int i = 0; i < r->loglen; i++)
        if (r->log[i].value == value) return 1;
    return 0;
}

static int state_violation(const S *s) {
    int n = C.brokers;
    /* hw_le_leo */
    for (int b = 0; b < n; b++)
        if (s->br[b].r.hw > s->br[b].r.loglen) return 1;
    /* single_committing_leader */
    for (int i = 0; i < s->nled; i++)
        for (int j = i + 1; j < s->nled; j++)
            if (s->led[i].p == s->led[j].p && s->led[i].epoch == s->led[j].epoch && s->led[i].b != s->led[j].b) return 1;
    for (int i = 0; i < s->ncommitted; i++)
        for (int j = i + 1; j < s->ncommitted; j++)
            if (s->committed[i].p == s->committed[j].p && s->committed[i].offset == s->committed[j].offset &&
                memcmp(&s->committed[i].e, &s->committed[j].e, sizeof(Entry)) != 0)
                return 1;
    /* committed_durable */
    if (s->zn_leader != NO_LEADER) {
        const Replica *r = &s->br[(int)s->zn_leader].r;
        for (int i = 0; i < s->ncommitted; i++) {
            int off = s->committed[i].offset;
            if (off >= r->loglen || r->log[off].value != s->committed[i].e.value || r->log[off].epoch != s->committed[i].e.epoch)
                return 1;
        }
    }
    /* replicas_consistent */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const Replica *x = &s->br[a].r, *y = &s->br[b].r;
            int upto = x->hw < y->hw ? x->hw : y->hw;
            int lx = upto < x->loglen ? upto : x->loglen;
            int ly = upto < y->loglen ? upto : y->loglen;
            if (lx != ly) return 1;
            for (int i = 0; i < lx; i++)
                if (x->log[i].value != y->log[i].value || x->log[i].epoch != y->log[i].epoch) return 1;
        }
    /* isr_well_formed */
    if (s->zn_leader != NO_LEADER && (!has(s->zn_isr, s->zn_leader) || (s->zn_isr & ~s->zn_ar))) return 1;
    /* single_controller */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (s->br[a].is_controller && s->br[b].is_controller && s->br[a].controller_epoch == s->br[b].controller_epoch) return 1;
    if (s->stale_accepts) return 1;
    /* acked_durable */
    if (s->zn_leader != NO_LEADER) {
        const Replica *r = &s->br[(int)s->zn_leader].r;
        for (int i = 0; i < s->nacked; i++)
            if (!log_has_value(r, s->acked[i].value)) return 1;
    }
    /* zombie_cannot_commit */
    if (s->nzc) return 1;
    /* epoch_monotonic (along logs) */
    for (int b = 0; b < n; b++) {
        const Replica *r = &s->br[b].r;
        for (int i = 1; i < r->loglen; i++)
            if (r->log[i].epoch < r->log[i - 1].epoch) return 1;
    }
    return 0;
}

static int transition_violation(const S *a, const S *b) {
    if (b->controller_epoch < a->controller_epoch) return 1;
    if (b->zn_leader_epoch < a->zn_leader_epoch) return 1;
    if (b->zn_leader != a->zn_leader && b->zn_leader_epoch <= a->zn_leader_epoch) return 1;
    for (int x = 0; x < C.brokers; x++)
        if (b->br[x].r.leader_epoch < a->br[x].r.leader_epoch) return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Fingerprints: properties/checkers/native.py ``fingerprint`` computes the same function
 * ------------------------------------------------------------------------------------- */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t fingerprint(const u8 *p, int n) {
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

/* ---------------------------------------------------------------------------------------
 * The seen-set: open addressing over 64-bit fingerprints
 * ------------------------------------------------------------------------------------- */

static uint64_t *seen;
static uint64_t seen_cap, seen_count;
static double seen_budget;     /* bytes the table may take while growing (0: no limit) */
static volatile int seen_full; /* growing would pass the budget: the search stops (max_memory) */

static int seen_has(uint64_t fp) {
    uint64_t mask = seen_cap - 1;
    for (uint64_t i = fp & mask;; i = (i + 1) & mask) {
        if (seen[i] == fp) return 1;
        if (!seen[i]) return 0;
    }
}

static void seen_grow(void);

static int seen_add(uint64_t fp) {
    if ((seen_count + 1) * 10 > seen_cap * 7 && !seen_full) seen_grow();
    if ((seen_count + 1) * 100 > seen_cap * 97) die("the seen-set is full (raise --max-memory)");
    uint64_t mask = seen_cap - 1;
    for (uint64_t i = fp & mask;; i = (i + 1) & mask) {
        if (seen[i] == fp) return 0;
        if (!seen[i]) {
            seen[i] = fp;
            seen_count++;
            return 1;
        }
    }
}

static void seen_grow(void) {
    uint64_t old_cap = seen_cap;
    uint64_t *old = seen;
    /* growing holds the old and the new table at once: if that would pass the memory
       budget, keep filling this one (the batch in hand fits) and let the search stop */
    if (old_cap && seen_budget > 0 && (double)(old_cap * 3 * sizeof(uint64_t)) > seen_budget) {
        seen_full = 1;
        return;
    }
    seen_cap = old_cap ? old_cap * 2 : (1 << 20);
    seen = calloc(seen_cap, sizeof(uint64_t));
    if (!seen) die("out of memory (seen-set)");
    seen_count = 0;
    for (uint64_t i = 0; i < old_cap; i++)
        if (old[i]) {
            uint64_t mask = seen_cap - 1;
            for (uint64_t j = old[i] & mask;; j = (j + 1) & mask)
                if (!seen[j]) {
                    seen[j] = old[i];
                    seen_count++;
                    break;
                }
        }
    free(old);
}

/* ---------------------------------------------------------------------------------------
 * Levels: encodings, each prefixed by its length (2 bytes), in one growing arena
 * ------------------------------------------------------------------------------------- */

typedef struct {
    u8 *data;
    size_t len, cap;
    uint64_t count;
} Level;

static void level_add(Level *l, const u8 *enc, int n) {
    if (l->len + (size_t)n + 2 > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : (1 << 20);
        while (cap < l->len + (size_t)n + 2) cap *= 2;
        l->data = realloc(l->data, cap);
        if (!l->data) die("out of memory (level)");
        l->cap = cap;
    }
    l->data[l->len] = (u8)(n & 0xff);
    l->data[l->len + 1] = (u8)(n >> 8);
    memcpy(l->data + l->len + 2, enc, (size_t)n);
    l->len += (size_t)n + 2;
    l->count++;
}

/* A whole level lives in a file of the work directory: written once, in order, as it is
 * found, and read back through a read-only mapping while it is expanded -- so a level costs
 * page cache the kernel can drop, not memory of the search.  Only the seen-set (8 bytes a
 * state) stays in memory. */
typedef struct {
    FILE *f;
    char path[4096];
    const u8 *map;
    size_t len;
    uint64_t count;
} DiskLevel;

static void dl_open(DiskLevel *l, const char *dir, long depth) {
    memset(l, 0, sizeof *l);
    snprintf(l->path, sizeof l->path, "%s/states-%ld", dir, depth);
    l->f = fopen(l->path, "w+b");
    if (!l->f) die("cannot write to the work directory");
    setvbuf(l->f, NULL, _IOFBF, 1 << 20);
}

static void dl_add(DiskLevel *l, const u8 *enc, int n) {
    u8 hdr[2] = {(u8)(n & 0xff), (u8)(n >> 8)};
    if (fwrite(hdr, 1, 2, l->f) != 2 || fwrite(enc, 1, (size_t)n, l->f) != (size_t)n)
        die("cannot write a level to the work directory (disk full?)");
    l->len += (size_t)n + 2;
    l->count++;
}

static void dl_map(DiskLevel *l) {
    if (fflush(l->f) != 0) die("cannot write a level to the work directory (disk full?)");
    if (!l->len) return;
    void *m = mmap(NULL, l->len, PROT_READ, MAP_PRIVATE, fileno(l->f), 0);
    if (m == MAP_FAILED) die("cannot map a level back from the work directory");
    madvise(m, l->len, MADV_SEQUENTIAL);
    l->map = m;
}

static void dl_close(DiskLevel *l) {
    if (l->map) munmap((void *)l->map, l->len);
    if (l->f) fclose(l->f);
    unlink(l->path);
    memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------------------------------------
 * Expanding a batch of states on several threads; merging in order on the main thread
 * ------------------------------------------------------------------------------------- */

typedef struct {
    /* input: states [first, first + count) of the level, at byte offset `at` */
    size_t at;
    uint64_t first, count;
    /* output: candidates (parent index, fingerprint, encoding) in order */
    Level out;
    uint64_t *parents, *fps;
    uint64_t nout, capout;
    uint64_t transitions;
    int violation;          /* 1: a property broke at the candidate after the last one output */
    uint64_t bad_parent;    /* its parent's index in the level */
    uint64_t bad_fp;        /* the key of the successor that broke it */
} Task;

typedef struct {
    Task *task;
    const u8 *level;
    const Expanding *x;
    uint64_t parent;
} Ctx;

static void task_out(Task *t, uint64_t parent, uint64_t fp, const u8 *enc, int n) {
    if (t->nout == t->capout) {
        t->capout = t->capout ? t->capout * 2 : 4096;
        t->parents = realloc(t->parents, t->capout * sizeof(uint64_t));
        t->fps = realloc(t->fps, t->capout * sizeof(uint64_t));
        if (!t->parents || !t->fps) die("out of memory (batch)");
    }
    t->parents[t->nout] = parent;
    t->fps[t->nout] = fp;
    t->nout++;
    level_add(&t->out, enc, n);
}

static void on_successor(void *vctx, const S *t) {
    Ctx *ctx = vctx;
    Task *task = ctx->task;
    if (task->violation) return;
    task->transitions++;
    u8 enc[MAXENC];
    int n = key(t, enc);
    uint64_t fp = fingerprint(enc, n);
    if (transition_violation(&ctx->x->s, t)) {
        task->violation = 1;
        task->bad_parent = ctx->parent;
        task->bad_fp = fp;
        return;
    }
    if (seen_has(fp)) return;
    if (state_violation(t)) {
        task->violation = 1;
        task->bad_parent = ctx->parent;
        task->bad_fp = fp;
        return;
    }
    task_out(task, ctx->parent, fp, enc, n);
}

static void expand_task(Task *task, const u8 *level) {
    size_t at = task->at;
    Expanding *x = malloc(sizeof(Expanding));
    if (!x) die("out of memory");
    for (uint64_t k = 0; k < task->count && !task->violation; k++) {
        int n = level[at] | (level[at + 1] << 8);
        const u8 *enc = level + at + 2;
        at += (size_t)n + 2;
        decode(enc, n, &x->s);
        x->enclen = encode(&x->s, IDENTITY, x->enc);
        uint64_t parent = task->first + k;
        if (C.reduction) {
            S t;
            if (free_step(x, &t)) {
                /* the ample step alone; no property can see it (properties/checkers/reduction.py) */
                task->transitions++;
                normal_form(&t);
                u8 out[MAXENC];
                int m;
                if (!C.symmetry) {
                    m = encode(&t, IDENTITY, out);
                } else {
                    int perms[24][MAXB];
                    if (candidate_permutations(&x->s, perms) == 1) m = encode(&t, IDENTITY, out);
                    else m = canonical(&t, out);
                }
                uint64_t fp = fingerprint(out, m);
                if (!seen_has(fp)) task_out(task, parent, fp, out, m);
                continue;
            }
        }
        Ctx ctx = {task, level, x, parent};
        successors(x, on_successor, &ctx);
    }
    free(x);
}

typedef struct {
    Task *tasks;
    int ntasks;
    int next;
    pthread_mutex_t lock;
    const u8 *level;
} Pool;

static void *worker(void *arg) {
    Pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        int i = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (i >= pool->ntasks) return NULL;
        expand_task(&pool->tasks[i], pool->level);
    }
}

/* ---------------------------------------------------------------------------------------
 * The search (properties/checkers/bfs.py ``check``)
 * ------------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The search's own memory: anonymous resident pages (the seen-set, batches); the levels
 * are file pages in the page cache, which the kernel writes back and drops as it needs. */
static uint64_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %" SCNu64, &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

static void size_text(uint64_t bytes, char *out, size_t n) {
    double v = (double)bytes;
    if (v >= 1e9) snprintf(out, n, "%.1f GB", v / 1e9);
    else snprintf(out, n, "%.0f MB", v / 1e6);
}

static void commas(uint64_t v, char *out) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) out[o++] = ',';
        out[o++] = tmp[i];
    }
    out[o] = 0;
}

typedef struct {
    long max_states, max_depth;
    double max_seconds;
    double max_memory; /* bytes; 0: none */
    int workers;
    int quiet;
    const char *workdir; /* where the (fingerprint, parent) files of each level go */
    const char *dump;    /* file to write every state's hex encoding to (tests) */
} Opts;

static void hexline(FILE *f, const u8 *p, int n) {
    static const char *H = "0123456789abcdef";
    for (int i = 0; i < n; i++) {
        fputc(H[p[i] >> 4], f);
        fputc(H[p[i] & 15], f);
    }
    fputc('\n', f);
}

static int search(const Opts *o) {
    double started = now();
    signal(SIGINT, on_sigint);
    seen_budget = o->max_memory;
    S init;
    initial(&init);
    u8 enc[MAXENC];
    int n = key(&init, enc);
    uint64_t root_fp = fingerprint(enc, n);
    if (state_violation(&init)) {
        printf("{\"states\": 1, \"transitions\": 0, \"depth\": 0, \"checked_depth\": 0, \"complete\": true, "
               "\"stopped_by\": null, \"seconds\": %.3f, \"peak_memory_bytes\": 0, \"violation\": {\"chain\": [], \"bad\": \"%016" PRIx64 "\", \"initial\": true}}\n",
               now() - started, root_fp);
        return 0;
    }
    FILE *dump = o->dump ? fopen(o->dump, "w") : NULL;
    if (o->dump && !dump) die("cannot write the --dump file");
    if (dump) hexline(dump, enc, n);
    seen_add(root_fp);
    DiskLevel cur, nxt;
    dl_open(&cur, o->workdir, 0);
    dl_add(&cur, enc, n);
    dl_map(&cur);
    /* per level: the fingerprint and parent index of every state, to rebuild a path */
    char path[4096];
    FILE **trail = calloc(1024, sizeof(FILE *));
    snprintf(path, sizeof path, "%s/level-0", o->workdir);
    trail[0] = fopen(path, "w+b");
    if (!trail[0]) die("cannot write to the work directory");
    uint64_t zero = 0;
    fwrite(&root_fp, 8, 1, trail[0]);
    fwrite(&zero, 8, 1, trail[0]);
    long depth = 0;
    uint64_t transitions = 0;
    int found = 0;
    uint64_t bad_parent = 0, bad_fp = 0;
    const char *stopped_by = NULL;
    double last = now();
    uint64_t peak = rss_bytes();
    int workers = o->workers < 1 ? 1 : o->workers;
    pthread_t threads[64];
    const uint64_t TASK_STATES = 256;
    const int BATCH_TASKS = 64 * workers;
    Task *tasks = calloc((size_t)BATCH_TASKS, sizeof(Task));
    while (cur.count) {
        dl_open(&nxt, o->workdir, depth + 1);
        trail[depth + 1] = NULL;
        snprintf(path, sizeof path, "%s/level-%ld", o->workdir, depth + 1);
        if (depth + 1 >= 1023) die("search deeper than 1022 levels");
        trail[depth + 1] = fopen(path, "w+b");
        if (!trail[depth + 1]) die("cannot write to the work directory");
        size_t at = 0;
        uint64_t index = 0;
        while (index < cur.count && !found && !stopped_by) {
            int ntasks = 0;
            while (ntasks < BATCH_TASKS && index < cur.count) {
                Task *t = &tasks[ntasks++];
                Level keep = t->out;
                uint64_t *kp = t->parents, *kf = t->fps, kc = t->capout;
                memset(t, 0, sizeof *t);
                t->out = keep;
                t->out.len = 0;
                t->out.count = 0;
                t->parents = kp;
                t->fps = kf;
                t->capout = kc;
                t->at = at;
                t->first = index;
                uint64_t k = 0;
                while (k < TASK_STATES && index < cur.count) {
                    int m = cur.map[at] | (cur.map[at + 1] << 8);
                    at += (size_t)m + 2;
                    index++;
                    k++;
                }
                t->count = k;
            }
            Pool pool = {tasks, ntasks, 0, PTHREAD_MUTEX_INITIALIZER, cur.map};
            if (workers > 1 && ntasks > 1) {
                int nt = workers - 1;
                for (int w = 0; w < nt; w++) pthread_create(&threads[w], NULL, worker, &pool);
                worker(&pool);
                for (int w = 0; w < nt; w++) pthread_join(threads[w], NULL);
            } else {
                worker(&pool);
            }
            /* merge in order: the level's order is the sequential search's */
            for (int i = 0; i < ntasks && !found; i++) {
                Task *t = &tasks[i];
                transitions += t->transitions;
                size_t p = 0;
                for (uint64_t j = 0; j < t->nout; j++) {
                    int m = t->out.data[p] | (t->out.data[p + 1] << 8);
                    if (seen_add(t->fps[j])) {
                        dl_add(&nxt, t->out.data + p + 2, m);
                        fwrite(&t->fps[j], 8, 1, trail[depth + 1]);
                        fwrite(&t->parents[j], 8, 1, trail[depth + 1]);
                        if (dump) hexline(dump, t->out.data + p + 2, m);
                    }
                    p += (size_t)m + 2;
                }
                if (t->violation) {
                    found = 1;
                    bad_parent = t->bad_parent;
                    bad_fp = t->bad_fp;
                }
            }
            uint64_t rss = rss_bytes();
            if (rss > peak) peak = rss;
            double tnow = now();
            if (!found) {
                if (interrupted) stopped_by = "interrupted";
                else if (o->max_seconds > 0 && tnow - started >= o->max_seconds) stopped_by = "max_seconds";
                else if (o->max_memory > 0 && ((double)rss >= o->max_memory || seen_full)) stopped_by = "max_memory";
            }
            if (!o->quiet && tnow - last >= 2.0) {
                last = tnow;
                char st[32], fr[32], mem[32];
                commas(seen_count, st);
                commas(nxt.count, fr);
                size_text(rss, mem, sizeof mem);
                fprintf(stderr, "  depth %3ld  states %10s  frontier %9s  %9.0f states/s  %8s\n", depth + 1, st, fr,
                        seen_count / (tnow - started), mem);
                fflush(stderr);
            }
        }
        fflush(trail[depth + 1]);
        if (!o->quiet && !found && !stopped_by && nxt.count) {
            char lv[32], st[32], mem[32];
            commas(nxt.count, lv);
            commas(seen_count, st);
            size_text(rss_bytes(), mem, sizeof mem);
            fprintf(stderr, "  level %3ld done  %s new states, %s in all, %.0f s, %s\n", depth + 1, lv, st, now() - started, mem);
            fflush(stderr);
        }
        if (found || stopped_by) break;
        if (o->max_states > 0 && (long)seen_count >= o->max_states) {
            stopped_by = "max_states";
            if (nxt.count) depth++;
            break;
        }
        if (nxt.count) {
            depth++;
            if (o->max_depth > 0 && depth >= o->max_depth) {
                stopped_by = "max_depth";
                break;
            }
        }
        dl_close(&cur);
        dl_map(&nxt);
        cur = nxt;
        memset(&nxt, 0, sizeof nxt);
    }
    dl_close(&cur);
    dl_close(&nxt);
    double seconds = now() - started;
    if (!o->quiet) {
        char st[32], mem[32];
        commas(seen_count, st);
        size_text(peak, mem, sizeof mem);
        fprintf(stderr, "  done: every run of up to %ld steps tried  states %10s  %9.0f states/s  peak %s\n", depth, st,
                seen_count / (seconds > 0 ? seconds : 1e-9), mem);
    }
    if (dump) fclose(dump);
    printf("{\"states\": %" PRIu64 ", \"transitions\": %" PRIu64 ", \"depth\": %ld, \"checked_depth\": %ld, "
           "\"complete\": %s, \"stopped_by\": %s%s%s, \"seconds\": %.3f, \"peak_memory_bytes\": %" PRIu64 ", \"violation\": ",
           seen_count, transitions, depth + (found ? 1 : 0), depth, stopped_by ? "false" : "true", stopped_by ? "\"" : "",
           stopped_by ? stopped_by : "null", stopped_by ? "\"" : "", seconds, peak);
    if (!found) {
        printf("null}\n");
    } else {
        /* the chain of fingerprints from the root to the violating state's parent */
        uint64_t *chain = calloc((size_t)depth + 2, sizeof(uint64_t));
        uint64_t idx = bad_parent;
        for (long d = depth; d >= 0; d--) {
            uint64_t rec[2];
            if (fseek(trail[d], (long)(idx * 16), SEEK_SET) != 0 || fread(rec, 8, 2, trail[d]) != 2) die("cannot read the path back");
            chain[d] = rec[0];
            idx = rec[1];
        }
        printf("{\"chain\": [");
        for (long d = 0; d <= depth; d++) printf("%s\"%016" PRIx64 "\"", d ? ", " : "", chain[d]);
        printf("], \"bad\": \"%016" PRIx64 "\", \"initial\": false}}\n", bad_fp);
        free(chain);
    }
    for (long d = 0; d <= depth + 1 && d < 1023; d++)
        if (trail[d]) {
            fclose(trail[d]);
            snprintf(path, sizeof path, "%s/level-%ld", o->workdir, d);
            unlink(path);
        }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Differential mode: successors of given states, as keys
 * ------------------------------------------------------------------------------------- */

static void emit_key(void *ctx, const S *t) {
    (void)ctx;
    u8 enc[MAXENC];
    int n = key(t, enc);
    printf(" ");
    for (int i = 0; i < n; i++) printf("%02x", enc[i]);
}

static int unhex(const char *line, u8 *out) {
    int n = 0;
    for (const char *c = line; c[0] && c[1] && c[0] != '\n'; c += 2) {
        unsigned v;
        if (sscanf(c, "%2x", &v) != 1) die("bad hex on stdin");
        if (n >= MAXENC) die("state encoding too long");
        out[n++] = (u8)v;
    }
    return n;
}

static int successors_mode(void) {
    static char line[2 * MAXENC + 16];
    Expanding *x = malloc(sizeof(Expanding));
    while (fgets(line, sizeof line, stdin)) {
        u8 enc[MAXENC];
        int n = unhex(line, enc);
        decode(enc, n, &x->s);
        x->enclen = encode(&x->s, IDENTITY, x->enc);
        u8 k[MAXENC];
        int kn = key(&x->s, k);
        for (int i = 0; i < kn; i++) printf("%02x", k[i]);
        printf(" | %d |", state_violation(&x->s));
        S t;
        if (C.reduction && free_step(x, &t)) {
            printf(" free");
            emit_key(NULL, &t);
        } else {
            printf(" all");
            successors(x, emit_key, NULL);
        }
        printf("\n");
    }
    free(x);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------------------------- */

static long arg_long(const char *v, const char *name) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end) {
        fprintf(stderr, "epochal-search: %s needs an integer, got %s\n", name, v);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: epochal-search search|successors [--brokers N ...]\n");
        return 2;
    }
    const char *mode = argv[1];
    Opts o = {0};
    o.workers = 1;
    o.workdir = "/tmp";
    C = (Cfg){.brokers = 2, .records = 2, .max_epoch = 3, .max_crashes = 1, .max_pauses = 0, .min_insync = 1,
              .unclean = 0, .truncation = T_KIP320, .symmetry = 1, .reduction = 0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (OPT("--brokers")) C.brokers = (int)arg_long(v, a);
        else if (OPT("--records")) C.records = (int)arg_long(v, a);
        else if (OPT("--max-epoch")) C.max_epoch = (int)arg_long(v, a);
        else if (OPT("--max-crashes")) C.max_crashes = (int)arg_long(v, a);
        else if (OPT("--max-pauses")) C.max_pauses = (int)arg_long(v, a);
        else if (OPT("--min-insync")) C.min_insync = (int)arg_long(v, a);
        else if (OPT("--unclean")) C.unclean = (int)arg_long(v, a);
        else if (OPT("--symmetry")) C.symmetry = (int)arg_long(v, a);
        else if (OPT("--reduction")) C.reduction = (int)arg_long(v, a);
        else if (OPT("--workers")) o.workers = (int)arg_long(v, a);
        else if (OPT("--max-states")) o.max_states = arg_long(v, a);
        else if (OPT("--max-depth")) o.max_depth = arg_long(v, a);
        else if (OPT("--max-seconds")) o.max_seconds = atof(v);
        else if (OPT("--max-memory")) o.max_memory = atof(v);
        else if (OPT("--workdir")) o.workdir = v;
        else if (OPT("--dump")) o.dump = v;
        else if (strcmp(a, "--quiet") == 0) o.quiet = 1;
        else if (OPT("--truncation")) {
            if (!strcmp(v, "hw")) C.truncation = T_HW;
            else if (!strcmp(v, "kip101")) C.truncation = T_KIP101;
            else if (!strcmp(v, "kip279")) C.truncation = T_KIP279;
            else if (!strcmp(v, "kip320")) C.truncation = T_KIP320;
            else {
                fprintf(stderr, "epochal-search: unknown truncation rule %s\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "epochal-search: unknown or incomplete option %s\n", a);
            return 2;
        }
#undef OPT
    }
    if (C.brokers < 1 || C.brokers > MAXB) {
        fprintf(stderr, "epochal-search: --brokers must be between 1 and %d\n", MAXB);
        return 2;
    }
    if (C.records < 0 || C.records > MAXREC) {
        fprintf(stderr, "epochal-search: --records must be between 0 and %d\n", MAXREC);
        return 2;
    }
    if (o.workers > 64) o.workers = 64;
    C.fenced = C.truncation == T_KIP320;
    C.refollow = C.truncation == T_KIP320;
    if (!strcmp(mode, "search")) return search(&o);
    if (!strcmp(mode, "successors")) return successors_mode();
    fprintf(stderr, "epochal-search: unknown mode %s\n", mode);
    return 2;
}
