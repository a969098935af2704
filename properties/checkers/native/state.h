/*
 * state.h: what every unit of the native search shares -- the state's layout (model/state.py
 * for up to MAXP partition ids, as fixed-size C structs), the configuration, the small helpers on broker
 * sets, and the functions each unit offers the others.
 *
 * The native search is properties/checkers/native.py's compiled twin of the Python checker,
 * split by concern, each unit named after the Python it ports:
 *   encoding.c    the order-preserving encoding (properties/checkers/native.py encode) and fingerprints
 *   rules.c       model/actions/ and model/truncation.py: the initial state and the rules
 *   successors.c  the successors of a state, in model.actions.EXPLORED order
 *   partitions.c  model/actions/partitions.py: partitions added and removed
 *   shutdown.c    model/actions/shutdown.py and StopReplica: controlled shutdown, the clean stop
 *   topics.c      model/actions/topics.py: topic deletion and re-creation, topic ids
 *   alter_partition.c  model/actions/controller_isr.py: ISR changes through the controller
 *   kafka_leader.c     the rules of Kafka's brokers (model.config.KAFKA_BROKER): the HW held
 *                      outside the ISR, the broker start that waits for the controller
 *   reassign.c    model/actions/reassignment.py: a reassignment's start and completion
 *   expire.c      model/actions/brokers.py broker_expire, and commands.py reject_leader_and_isr
 *   reduction.c   properties/checkers/reduction.py: the free (ample) step and the normal form
 *   symmetry.c    properties/checkers/symmetry.py: the canonical representative, and the search key
 *   properties.c  properties/safety.py: the state and transition properties
 *   store.c       the seen-set of fingerprints and the level files
 *   search.c      properties/checkers/bfs.py check: the breadth-first loop on several threads
 *   main.c        the command line: the search mode and the successors mode of the tests
 *   step.c        one named step, by the functions above: the trace judge's (native_step.py)
 *
 * It is a second copy of the rules, so it is held to the Python model by tests
 * (tests/properties/test_native.py): for every state of the two-broker searches and samples of
 * three-broker ones, the canonical encoding and the successors computed here (in order)
 * equal the Python model's, and whole searches reach the same states, transitions,
 * verdicts and counterexamples.
 */
#ifndef EPOCHAL_SEARCH_STATE_H
#define EPOCHAL_SEARCH_STATE_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* brokers; a configuration with more is searched by a build with more (native.py binary) */
#ifndef MAXB
#define MAXB 4
#endif
#if MAXB > 5
#error "MAXB above 5: candidate_permutations' MAXPERMS would not hold every renaming"
#endif
/* the renamings of MAXB brokers (MAXB!) */
#define MAXPERMS (MAXB == 5 ? 120 : 24)
/* partition ids: --partitions and one more per partition change allowed (Config.partition_ids);
 * a configuration with more is searched by a build with more (native.py binary) */
#ifndef MAXP
#define MAXP 3
#endif
/* Capacities of the state's arrays.  The search keeps them small (its states are bounded by
 * the configuration); the judge's step library (properties/checkers/native_step.py) builds the
 * same sources with larger ones, for recorded runs that produce more. */
#ifndef MAXREC
#define MAXREC 6
#endif
#ifndef MAXLAI
#define MAXLAI 48
#endif
#ifndef MAXFETCH
#define MAXFETCH 24
#endif
#ifndef MAXCOMMIT
#define MAXCOMMIT 16
#endif
#ifndef MAXLED
#define MAXLED 16
#endif
#ifndef MAXSMALL
#define MAXSMALL 8
#endif
#ifndef MAXSTOP
#define MAXSTOP 16
#endif
#ifndef MAXALTER
#define MAXALTER 8
#endif
#ifndef MAXENC
#define MAXENC 2048
#endif

typedef int8_t i8;
typedef uint8_t u8;

