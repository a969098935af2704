/*
 * symmetry.c: the canonical representative of properties/checkers/symmetry.py, and the key
 * the search stores for a state (properties/checkers/bfs.py search_key).
 *
 * Brokers are interchangeable, so states that differ only by a renaming of broker ids are
 * explored once: versions and zxids are renamed densely, brokers are ordered by a signature
 * that does not mention broker ids, and of the renamings consistent with that order the one
 * with the smallest encoding wins -- exactly Python's choice, since encodings order as
 * Python orders the tuples (encoding.c).
 */
#include "state.h"

static void rename_versions(S *s) {
    /* zk_versions, dense from 0; zxids (broker epochs), dense from 1 */
    int vs[MAXP + MAXP * MAXB + MAXLAI + MAXALTER], nv = 0;
    int zs[2 + 2 * MAXB + MAXLAI + MAXALTER], nz = 0;
    for (int p = 0; p < C.partition_ids; p++) vs[nv++] = s->zn[p].zk_version;
    for (int b = 0; b < C.brokers; b++)
        for (int p = 0; p < C.partition_ids; p++)
            if (s->br[b].rp[p].zk_version >= 0) vs[nv++] = s->br[b].rp[p].zk_version;
    for (int i = 0; i < s->nlai; i++) vs[nv++] = s->lai[i].zk_version;
    for (int b = 0; b < C.brokers; b++) zs[nz++] = s->broker_epochs[b];
    for (int b = 0; b < C.brokers; b++) zs[nz++] = s->br[b].broker_epoch;
    for (int i = 0; i < s->nlai; i++) zs[nz++] = s->lai[i].max_broker_epoch;
    for (int i = 0; i < s->nalter; i++) {
        vs[nv++] = s->alter[i].zk_version;
        zs[nz++] = s->alter[i].broker_epoch;
    }
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
    for (int p = 0; p < C.partition_ids; p++) s->zn[p].zk_version = VM(s->zn[p].zk_version);
    for (int b = 0; b < C.brokers; b++) {
        for (int p = 0; p < C.partition_ids; p++)
            if (s->br[b].rp[p].zk_version >= 0) s->br[b].rp[p].zk_version = VM(s->br[b].rp[p].zk_version);
        s->broker_epochs[b] = ZM(s->broker_epochs[b]);
        s->br[b].broker_epoch = ZM(s->br[b].broker_epoch);
    }
    for (int i = 0; i < s->nlai; i++) {
        s->lai[i].zk_version = VM(s->lai[i].zk_version);
        s->lai[i].max_broker_epoch = ZM(s->lai[i].max_broker_epoch);
    }
    for (int i = 0; i < s->nalter; i++) {
        s->alter[i].zk_version = VM(s->alter[i].zk_version);
        s->alter[i].broker_epoch = ZM(s->alter[i].broker_epoch);
    }
    s->zxid = ZM(s->zxid);
#undef VM
#undef ZM
}

typedef struct { u8 bytes[64 * MAXP]; int n; int b; } Sig;

static void signature(const S *s, int b, Sig *sig) {
    const Broker *br = &s->br[b];
    Buf B = {sig->bytes, 0}, *o = &B;
    mark(o, 1); put(o, br->status);
    mark(o, 1); put(o, br->is_controller);
    mark(o, 1); put(o, br->controller_epoch);
    mark(o, 1); put(o, br->broker_epoch);
    mark(o, 1); put(o, has(s->live, b));
    mark(o, 1); put(o, s->controller == b);
    mark(o, 1);
    for (int p = 0; p < C.partition_ids; p++) { /* each partition's tuple */
        const Replica *r = &br->rp[p];
        const Zn *zn = &s->zn[p];
        mark(o, 1);
        mark(o, 1); put(o, r->role);
        mark(o, 1); put(o, r->leader == b);
        mark(o, 1); put(o, r->leader_epoch);
        mark(o, 1); put_log(o, r->log, r->loglen);
        mark(o, 1); put(o, r->hw);
        mark(o, 1); put(o, r->fetch_state);
        mark(o, 1); put(o, popcount8(r->isr));
        mark(o, 1); put(o, zn->leader == b);
        mark(o, 1); put(o, has(zn->isr, b));
        mark(o, 0);
    }
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
int candidate_permutations(const S *s, int perms[][MAXB]) {
    int n = C.brokers;
    if (s->preferred_elections < C.preferred_elections) { /* reads_broker_order: the identity only */
        for (int b = 0; b < n; b++) perms[0][b] = b;
        return 1;
    }
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
    /* recursive enumeration via explicit stack over groups (at most MAXPERMS) */
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
int canonical(S *s, u8 *out) {
    rename_versions(s);
    int perms[MAXPERMS][MAXB];
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
int key(const S *t, u8 *out) {
    S c = *t;
    if (C.reduction) normal_form(&c);
    if (C.symmetry) return canonical(&c, out);
    return encode(&c, IDENTITY, out);
}
