/* Compiled kernels for pyhudi's hottest per-key loops. Optional: every kernel has a numpy twin that
 * gives the same bits (pyhudi/index/murmur.py), used when this module is not built or is stale
 * (KERNEL_VERSION), and tests compare the two. No numpy headers: arrays come in through the buffer
 * protocol, so the module builds with a C compiler and Python's headers alone.
 *
 * murmur_positions / murmur_set_bits: the bloom filter's bit positions of keys that all have the same
 * number of whole 4-byte blocks, as Hudi computes them (Hadoop's MurmurHash, hash type 1; round i seeded with round
 * i - 1's signed hash; bit = Math.abs(h % vectorSize) with Java's truncating %). The loops run over a
 * chunk of keys at a time, one operation for all keys of the chunk, so the compiler vectorises them
 * across keys (a key's rounds are one long dependency chain; the keys of a chunk are independent).
 * murmur_set_bits sets the bits as it goes, so no (rounds x keys) position matrix is built. The GIL is
 * released: the write threads of one process hash their files at the same time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define KERNEL_VERSION 1
#define CHUNK 256

static const uint32_t M = 0x5BD1E995u;

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* Java reads the tail bytes SIGNED (`(int) data[i] << s`): bytes >= 0x80 sign-extend; the first of
 * `left` tail bytes lands in bits 8 * (left - 1).. and the last in bits 0.. */
static uint32_t tail_word(const uint8_t *key, int64_t nb, int64_t length) {
    uint32_t tail = 0;
    int64_t left = length - 4 * nb;
    for (int64_t back = left; back >= 1; back--) {
        uint32_t byte = (uint32_t)(int32_t)(int8_t)key[length - back]; /* sign-extended, then shifted unsigned */
        tail ^= byte << (8 * (back - 1));
    }
    return tail;
}

/* One round for `n` (<= CHUNK) keys whose mixed blocks are `mixed[j * CHUNK + i]`: `h` holds each key's
 * previous round (its seed) and takes this one; pos[i] gets the key's bit. `magic`/`shift` divide by
 * `vector_size` without a division (murmur.py's _division_magic). */
VECTOR_CLONES
static void one_round(uint32_t *h, const uint32_t *mixed, int64_t nb, const uint32_t *length32,
                      const uint32_t *tail, const uint32_t *tail_mask, int64_t n, uint64_t vector_size,
                      uint64_t magic, uint64_t shift, int64_t *pos) {
    uint32_t ab[CHUNK];
    for (int64_t i = 0; i < n; i++) h[i] ^= length32[i];
    for (int64_t j = 0; j < nb; j++) {
        const uint32_t *k = mixed + j * CHUNK;
        for (int64_t i = 0; i < n; i++) h[i] = (h[i] * M) ^ k[i];
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = h[i];
        uint32_t t = (x ^ tail[i]) * M; /* keys with tail bytes take this; tail_mask selects */
        x = (t & tail_mask[i]) | (x & ~tail_mask[i]);
        x ^= x >> 13;
        x *= M;
        x ^= x >> 15;
        h[i] = x;
        int32_t s = (int32_t)x;
        /* |h| as uint32: the int32 abs of -2^31 wraps to -2^31, whose uint32 view is 2^31 */
        ab[i] = s < 0 ? (uint32_t)0 - (uint32_t)s : (uint32_t)s;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t a = ab[i];
        pos[i] = (int64_t)(a - ((a * magic) >> shift) * vector_size);
    }
}

typedef struct {
    Py_buffer data, starts, lengths, row_starts, out;
    Py_ssize_t nb, nb_hash;
    unsigned long long vector_size, magic, shift;
    int64_t n;
} Job;

/* The keys' blocks mixed (they do not depend on the seed), lengths and tails, for keys lo..lo+m. */
static void prepare_chunk(const Job *job, int64_t lo, int64_t m, uint32_t *mixed, uint32_t *length32,
                          uint32_t *tail, uint32_t *tail_mask) {
    const uint8_t *bytes = (const uint8_t *)job->data.buf;
    const int64_t *st = (const int64_t *)job->starts.buf;
    const int64_t *ln = (const int64_t *)job->lengths.buf;
    int64_t nb = job->nb;
    for (int64_t i = 0; i < m; i++) {
        const uint8_t *key = bytes + st[lo + i];
        for (int64_t j = 0; j < nb; j++) {
            uint32_t k;
            memcpy(&k, key + 4 * j, 4); /* Java assembles a block little-endian */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            k = __builtin_bswap32(k);
#endif
            k *= M;
            k ^= k >> 24;
            mixed[j * CHUNK + i] = k * M;
        }
        length32[i] = (uint32_t)ln[lo + i];
        tail[i] = tail_word(key, nb, ln[lo + i]);
        tail_mask[i] = ln[lo + i] > 4 * nb ? 0xFFFFFFFFu : 0u;
    }
}

/* Every round of every key: positions into out (int64, nb_hash x n, round-major), or with `set_bits`
 * bits[row_starts[i] + position] = 1 in the flat bool array out (row_starts empty: all zero). */