/* model/state.py constants */
enum { NO_LEADER = -1, UNKNOWN = -1 };
enum { UP = 0, DOWN = 1, PAUSED = 2 };
enum { NONE = 0, LEADER = 1, FOLLOWER = 2, DELETED = 3 };
enum { IDLE = 0, TRUNCATING = 1, FETCHING = 2 };
enum { FETCH_REQUEST = 0, FETCH_RESPONSE = 1 };
enum { OK = 0, OUT_OF_RANGE = 1 };
enum { EPOCH_DURING_DELETE = -2 }; /* a topic deletion's StopReplica: delete whatever the epoch */
enum { ALTER_REQUEST = 0, ALTER_RESPONSE = 1 }; /* and the answers' errors: alter_partition.c */
enum { NO_HOLD = -1 }; /* a produce's or fetch's hold argument: no follower holds the HW */
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
    i8 topic_id; /* the incarnation of the topic whose data it holds */
} Replica;

typedef struct {
    i8 status, is_controller, controller_epoch, broker_epoch;
    union {
        Replica r;          /* partition 0's: the one partition of most configurations */
        Replica rp[MAXP];   /* by partition id (C.partition_ids of them) */
    };
    u8 new_brokers; /* controller only: registrations whose onBrokerStartup is still to run */
    u8 shutting_down; /* controller only: the brokers that asked it for a controlled shutdown */
} Broker;

typedef struct { i8 to, partition, leader, leader_epoch; u8 isr; i8 zk_version, controller_epoch, max_broker_epoch, topic_id; } Lai;

/* A StopReplica: a controlled shutdown's (delete 0), a topic deletion's (leader epoch
 * EPOCH_DURING_DELETE, delete 1) or a reassignment's (the epoch it wrote, delete 1) */
typedef struct { i8 to, partition, leader_epoch, controller_epoch, topic_id, delete; } Stop;

typedef struct { i8 kind, follower, leader, partition, offset, epoch, nrec; Entry rec[MAXREC]; i8 hw, error, topic_id; } Fetch;

/* An AlterPartition proposal or its answer (model.state.AlterPartition) */
typedef struct { i8 kind, leader, partition, leader_epoch; u8 isr; i8 zk_version, broker_epoch, error, topic_id; } Alter;

typedef struct { i8 p, offset; Entry e; } Committed;
typedef struct { i8 p, value; } PV;
typedef struct { i8 p, epoch, b; } Led;

/* A PartitionZnode (a deleted topic's or removed partition's has no AR and keeps its topic
 * id; rar: the reassignment pending, 0 for none; an id not created yet has leader epoch -1) */
typedef struct { i8 leader, leader_epoch; u8 isr; i8 zk_version; u8 ar, rar; i8 topic_id; } Zn;

/* The Zk's partitions tuple is zn[0 .. C.partition_ids); zn_* name partition 0's fields. */
typedef struct {
    i8 controller, controller_epoch;
    u8 live;
    i8 broker_epochs[MAXB];
    i8 zxid;
    union {
        struct { i8 zn_leader, zn_leader_epoch; u8 zn_isr; i8 zn_zk_version; u8 zn_ar, zn_rar; i8 zn_topic_id; };
        Zn zn[MAXP];
    };
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
    u8 unclean; /* bit p: partition p has had an unclean election */
    i8 stale_accepts;
    i8 nzapp;
    PV zapp[MAXSMALL];
    i8 produced, crashes, pauses, shutdowns, reassignments;
    i8 nzc;
    PV zc[MAXSMALL];
    i8 deletions; /* ghost: topic deletions taken */
    i8 nretired;
    PV retired[MAXSMALL]; /* ghost: (partition, value) of every record of a deleted incarnation */
    i8 preferred_elections; /* ghost: preferred-replica elections taken */
    i8 nstop;
    Stop stop[MAXSTOP]; /* StopReplica requests in flight */
    i8 expiries; /* ghost: session expiries of a running broker taken */
    i8 partition_changes; /* ghost: partitions added or removed (partitions.c) */
    u8 removed; /* ghost: bit p, partition p was removed */
    i8 nalter;
    Alter alter[MAXALTER]; /* AlterPartition proposals and answers in flight */
} S;

