/*
 * store.c: what the search keeps -- the seen-set of 64-bit fingerprints (open addressing,
 * in memory, 8 bytes a state) and the levels (each a file of encodings in the work
 * directory, mapped back to be expanded), with the growing arena a batch writes its output
 * into.  The memory budget (--max-memory) is enforced here: the seen-set stops growing when
 * growing would pass it, and the search stops (search.c).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "state.h"

/* ---------------------------------------------------------------------------------------
 * The seen-set: open addressing over 64-bit fingerprints
 * ------------------------------------------------------------------------------------- */

static uint64_t *seen;
static uint64_t seen_cap;
uint64_t seen_count;
double seen_budget;
volatile int seen_full;

int seen_has(uint64_t fp) {
    if (!seen_cap) return 0; /* expand mode: no seen-set, every candidate is new */
    uint64_t mask = seen_cap - 1;
    for (uint64_t i = fp & mask;; i = (i + 1) & mask) {
        if (seen[i] == fp) return 1;
        if (!seen[i]) return 0;
    }
}

static void seen_grow(void);

int seen_add(uint64_t fp) {
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
 * Levels: a batch's arena in memory, a whole level in a file (state.h says why)
 * ------------------------------------------------------------------------------------- */

void level_add(Level *l, const u8 *enc, int n) {
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

void dl_open(DiskLevel *l, const char *dir, long depth) {
    memset(l, 0, sizeof *l);
    snprintf(l->path, sizeof l->path, "%s/states-%ld", dir, depth);
    l->f = fopen(l->path, "w+b");
    if (!l->f) die("cannot write to the work directory");
    setvbuf(l->f, NULL, _IOFBF, 1 << 20);
}

void dl_add(DiskLevel *l, const u8 *enc, int n) {
    u8 hdr[2] = {(u8)(n & 0xff), (u8)(n >> 8)};
    if (fwrite(hdr, 1, 2, l->f) != 2 || fwrite(enc, 1, (size_t)n, l->f) != (size_t)n)
        die("cannot write a level to the work directory (disk full?)");
    l->len += (size_t)n + 2;
    l->count++;
}

void dl_map(DiskLevel *l) {
    if (fflush(l->f) != 0) die("cannot write a level to the work directory (disk full?)");
    if (!l->len) return;
    void *m = mmap(NULL, l->len, PROT_READ, MAP_PRIVATE, fileno(l->f), 0);
    if (m == MAP_FAILED) die("cannot map a level back from the work directory");
    madvise(m, l->len, MADV_SEQUENTIAL);
    l->map = m;
}

void dl_close(DiskLevel *l) {
    if (l->map) munmap((void *)l->map, l->len);
    if (l->f) fclose(l->f);
    unlink(l->path);
    memset(l, 0, sizeof *l);
}
