/*
 * search.c: the breadth-first search of properties/checkers/bfs.py ``check``, level by level.
 *
 * A level is a file of encodings (written in order as found, mapped back to be expanded);
 * the states seen are a table of 64-bit fingerprints; each level's (fingerprint, parent
 * index) pairs go to a file, read back only to report a counterexample's path (store.c).
 * Several threads expand batches of a level; the main thread merges their results in
 * order, so the level's order -- and so the first violation and its path -- is that of one
 * thread, and of the Python checker.  The result is one JSON object on stdout; progress
 * lines (two spaces first) go to stderr.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

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

/* A task emptied for its next batch, its output buffers kept for reuse. */
static void task_reset(Task *t) {
    Level keep = t->out;
    uint64_t *kp = t->parents, *kf = t->fps, kc = t->capout;
    memset(t, 0, sizeof *t);
    t->out = keep;
    t->out.len = 0;
    t->out.count = 0;
    t->parents = kp;
    t->fps = kf;
    t->capout = kc;
}

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
                    int perms[MAXPERMS][MAXB];
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

static void hexline(FILE *f, const u8 *p, int n) {
    static const char *H = "0123456789abcdef";
    for (int i = 0; i < n; i++) {
        fputc(H[p[i] >> 4], f);
        fputc(H[p[i] & 15], f);
    }
    fputc('\n', f);
}

int search(const Opts *o) {
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
                task_reset(t);
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
                fprintf(stderr, "  searching: depth %3ld  states %10s  frontier %9s  %9.0f states/s  %8s\n", depth + 1, st, fr,
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
        /* as the Python search's last line (bfs.py ``final``): Ctrl-C is not "done" */
        const char *word = stopped_by && !strcmp(stopped_by, "interrupted") ? "interrupted" : "done";
        fprintf(stderr, "  %s: every run of up to %ld steps tried  states %10s  %9.0f states/s  peak %s\n", word, depth, st,
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
 * Expand mode: expand_task on one state at a time, the seen-set empty (state.h)
 * ------------------------------------------------------------------------------------- */

int expand_mode(void) {
    static char line[2 * MAXENC + 16];
    Level in = {0};
    Task task;
    memset(&task, 0, sizeof task);
    while (fgets(line, sizeof line, stdin)) {
        u8 enc[MAXENC];
        int n = unhex(line, enc);
        in.len = 0;
        in.count = 0;
        level_add(&in, enc, n);
        task_reset(&task);
        task.count = 1;
        expand_task(&task, in.data);
        printf("%" PRIu64 " ", task.transitions);
        if (task.violation) printf("%016" PRIx64, task.bad_fp);
        else printf("-");
        size_t p = 0;
        for (uint64_t j = 0; j < task.nout; j++) {
            int m = task.out.data[p] | (task.out.data[p + 1] << 8);
            printf(" %016" PRIx64 ":", task.fps[j]);
            for (int i = 0; i < m; i++) printf("%02x", task.out.data[p + 2 + i]);
            p += (size_t)m + 2;
        }
        printf("\n");
    }
    free(in.data);
    free(task.out.data);
    free(task.parents);
    free(task.fps);
    return 0;
}