typedef struct {
    int brokers, records, max_epoch, max_crashes, max_pauses, min_insync;
    int unclean, truncation, fenced, refollow;
    int preferred_elections, max_shutdowns;
    int deletions, topic_ids; /* topic deletions (each then a re-creation); topic ids (KIP-516) on */
    int reassignments, max_expiries; /* reassignments started; session expiries of a running broker */
    int fetch_max_records; /* the most records a fetch answer carries, 0: all */
    int symmetry, reduction;
    int alter_partition; /* the ISR written by the controller (AlterPartition) */
    /* the rules of Kafka's brokers (model.config.KAFKA_BROKER) */
    int startup_from_controller, offline_replica_writes, hw_waits_outside_isr, leader_keeps_follower_state;
    /* the partitions at the start, the partitions added or removed (partitions.c), and the
     * partition ids the state has a slot for: their sum (Config.partition_ids) */
    int partitions, partition_changes, partition_ids;
    int reuse_partition_ids, partition_identity;
    int reassign_phases; /* Kafka's reassignment, each phase with its epoch (reassign.c) */
    int replication_factor; /* brokers in each partition's initial AR; 0: every broker */
    /* control requests refused from an older controller epoch (seed 002), or meant for an
     * older incarnation of the broker (seed 003): both on unless --fencing is off */
    int fence_controller_epoch, fence_broker_epoch;
} Cfg;


extern Cfg C; /* set once by the command line (main.c) before any state is made */

/* Report a state or input the search cannot handle and exit 3 (main.c). */
void die(const char *msg) __attribute__((noreturn));

static inline int popcount8(u8 x) { return __builtin_popcount(x); }
static inline int has(u8 set, int b) { return b >= 0 && ((set >> b) & 1); }
/* model.state.ever_created: the topic has, or had, partition id p (its znode has an AR or
 * keeps the leader epoch it had) */
static inline int ever_created(const Zn *zn) { return zn->ar || zn->leader_epoch != -1; }

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


/* ---------------------------------------------------------------------------------------
 * encoding.c: the order-preserving encoding, under a broker renaming, and its fingerprint
 * ------------------------------------------------------------------------------------- */

typedef struct { u8 *p; int n; } Buf;

static inline void put(Buf *b, int v) { b->p[b->n++] = (u8)(v + 2); }
static inline void mark(Buf *b, int m) { b->p[b->n++] = (u8)m; } /* 1: an element follows, 0: end */

extern const int IDENTITY[MAXB]; /* the renaming that renames nothing */

void put_log(Buf *b, const Entry *log, int len);
int encode(const S *s, const int *perm, u8 *out);
void decode(const u8 *p, int len, S *s);
uint64_t fingerprint(const u8 *p, int n);

/* ---------------------------------------------------------------------------------------
 * rules.c: the model's rules
 * ------------------------------------------------------------------------------------- */

/* A state being expanded */
typedef struct {
    S s;
    u8 enc[MAXENC]; /* encoding of s itself (identity renaming), to omit self-loops */
    int enclen;
} Expanding;

typedef void (*Emit)(void *ctx, const S *t);

/* Try one step on a copy t of x->s; emit its successor unless it is a self-loop */
#define TRY(call)                                  \
    do {                                           \
        t = x->s;                                  \
        if (call) {                                \
            forget_stale_requests(&t);             \
            if (differs(x, &t)) emit(ctx, &t);     \
        }                                          \
    } while (0)

void initial(S *s);
void successors(const Expanding *x, Emit emit, void *ctx);
int differs(const Expanding *x, const S *t);
void forget_stale_requests(S *s);
void remove_fetch_at(S *s, int i);
void remove_lai_at(S *s, int i);
/* shutting_down: the brokers the acting controller knows to be shutting down (none
 * without a controller): no election chooses one of them */
static inline u8 shutting_down(const S *s) { return s->controller < 0 ? 0 : s->br[(int)s->controller].shutting_down; }
/* what the rules share with shutdown.c */
int acting_controller(const S *s, int c);
void write_and_send(S *s, int p, int leader, u8 isr);
void process_ends(S *s, int b);
void stop_controlling(Broker *br);
void drop_responses_to(S *s, int b, int p);
void unknown_leo(Replica *r);
void replica_stops(Replica *r);
/* shutdown.c: controlled shutdown (its arguments in shutdowns_args order), the clean stop,
 * and StopReplica */
