/*
 * main.c: epochal-search's command line, run by properties/checkers/native.py.
 *
 * Modes:
 *   epochal-search search [options]      breadth-first search (search.c), JSON result on stdout
 *   epochal-search successors [options]  for each hex-encoded state on stdin: its key, its
 *                                        verdict, and the keys of its successors
 *                                        (the differential tests of tests/properties/test_native.py)
 *   epochal-search rejects [options]     for each hex-encoded state on stdin: for each of its
 *                                        LeaderAndISR requests, in order, 1 if the broker
 *                                        refuses it (reject_leader_and_isr, a self-loop) else 0
 *
 * The options are the configuration (--brokers, --records, ... : properties/checkers/native.py
 * config_args) and the search's budgets.  Bad options exit 2, a state the search cannot hold
 * exits 3 (die).
 */
#include <errno.h>
#include <stdlib.h>

#include "state.h"

#ifndef EPOCHAL_LIBRARY /* the judge's step library defines them itself (step.c) */
Cfg C;

void die(const char *msg) {
    fprintf(stderr, "epochal-search: %s\n", msg);
    exit(3);
}
#endif

/* ---------------------------------------------------------------------------------------
 * Differential mode: successors of given states, as keys
 * ------------------------------------------------------------------------------------- */

#ifndef EPOCHAL_LIBRARY
static void emit_key(void *ctx, const S *t) {
    (void)ctx;
    u8 enc[MAXENC];
    int n = key(t, enc);
    printf(" ");
    for (int i = 0; i < n; i++) printf("%02x", enc[i]);
}
#endif

int unhex(const char *line, u8 *out) {
    int n = 0;
    for (const char *c = line; c[0] && c[1] && c[0] != '\n'; c += 2) {
        unsigned v;
        if (sscanf(c, "%2x", &v) != 1) die("bad hex on stdin");
        if (n >= MAXENC) die("state encoding too long");
        out[n++] = (u8)v;
    }
    return n;
}

#ifndef EPOCHAL_LIBRARY
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

static int rejects_mode(void) {
    static char line[2 * MAXENC + 16];
    S *s = malloc(sizeof(S));
    while (fgets(line, sizeof line, stdin)) {
        u8 enc[MAXENC];
        decode(enc, unhex(line, enc), s);
        for (int i = 0; i < s->nlai; i++) {
            S t = *s;
            printf("%d", reject_leader_and_isr(&t, s->lai[i]));
        }
        printf("\n");
    }
    free(s);
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
              .unclean = 0, .truncation = T_KIP320, .topic_ids = 1, .symmetry = 1, .reduction = 0, .partitions = 1,
              .fence_controller_epoch = 1, .fence_broker_epoch = 1};
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
        else if (OPT("--preferred-elections")) C.preferred_elections = (int)arg_long(v, a);
        else if (OPT("--max-shutdowns")) C.max_shutdowns = (int)arg_long(v, a);
        else if (OPT("--deletions")) C.deletions = (int)arg_long(v, a);
        else if (OPT("--reassignments")) C.reassignments = (int)arg_long(v, a);
        else if (OPT("--max-expiries")) C.max_expiries = (int)arg_long(v, a);
        else if (OPT("--topic-ids")) C.topic_ids = (int)arg_long(v, a);
        else if (OPT("--alter-partition")) C.alter_partition = (int)arg_long(v, a);
        else if (OPT("--startup-from-controller")) C.startup_from_controller = (int)arg_long(v, a);
        else if (OPT("--offline-replica-writes")) C.offline_replica_writes = (int)arg_long(v, a);
        else if (OPT("--hw-waits-outside-isr")) C.hw_waits_outside_isr = (int)arg_long(v, a);
        else if (OPT("--leader-keeps-follower-state")) C.leader_keeps_follower_state = (int)arg_long(v, a);
        else if (OPT("--partitions")) C.partitions = (int)arg_long(v, a);
        else if (OPT("--partition-changes")) C.partition_changes = (int)arg_long(v, a);
        else if (OPT("--reuse-partition-ids")) C.reuse_partition_ids = (int)arg_long(v, a);
        else if (OPT("--partition-identity")) C.partition_identity = (int)arg_long(v, a);
        else if (OPT("--reassign-phases")) C.reassign_phases = (int)arg_long(v, a);
        else if (OPT("--replication-factor")) C.replication_factor = (int)arg_long(v, a);
        else if (OPT("--fence-controller-epoch")) C.fence_controller_epoch = (int)arg_long(v, a);
        else if (OPT("--fence-broker-epoch")) C.fence_broker_epoch = (int)arg_long(v, a);
        else if (OPT("--fetch-max-records")) C.fetch_max_records = (int)arg_long(v, a);
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
    C.partition_ids = C.partitions + C.partition_changes;
    if (C.partitions < 1 || C.partition_changes < 0 || C.partition_ids > MAXP) {
        fprintf(stderr, "epochal-search: --partitions and --partition-changes must make 1 to %d partition ids\n", MAXP);
        return 2;
    }
    if (o.workers > 64) o.workers = 64;
    C.fenced = C.truncation == T_KIP320;
    C.refollow = C.truncation == T_KIP320;
    if (!strcmp(mode, "search")) return search(&o);
    if (!strcmp(mode, "successors")) return successors_mode();
    if (!strcmp(mode, "rejects")) return rejects_mode();
    if (!strcmp(mode, "expand")) return expand_mode();
    fprintf(stderr, "epochal-search: unknown mode %s\n", mode);
    return 2;
}
#endif
