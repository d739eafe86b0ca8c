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
 *
 * md5_prefixes: the insert routing's hash (Hudi's NumericUtils.getMessageDigestHash("MD5", key): the first
 * 8 digest bytes as a little-endian signed long) of keys that all have the same byte length, RFC 1321's
 * 64 steps a block run for MD5_LANES keys at once (one operation for all lanes, which the compiler
 * vectorises), as pyhudi/writer/key_md5.py does with numpy over all keys.
 *
 * ascii_min_max_ranges: the smallest and greatest key of each range of rows in byte order (which is
 * Java's String.compareTo order while every byte is ASCII), and whether every byte was; a batched merge's
 * footer key ranges, one pass over the keys of all its files. Its twin is an Arrow aggregation
 * (pyhudi/index/key_order.py), which also serves keys with other characters.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define KERNEL_VERSION 3
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


/* ------------------------------------------------------------------------------------------------ MD5 */

#define MD5_LANES 64

static const uint32_t MD5_K[64] = {
    0xd76aa478u, 0xe8c7b756u, 0x242070dbu, 0xc1bdceeeu, 0xf57c0fafu, 0x4787c62au, 0xa8304613u, 0xfd469501u,
    0x698098d8u, 0x8b44f7afu, 0xffff5bb1u, 0x895cd7beu, 0x6b901122u, 0xfd987193u, 0xa679438eu, 0x49b40821u,
    0xf61e2562u, 0xc040b340u, 0x265e5a51u, 0xe9b6c7aau, 0xd62f105du, 0x02441453u, 0xd8a1e681u, 0xe7d3fbc8u,
    0x21e1cde6u, 0xc33707d6u, 0xf4d50d87u, 0x455a14edu, 0xa9e3e905u, 0xfcefa3f8u, 0x676f02d9u, 0x8d2a4c8au,
    0xfffa3942u, 0x8771f681u, 0x6d9d6122u, 0xfde5380cu, 0xa4beea44u, 0x4bdecfa9u, 0xf6bb4b60u, 0xbebfbc70u,
    0x289b7ec6u, 0xeaa127fau, 0xd4ef3085u, 0x04881d05u, 0xd9d4d039u, 0xe6db99e5u, 0x1fa27cf8u, 0xc4ac5665u,
    0xf4292244u, 0x432aff97u, 0xab9423a7u, 0xfc93a039u, 0x655b59c3u, 0x8f0ccc92u, 0xffeff47du, 0x85845dd1u,
    0x6fa87e4fu, 0xfe2ce6e0u, 0xa3014314u, 0x4e0811a1u, 0xf7537e82u, 0xbd3af235u, 0x2ad7d2bbu, 0xeb86d391u};
static const int MD5_S[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

/* Byte `p` of the padded message of a `length`-byte key: the key, 0x80, zeros, then the bit length as a
 * little-endian 64-bit integer in the last 8 bytes of the last block. */
static uint8_t padded_byte(const uint8_t *key, int64_t length, int64_t total, int64_t p) {
    if (p < length) return key[p];
    if (p == length) return 0x80;
    if (p >= total - 8) return (uint8_t)(((uint64_t)length * 8) >> (8 * (p - (total - 8))));
    return 0;
}

/* The 16 little-endian words of block `block` of each lane's padded message into m[w * MD5_LANES + lane]. */
static void md5_words(const uint8_t *data, const int64_t *starts, int64_t length, int64_t total, int64_t block,
                      int64_t n, uint32_t *m) {
    for (int64_t lane = 0; lane < n; lane++) {
        const uint8_t *key = data + starts[lane];
        for (int w = 0; w < 16; w++) {
            int64_t p = block * 64 + 4 * w;
            uint32_t word;
            if (p + 4 <= length) {
                memcpy(&word, key + p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                word = __builtin_bswap32(word);
#endif
            } else {
                word = (uint32_t)padded_byte(key, length, total, p) | (uint32_t)padded_byte(key, length, total, p + 1) << 8
                       | (uint32_t)padded_byte(key, length, total, p + 2) << 16
                       | (uint32_t)padded_byte(key, length, total, p + 3) << 24;
            }
            m[w * MD5_LANES + lane] = word;
        }
    }
}

/* One step for every lane: a = b + rotl(F(b, c, d) + a + K[i] + m[g], s), F by the step's round. */
VECTOR_CLONES
static void md5_step(int round, uint32_t *restrict a, const uint32_t *restrict b, const uint32_t *restrict c,
                     const uint32_t *restrict d, const uint32_t *restrict mg, uint32_t k, int s, int64_t n) {
    for (int64_t l = 0; l < n; l++) {
        uint32_t f;
        if (round == 0) f = (b[l] & c[l]) | (~b[l] & d[l]);
        else if (round == 1) f = (d[l] & b[l]) | (~d[l] & c[l]);
        else if (round == 2) f = b[l] ^ c[l] ^ d[l];
        else f = c[l] ^ (b[l] | ~d[l]);
        f += a[l] + k + mg[l];
        a[l] = b[l] + ((f << s) | (f >> (32 - s)));
    }
}

static void md5_lanes(const uint8_t *data, const int64_t *starts, int64_t length, int64_t n, int64_t *out) {
    uint32_t state[4][MD5_LANES], work[4][MD5_LANES], m[16 * MD5_LANES];
    static const uint32_t init[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    int64_t blocks = (length + 8) / 64 + 1, total = 64 * blocks;
    for (int r = 0; r < 4; r++)
        for (int64_t l = 0; l < n; l++) state[r][l] = init[r];
    for (int64_t block = 0; block < blocks; block++) {
        md5_words(data, starts, length, total, block, n, m);
        memcpy(work, state, sizeof work);
        uint32_t *a = work[0], *b = work[1], *c = work[2], *d = work[3];
        for (int i = 0; i < 64; i++) {
            int round = i / 16;
            int g = round == 0 ? i : round == 1 ? (5 * i + 1) % 16 : round == 2 ? (3 * i + 5) % 16 : (7 * i) % 16;
            md5_step(round, a, b, c, d, m + g * MD5_LANES, MD5_K[i], MD5_S[round][i % 4], n);
            uint32_t *t = d; /* roles rotate: A <- D, B <- the new A, C <- B, D <- C */
            d = c;
            c = b;
            b = a;
            a = t;
        }
        for (int64_t l = 0; l < n; l++) { /* after 64 steps the roles are back where they started */
            state[0][l] += a[l];
            state[1][l] += b[l];
            state[2][l] += c[l];
            state[3][l] += d[l];
        }
    }
    for (int64_t l = 0; l < n; l++) out[l] = (int64_t)(((uint64_t)state[1][l] << 32) | state[0][l]);
}

static PyObject *md5_prefixes(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data = {0}, starts = {0}, out = {0};
    Py_ssize_t length;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*nw*", &data, &starts, &length, &out)) return NULL;
    int64_t n = starts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *st = (const int64_t *)starts.buf;
    int ok = length >= 0 && starts.len % (Py_ssize_t)sizeof(int64_t) == 0
             && out.len >= (Py_ssize_t)(n * (Py_ssize_t)sizeof(int64_t));
    for (int64_t i = 0; ok && i < n; i++) ok = st[i] >= 0 && st[i] <= data.len - length;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "md5 kernel: the keys or the output buffer do not match");
    } else {
        const uint8_t *bytes = (const uint8_t *)data.buf;
        int64_t *dst = (int64_t *)out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t lo = 0; lo < n; lo += MD5_LANES)
            md5_lanes(bytes, st + lo, length, n - lo < MD5_LANES ? n - lo : MD5_LANES, dst + lo);
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&out);
    return result;
}

/* -1, 0 or 1 as key i sorts before, with or after key j (bytes compared unsigned, a prefix first). */
static int compare_keys(const uint8_t *data, const int64_t *off, int64_t i, int64_t j) {
    int64_t li = off[i + 1] - off[i], lj = off[j + 1] - off[j];
    int c = memcmp(data + off[i], data + off[j], (size_t)(li < lj ? li : lj));
    if (c != 0) return c < 0 ? -1 : 1;
    return li < lj ? -1 : (li > lj ? 1 : 0);
}

static PyObject *ascii_min_max_ranges(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data = {0}, offsets = {0}, bounds = {0}, out = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &data, &offsets, &bounds, &out)) return NULL;
    int64_t rows = offsets.len / (Py_ssize_t)sizeof(int64_t) - 1, k = bounds.len / (Py_ssize_t)sizeof(int64_t) - 1;
    const int64_t *off = (const int64_t *)offsets.buf, *at = (const int64_t *)bounds.buf;
    int ok = rows >= 0 && k >= 0 && offsets.len % (Py_ssize_t)sizeof(int64_t) == 0
             && bounds.len % (Py_ssize_t)sizeof(int64_t) == 0
             && out.len >= (Py_ssize_t)(2 * k * (Py_ssize_t)sizeof(int64_t));
    for (int64_t i = 0; ok && i < rows; i++) ok = off[i] >= 0 && off[i] <= off[i + 1] && off[i + 1] <= data.len;
    for (int64_t g = 0; ok && g < k; g++) ok = at[g] >= 0 && at[g] <= at[g + 1] && at[g + 1] <= rows;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "min/max kernel: the keys, ranges or output buffer do not match");
    } else {
        const uint8_t *bytes = (const uint8_t *)data.buf;
        int64_t *dst = (int64_t *)out.buf;
        uint8_t high = 0;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t g = 0; g < k; g++) {
            int64_t lo = at[g] < at[g + 1] ? at[g] : -1, hi = lo;
            for (int64_t i = at[g] + 1; i < at[g + 1]; i++) {
                if (compare_keys(bytes, off, i, lo) < 0) lo = i;
                if (compare_keys(bytes, off, i, hi) > 0) hi = i;
            }
            dst[2 * g] = lo;
            dst[2 * g + 1] = hi;
        }
        if (rows > 0)
            for (int64_t b = off[0]; b < off[rows]; b++) high |= bytes[b];
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong((high & 0x80) == 0);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&bounds);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"murmur_positions", murmur_positions, METH_VARARGS,
     "murmur_positions(data, starts, lengths, nb, nb_hash, vector_size, magic, shift, b'', out): bloom bit "
     "positions of keys with `nb` whole 4-byte blocks into out (int64, nb_hash x keys, round-major)."},
    {"murmur_set_bits", murmur_set_bits, METH_VARARGS,
     "murmur_set_bits(data, starts, lengths, nb, nb_hash, vector_size, magic, shift, row_starts, bits): sets "
     "the keys' bits in the flat bool array `bits`, each key's offset by its row_starts entry (b'': none)."},
    {"md5_prefixes", md5_prefixes, METH_VARARGS,
     "md5_prefixes(data, starts, length, out): the first 8 MD5 bytes (a little-endian int64) of each key "
     "data[starts[i]:starts[i] + length] into out (int64)."},
    {"ascii_min_max_ranges", ascii_min_max_ranges, METH_VARARGS,
     "ascii_min_max_ranges(data, offsets, bounds, out) -> bool: for each range bounds[g]:bounds[g + 1] of the "
     "keys data[offsets[i]:offsets[i + 1]], the rows of its smallest and greatest key in byte order into "
     "out[2g], out[2g + 1] (-1: an empty range); True when every byte of the keys is ASCII."},
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