int shutdowns_args(const S *s, int args[][3]);
int controlled_shutdown(S *s, int c, int p, int b, int leader);
int broker_stop(S *s, int b);
int stop_replica(S *s, Stop m);
void remove_stops_to(S *s, int b);
void add_stop(S *s, Stop m);
int lai_waits(const S *s, const Lai *m);   /* channel order: behind an earlier StopReplica */
int stop_waits(const S *s, const Stop *m); /* channel order: behind an earlier LeaderAndISR */
Stop make_stop(int to, int p, int leader_epoch, int controller_epoch, int topic_id, int delete);
/* rules.c, shared with topics.c, reassign.c and expire.c */
void deregister(S *s, int b);
int stale_reason(const S *s, const Lai *m);
int repeats_held_decision(const S *s, const Lai *m);
void add_lai(S *s, Lai m);
Lai make_lai(int to, int p, int leader, int epoch, u8 isr, int zkv, int cepoch, int mbe, int topic_id);
int max_broker_epoch(const S *s);

/* rules.c, shared with alter_partition.c and kafka_leader.c */
int out_of_sync(const S *s, int b, int p, int f);
int caught_up(const S *s, int b, int p, int f);
int isr_least_leo(const S *s, int b, int p);
void advance_hw_to(S *s, int b, int p, int cap); /* cap < 0: the maximal ISR's least LEO */
/* election_outcomes: the (leader, ISR, unclean) choices of an election of p */
typedef struct { int leader; u8 isr; int unclean; } Outcome;
int election_outcomes(const S *s, int p, Outcome *out);
/* alter_partition.c: AlterPartition (model/actions/controller_isr.py) */
u8 maximal_isr(const S *s, int b, int p);
int propose_isr(S *s, int b, int p, int f);
int alter_partition(S *s, int c, Alter m);
int apply_isr(S *s, Alter m);
void alter_successors(const Expanding *x, Emit emit, void *ctx);
/* kafka_leader.c: the HW a follower outside the ISR holds (model/actions/replication.py held_at) */
int advance_hw_held(S *s, int b, int p, int hold);
int offline_replica_write(S *s, int c, int p, int r);

/* topics.c: topic deletion and re-creation (model/actions/topics.py), and what a replica of
 * a deleted incarnation becomes (model/actions/common.py) */
int delete_topic(S *s, int c);
int create_topic(S *s, int c, u8 ar, int leader);
void topic_deleted(Replica *r, int topic_id);
void for_incarnation(Replica *r, int topic_id);
int is_current(const S *s, int p, const Replica *r);
void partition_gone(S *s, int p);
/* ... of any partition p (the two above are partition 0's), and their successors in
 * deletions_args, creations_args order */
int delete_topic_of(S *s, int c, int p);
int create_topic_of(S *s, int c, int p, u8 ar, int leader);
void topic_successors(const Expanding *x, Emit emit, void *ctx);
/* partitions.c: partitions added and removed (model/actions/partitions.py), and their
 * successors in partition_adds_args, partition_removals_args order */
int removal_pending(const S *s, int p);
int add_partitions(S *s, int c, int p, u8 ar, int leader);
int remove_partitions(S *s, int c, int p);
void partition_successors(const Expanding *x, Emit emit, void *ctx);
/* reassign.c: a reassignment's start (a pending one again, or any non-empty replica set
 * within the bound, in reassign_starts_args order) and completion, and what a
 * reassignment's StopReplica leaves (deleted_replica) */
int reassign_starts_args(const S *s, int p, u8 rars[]);
int reassign_start(S *s, int c, u8 rar);
int reassign_complete(S *s, int c, int leader);
void deleted_replica(Replica *r);
/* ... of any partition p (the two above are partition 0's), their successors in
 * reassign_starts_args, reassign_completions_args order, and Kafka's phases
 * (Config.reassign_phases): the removed replicas' own ISR write that ends a move */