static void run_job(const Job *job, uint32_t *mixed, int set_bits) {
    uint32_t h[CHUNK], length32[CHUNK], tail[CHUNK], tail_mask[CHUNK];
    int64_t scratch[CHUNK];
    const int64_t *row_starts = job->row_starts.len ? (const int64_t *)job->row_starts.buf : NULL;
    uint8_t *bits = (uint8_t *)job->out.buf;
    int64_t *positions = (int64_t *)job->out.buf;
    for (int64_t lo = 0; lo < job->n; lo += CHUNK) {
        int64_t m = job->n - lo < CHUNK ? job->n - lo : CHUNK;
        prepare_chunk(job, lo, m, mixed, length32, tail, tail_mask);
        memset(h, 0, sizeof h);
        for (int64_t r = 0; r < job->nb_hash; r++) {
            int64_t *pos = set_bits ? scratch : positions + r * job->n + lo;
            one_round(h, mixed, job->nb, length32, tail, tail_mask, m, job->vector_size, job->magic, job->shift,
                      pos);
            if (set_bits) {
                for (int64_t i = 0; i < m; i++) bits[(row_starts ? row_starts[lo + i] : 0) + pos[i]] = 1;
            }
        }
    }
}

/* Parses and checks the arguments: every key inside `data` with `nb` whole blocks, the output large
 * enough. Returns 0 with a Python error set when they do not hold. */
static int parse_job(PyObject *args, Job *job, int set_bits) {
    memset(job, 0, sizeof *job);
    if (!PyArg_ParseTuple(args, "y*y*y*nnKKKy*w*", &job->data, &job->starts, &job->lengths, &job->nb,
                          &job->nb_hash, &job->vector_size, &job->magic, &job->shift, &job->row_starts,
                          &job->out)) {
        return 0;
    }
    int64_t n = job->starts.len / (Py_ssize_t)sizeof(int64_t);
    job->n = n;
    const int64_t *st = (const int64_t *)job->starts.buf;
    const int64_t *ln = (const int64_t *)job->lengths.buf;
    const int64_t *rs = job->row_starts.len ? (const int64_t *)job->row_starts.buf : NULL;
    int64_t nb = job->nb;
    int ok = job->starts.len % (Py_ssize_t)sizeof(int64_t) == 0 && job->lengths.len == job->starts.len
             && nb >= 0 && job->nb_hash >= 0 && job->vector_size > 0 && job->vector_size < (1ull << 31)
             && (job->row_starts.len == 0 || (set_bits && job->row_starts.len == job->starts.len));
    if (ok && !set_bits) {
        ok = job->out.len >= (Py_ssize_t)(n * job->nb_hash * (Py_ssize_t)sizeof(int64_t));
    }
    for (int64_t i = 0; ok && i < n; i++) {
        ok = st[i] >= 0 && ln[i] >= 4 * nb && ln[i] < 4 * nb + 4 && st[i] + ln[i] <= job->data.len
             && (!set_bits || ((rs ? rs[i] : 0) >= 0
                               && (rs ? rs[i] : 0) + (int64_t)job->vector_size <= job->out.len));
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "murmur kernel: the keys, their block count or the output buffer "
                                          "do not match");
    }
    return ok;
}

static void release_job(Job *job) {
    Py_buffer *all[] = {&job->data, &job->starts, &job->lengths, &job->row_starts, &job->out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (all[i]->obj != NULL) PyBuffer_Release(all[i]);
    }
}

static PyObject *run(PyObject *args, int set_bits) {
    Job job;
    PyObject *result = NULL;
    if (parse_job(args, &job, set_bits)) {
        uint32_t *mixed = PyMem_RawMalloc(sizeof(uint32_t) * CHUNK * (size_t)(job.nb ? job.nb : 1));
        if (mixed == NULL) {
            PyErr_NoMemory();
        } else {
            Py_BEGIN_ALLOW_THREADS
            run_job(&job, mixed, set_bits);
            Py_END_ALLOW_THREADS
            PyMem_RawFree(mixed);
            result = Py_None;
            Py_INCREF(result);
        }
    }
    release_job(&job);
    return result;
}

static PyObject *murmur_positions(PyObject *self, PyObject *args) {
    (void)self;
    return run(args, 0);
}

static PyObject *murmur_set_bits(PyObject *self, PyObject *args) {
    (void)self;
    return run(args, 1);
}

static PyMethodDef methods[] = {
    {"murmur_positions", murmur_positions, METH_VARARGS,
     "murmur_positions(data, starts, lengths, nb, nb_hash, vector_size, magic, shift, b'', out): bloom bit "
     "positions of keys with `nb` whole 4-byte blocks into out (int64, nb_hash x keys, round-major)."},
    {"murmur_set_bits", murmur_set_bits, METH_VARARGS,
     "murmur_set_bits(data, starts, lengths, nb, nb_hash, vector_size, magic, shift, row_starts, bits): sets "
     "the keys' bits in the flat bool array `bits`, each key's offset by its row_starts entry (b'': none)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pyhudi._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "KERNEL_VERSION", KERNEL_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