int reassign_start_of(S *s, int c, int p, u8 rar);
int reassign_complete_of(S *s, int c, int p, int leader);
void reassign_successors(const Expanding *x, Emit emit, void *ctx);
int removal_owed(const Zn *zn);
void end_reassignment(S *s, int p, u8 isr);
/* expire.c: a running broker's session expiry; a stale LeaderAndISR refused */
int broker_expire(S *s, int b);
int reject_leader_and_isr(S *s, Lai m);
/* the fetch actions the reduction takes on their own */
int send_fetch(S *s, int f, int p);
int handle_fetch(S *s, Fetch m);
int handle_fetch_held(S *s, Fetch m, int hold);
int receive_fetch(S *s, Fetch m);
/* the other actions of rules.c, for the judge's step (step.c): each returns 0 when its guard
 * fails, as the Python action returns None */
int broker_crash(S *s, int b);
int broker_restart(S *s, int b, int checkpointed_hw);
int broker_pause(S *s, int b);
int broker_resume(S *s, int b);
int broker_reregister(S *s, int b);
int controller_elect(S *s, int b);
int controller_resign(S *s, int b);
int elect_leader(S *s, int c, int p, int leader);
int on_broker_startup(S *s, int c, int b);
int become_leader(S *s, Lai m);
int become_follower(S *s, Lai m);
int truncate_log(S *s, int f, int p);
int produce(S *s, int b, int p, int hold);
int shrink_isr(S *s, int b, int p, int f);
int expand_isr(S *s, int b, int p, int f);
int isr_update_failed(S *s, int b, int p);
int preferred_election(S *s, int c, int p);
/* step.c: the action named, with its int arguments, taken in place: 1, 0 when its guard
 * fails, -2 for a step rules.c does not take */
int take_step(S *s, const char *action, const int *args, int nargs);

/* ---------------------------------------------------------------------------------------
 * reduction.c, symmetry.c, properties.c
 * ------------------------------------------------------------------------------------- */

int free_step(const Expanding *x, S *t);
void normal_form(S *s);

int candidate_permutations(const S *s, int perms[][MAXB]);
int canonical(S *s, u8 *out);
int key(const S *t, u8 *out);

int state_violation(const S *s);
int transition_violation(const S *a, const S *b);

/* ---------------------------------------------------------------------------------------
 * store.c: the seen-set and the levels
 * ------------------------------------------------------------------------------------- */

extern uint64_t seen_count;    /* fingerprints in the seen-set */
extern double seen_budget;     /* bytes the table may take while growing (0: no limit) */
extern volatile int seen_full; /* growing would pass the budget: the search stops (max_memory) */

int seen_has(uint64_t fp);
int seen_add(uint64_t fp);

/* A batch's output: encodings, each prefixed by its length (2 bytes), in one growing arena. */
typedef struct {
    u8 *data;
    size_t len, cap;
    uint64_t count;
} Level;

void level_add(Level *l, const u8 *enc, int n);

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


void dl_open(DiskLevel *l, const char *dir, long depth);
void dl_add(DiskLevel *l, const u8 *enc, int n);
void dl_map(DiskLevel *l);
void dl_close(DiskLevel *l);

/* ---------------------------------------------------------------------------------------
 * search.c: the search
 * ------------------------------------------------------------------------------------- */

typedef struct {
    long max_states, max_depth;
    double max_seconds;
    double max_memory; /* bytes; 0: none */
    int workers;
    int quiet;
    const char *workdir; /* where the (fingerprint, parent) files of each level go */
    const char *dump;    /* file to write every state's hex encoding to (tests) */
} Opts;

int search(const Opts *o);
/* The search's expansion of single states, for a search whose level and seen-set live
 * elsewhere (properties/checkers/distributed.py): stdin one key (hex) a line; stdout, a line
 * each, "TRANSITIONS BAD FP:KEY ...": the transitions taken, the fingerprint of the successor
 * that broke a property (or -), and the candidates the search would add, in order. */
int expand_mode(void);
int unhex(const char *line, u8 *out);

#endif
