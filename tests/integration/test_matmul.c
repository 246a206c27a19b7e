/*  `spm matmul` and `spm gen matrix` as a user runs them: the real binary
    ($SPM_BIN) on an embedded VM with real processes. Every product is
    checked against the triple loop of tests/ref/matmul_ref.h (relative
    Frobenius error within 1e-12); every bad input must give one line with
    the file and line on stderr, a non-zero exit and no output file. */
#include "tests/check_main.h"
#include "tests/ref/matmul_ref.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"
#include "datacache/nodecache.h"

#include <dirent.h>
#include <sys/resource.h>
#include <pty.h>

/*  Runs `spm matmul A B -o C` with EXTRA options (NULL-terminated, up to
    8) on 2 IEUs; returns the exit status, *ERR the stderr (caller frees). */
static int matmul(const char *a, const char *b, const char *c, const char *const *extra, char **err)
{
    const char *argv[24] = {"matmul", a, b, "-o", c, "--ieus", "2", "--quiet"};
    int n = 8;
    for (; extra && *extra && n < 22; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    return spm_test_run(argv, 60, NULL, err);
}

/*  Multiplies the files A and B through spm and returns the relative error
    of C against the reference product of what the reference reads. */
static double check_files(const char *a, const char *b, const char *const *extra)
{
    char *err = NULL;
    const char *c = path("C.mtx");
    unlink(c);
    int rc = matmul(a, b, c, extra, &err);
    ck_assert_msg(rc == 0, "spm matmul failed (%d): %s", rc, err);
    free(err);
    int m, p, p2, n, cm, cn;
    double *x = ref_read_mtx(a, &m, &p), *y = ref_read_mtx(b, &p2, &n);
    double *z = ref_read_mtx(c, &cm, &cn);
    ck_assert(x && y && z);
    ck_assert_int_eq(cm, m);
    ck_assert_int_eq(cn, n);
    double *r = ref_matmul(m, p, n, x, y);
    double e = ref_rel_err(m, n, z, r);
    free(x);
    free(y);
    free(z);
    free(r);
    return e;
}

/*  Writes random A (m x p) and B (p x n) and checks their product. */
static double check_random(int m, int p, int n, double density, int field, int array,
                           const char *const *extra)
{
    double *a = ref_random(m, p, density, 7 + m, field),
           *b = ref_random(p, n, density, 8 + n, field);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), m, p, a, array, field, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), p, n, b, array, field, REF_GENERAL), 0);
    free(a);
    free(b);
    return check_files(path("A.mtx"), path("B.mtx"), extra);
}

/*  Writes A.mtx, random dense M x P (an array file), and B.mtx, random
    P x N at DENSITY (an array file when dense), from SEED. */
static void write_inputs(int m, int p, int n, double density, int seed)
{
    double *a = ref_random(m, p, 1.0, seed, REF_REAL),
           *b = ref_random(p, n, density, seed + 1, REF_REAL);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), m, p, a, 1, REF_REAL, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), p, n, b, density >= 1.0, REF_REAL, REF_GENERAL),
                     0);
    free(a);
    free(b);
}

START_TEST(dense_shapes)
{
    const char *k32[] = {"--block", "32", NULL};
    ck_assert(check_random(96, 96, 96, 1.0, REF_REAL, 0, k32) < 1e-12);  /* square, a multiple */
    ck_assert(check_random(150, 40, 30, 1.0, REF_REAL, 1, k32) < 1e-12); /* tall, array files */
    ck_assert(check_random(20, 90, 130, 1.0, REF_REAL, 0, k32) < 1e-12); /* wide */
}
END_TEST

static int dir_entries(void);

/*  Whether the entries of the coordinate file C come row by row and,
    within a row, column by column, each once: what C.mtx promises. */
static int rows_in_order(const char *c)
{
    FILE *f = fopen(c, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    unsigned long long row = 0, col = 0, r, k;
    int size_line = 1, ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        if (line[0] == '%' || (size_line && !(size_line = 0)))
            continue;
        ok = sscanf(line, "%llu %llu", &r, &k) == 2 && (r > row || (r == row && k > col));
        row = r;
        col = k;
    }
    fclose(f);
    return ok;
}

/*  Dense inputs with spm's own block side (512 here): the path where
    spm matmul also has the embedded VM prepare its store (--warm-mb) and
    its IEUs' heaps (--heap-mb). Sides that are not multiples of 512. C's
    block rows are written in 8 chunks of 64 rows, formatted on two
    threads: the file's entries must still be in order. */
START_TEST(dense_default_block)
{
    ck_assert(check_random(600, 700, 520, 1.0, REF_REAL, 1, NULL) < 1e-12);
    ck_assert(rows_in_order(path("C.mtx")));
}
END_TEST

/*  The disk fills up while C.mtx is written (a file-size limit on the
    client stands in for it; the VM runs apart, so only the client has
    it): one line naming the file and the reason, exit 1, no C.mtx and no
    temporary file left. The first chunk fails on the second thread. */
START_TEST(full_disk_while_writing_c)
{
    write_inputs(300, 200, 300, 1.0, 5);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "2", NULL);
    int before = dir_entries();
    struct rlimit old, small = {1 << 20, 1 << 20}; /* C.mtx takes about 3.5 MiB */
    getrlimit(RLIMIT_FSIZE, &old);
    setrlimit(RLIMIT_FSIZE, &small);
    char *err = NULL;
    const char *remote[] = {"--center", vm.ep, NULL};
    int rc = matmul(path("A.mtx"), path("B.mtx"), path("C.mtx"), remote, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_eq(rc, 1);
    char want[256]; /* the file and the reason (issue 39) */
    snprintf(want, sizeof want, "spm: matmul: %s: File too large\n", path("C.mtx"));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(access(path("C.mtx"), F_OK), -1);
    ck_assert_int_eq(dir_entries(), before);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Blocks that are not square (--block MxPxN: A's blocks M x P, B's
    P x N), with sides that divide no dimension: dense array files, sparse
    ones with empty blocks, and a policy and update that issue many SIs
    per block of C. */
START_TEST(rectangular_blocks)
{
    const char *tall[] = {"--block", "40x16x24", NULL};
    const char *wide[] = {"--block",     "13x50x7",  "--policy", "r", "--update",
                          "distributed", "--per-si", "1",        NULL};
    ck_assert(check_random(150, 70, 90, 1.0, REF_REAL, 1, tall) < 1e-12);
    ck_assert(check_random(100, 130, 60, 0.02, REF_REAL, 0, wide) < 1e-12);
    ck_assert(check_random(60, 300, 45, 0.003, REF_REAL, 0, tall) < 1e-12);
}
END_TEST

START_TEST(sparse_shapes)
{
    const char *k25[] = {"--block", "25", NULL};
    ck_assert(check_random(200, 200, 200, 0.02, REF_REAL, 0, k25) < 1e-12);
    ck_assert(check_random(230, 70, 180, 0.05, REF_REAL, 0, k25) < 1e-12);
    ck_assert(check_random(60, 300, 45, 0.003, REF_REAL, 0, k25) < 1e-12); /* empty blocks */
}
END_TEST

/*  Symmetric times skew-symmetric, mirrored on read. */
START_TEST(symmetric_inputs)
{
    int n = 77;
    double *a = ref_random(n, n, 0.2, 1, REF_REAL), *b = ref_random(n, n, 0.2, 2, REF_REAL);
    ref_symmetrize(n, a, REF_SYMMETRIC);
    ref_symmetrize(n, b, REF_SKEW);
    ck_assert_int_eq(ref_write_mtx(path("S.mtx"), n, n, a, 0, REF_REAL, REF_SYMMETRIC), 0);
    ck_assert_int_eq(ref_write_mtx(path("K.mtx"), n, n, b, 0, REF_REAL, REF_SKEW), 0);
    const char *k16[] = {"--block", "16", NULL};
    ck_assert(check_files(path("S.mtx"), path("K.mtx"), k16) < 1e-12);
    free(a);
    free(b);
}
END_TEST

/*  Pattern times integer: an integer result, exact. */
START_TEST(pattern_inputs)
{
    double *a = ref_random(50, 40, 0.1, 3, REF_PATTERN),
           *b = ref_random(40, 45, 0.3, 4, REF_INTEGER);
    ck_assert_int_eq(ref_write_mtx(path("P.mtx"), 50, 40, a, 0, REF_PATTERN, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("I.mtx"), 40, 45, b, 0, REF_INTEGER, REF_GENERAL), 0);
    const char *k16[] = {"--block", "16", NULL};
    ck_assert(check_files(path("P.mtx"), path("I.mtx"), k16) == 0.0);
    FILE *f = fopen(path("C.mtx"), "r");
    char banner[128] = "";
    ck_assert_ptr_nonnull(fgets(banner, sizeof banner, f));
    fclose(f);
    ck_assert_str_eq(banner, "%%MatrixMarket matrix coordinate integer general\n");
    free(a);
    free(b);
}
END_TEST

static const char *policies[] = {"ss", "sr", "r", "s", "syn"};
static const char *updates[] = {"write", "update", "distributed", "mixture"};

START_TEST(every_policy_and_update)
{
    double *a = ref_random(70, 64, 0.6, 5, REF_REAL), *b = ref_random(64, 58, 0.6, 6, REF_REAL);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), 70, 64, a, 0, REF_REAL, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), 64, 58, b, 0, REF_REAL, REF_GENERAL), 0);
    for (size_t u = 0; u < 4; u++) {
        /* two products per SI: chains of several SIs per C block, each SI multi-product */
        const char *extra[] = {"--block",  "16",       "--policy", policies[_i], "--update",
                               updates[u], "--per-si", "2",        NULL};
        double e = check_files(path("A.mtx"), path("B.mtx"), extra);
        ck_assert_msg(e < 1e-12, "%s/%s: error %g", policies[_i], updates[u], e);
    }
    free(a);
    free(b);
}
END_TEST

/*  A running VM of two nodes (one center, two agents of one IEU each, their
    own caches): the client reaches it only through --center, as a client
    off the cluster would, and both nodes work. */
START_TEST(remote_center_two_nodes)
{
    char ep[128], store[128], c1[128], c2[128];
    snprintf(ep, sizeof ep, "ipc://%s/center", base);
    snprintf(store, sizeof store, "%s/store", base);
    snprintf(c1, sizeof c1, "%s/cache1", base);
    snprintf(c2, sizeof c2, "%s/cache2", base);
    const char *center[] = {"center", "--listen",    ep,     "--store",
                            store,    "--log-level", "warn", NULL};
    spm_test_proc_t pc = spm_test_start(center);
    const char *agent1[] = {"agent", "--center", ep, "--ieus", "1", "--cache-dir", c1, NULL};
    const char *agent2[] = {"agent", "--center", ep, "--ieus", "1", "--cache-dir", c2, NULL};
    spm_test_proc_t pa1 = spm_test_start(agent1), pa2 = spm_test_start(agent2);
    double *a = ref_random(120, 100, 0.5, 11, REF_REAL),
           *b = ref_random(100, 90, 0.5, 12, REF_REAL);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), 120, 100, a, 0, REF_REAL, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), 100, 90, b, 0, REF_REAL, REF_GENERAL), 0);
    usleep(300000); /* let both agents join */
    const char *ss[] = {"--center", ep, "--block", "16", "--per-si", "1", NULL};
    ck_assert(check_files(path("A.mtx"), path("B.mtx"), ss) < 1e-12);
    const char *argv[] = {
        "matmul",  path("A.mtx"), path("B.mtx"), "-o", path("C.mtx"), "--center",    ep,
        "--block", "16",          "--policy",    "r",  "--update",    "distributed", "--json",
        NULL};
    char *out = NULL, *err = NULL;
    int rc = spm_test_run(argv, 60, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    const char *second = strstr(out, "\"node\": 1,");
    ck_assert_msg(second && spm_test_json_num(second, "sis") > 0, "node 1 got no work: %s", out);
    free(out);
    free(err);
    kill(pc.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&pc, 10, NULL, NULL), 0);
    ck_assert_int_eq(spm_test_finish(&pa1, 15, NULL, NULL), 0);
    ck_assert_int_eq(spm_test_finish(&pa2, 15, NULL, NULL), 0);
    free(a);
    free(b);
}
END_TEST

/*  A node that reads through the center, as a node on another host does,
    keeps the blocks it made for as long as the VM needs them (C and the
    typed blocks of A and B, as the holder of record) and copies the raw
    staged blocks it loads into no cache (each is read once, by its
    mm.load). Once the client has its result and discards the run, the
    center has the node delete everything: its cache is empty again. */
START_TEST(node_cache_is_emptied_when_the_client_is_done)
{
    enum { M = 120, P = 100, N = 90, K = 16 };
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *remote[] = {"--no-store-reads", NULL};
    spm_test_vm_agent(&vm, "1", remote);
    char cache[160];
    snprintf(cache, sizeof cache, "%s/cache0", vm.dir);
    double *a = ref_random(M, P, 0.05, 21, REF_REAL), *b = ref_random(P, N, 0.05, 22, REF_REAL);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), M, P, a, 0, REF_REAL, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), P, N, b, 0, REF_REAL, REF_GENERAL), 0);
    const char *opts[] = {"--center", vm.ep, "--block", "16", NULL};
    ck_assert(check_files(path("A.mtx"), path("B.mtx"), opts) < 1e-12);
    usleep(300000); /* the drops of the discard reach the agent */
    spm_nodecache_t *nc = spm_nodecache_open(cache, 0, 0); /* beside the agent's IEU */
    ck_assert_ptr_nonnull(nc);
    spm_nodecache_stats_t st;
    spm_nodecache_stats(nc, &st);
    spm_nodecache_destroy(&nc);
    spm_test_vm_stop(&vm);
    ck_assert_msg(st.blocks == 0 && st.kept_blocks == 0, "%llu blocks (%llu kept) left",
                  (unsigned long long)st.blocks, (unsigned long long)st.kept_blocks);
    free(a);
    free(b);
}
END_TEST

/*  A real matrix: committed west0067 (SuiteSparse, public domain), and
    the larger ones of ../shared when present. */
START_TEST(real_matrices)
{
    const char *const k32[] = {"--block", "32", NULL};
    const char *mine = "tests/data/west0067.mtx";
    if (access(mine, R_OK) == 0)
        ck_assert(check_files(mine, mine, k32) < 1e-12);
    else
        fprintf(stderr, "skipped: %s is absent (run from the project's root)\n", mine);
    const char *shared[] = {"../shared/data/mtx/bcsstk13.mtx",
                            "/work/shared/data/mtx/bcsstk13.mtx"};
    for (size_t i = 0; i < 2; i++)
        if (access(shared[i], R_OK) == 0) {
            const char *const k512[] = {"--block", "512", NULL};
            ck_assert(check_files(shared[i], shared[i], k512) < 1e-12);
            return;
        }
    fprintf(stderr, "skipped: bcsstk13.mtx (no ../shared/data)\n");
}
END_TEST

/*  Bad inputs: one line naming the file (and line), exit 1, and the output
    directory holds nothing new: no C.mtx, no temporary file. */
static const struct {
    const char *a, *b;
    const char *says;
} bad[] = {
    {"%%MatrixMarket matrix coordinate real generl\n2 2 1\n1 1 1\n", NULL, "A.mtx:1: "},
    {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 x\n", NULL, "A.mtx:4: "},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", NULL, "A.mtx:3: "},
    {"%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n", NULL, "A.mtx:4: "},
    {NULL, "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 1e400\n", "B.mtx:3: "},
    {NULL, "%%MatrixMarket matrix array real general\n3 2\n1\n2\n", "inner dimensions"},
    {NULL, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n", "B.mtx:4: "},
    /* both bad, B read at the same time as A: A's error, every time */
    {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 x\n",
     "%%MatrixMarket matrix coordinate real general\n2 2 1\n9 1 1\n", "A.mtx:4: "},
};

static const char good[] = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 2\n";

static int dir_entries(void)
{
    DIR *d = opendir(base);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

START_TEST(bad_input)
{
    FILE *f = fopen(path("A.mtx"), "w");
    fputs(bad[_i].a ? bad[_i].a : good, f);
    fclose(f);
    f = fopen(path("B.mtx"), "w");
    fputs(bad[_i].b ? bad[_i].b : good, f);
    fclose(f);
    int before = dir_entries();
    char *err = NULL;
    int rc = matmul(path("A.mtx"), path("B.mtx"), path("C.mtx"), NULL, &err);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, bad[_i].says) != NULL, "case %d: '%s' lacks '%s'", _i, err,
                  bad[_i].says);
    ck_assert_msg(spm_test_lines(err) == 1, "case %d: not one line: '%s'", _i, err);
    ck_assert_int_eq(access(path("C.mtx"), F_OK), -1);
    ck_assert_int_eq(dir_entries(), before);
    free(err);
}
END_TEST

START_TEST(missing_input_and_usage)
{
    char *err = NULL;
    ck_assert_int_ne(matmul(path("none.mtx"), path("none.mtx"), path("C.mtx"), NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "none.mtx"));
    free(err);
    const char *argv[] = {"matmul", "--help", NULL};
    char *out = NULL;
    ck_assert_int_eq(spm_test_run(argv, 10, &out, NULL), 0);
    for (size_t i = 0; i < 5; i++)
        ck_assert_ptr_nonnull(strstr(out, policies[i]));
    ck_assert_ptr_nonnull(strstr(out, "--center"));
    free(out);
    const char *bad_policy[] = {"matmul", "a", "b", "-o", "c", "--policy", "fast", NULL};
    ck_assert_int_eq(spm_test_run(bad_policy, 10, NULL, NULL), 2);
    /* --block is K or MxPxN, each side 1 to 16384 */
    const char *sides[] = {"0", "8x8", "8x0x8", "1x2x3x4", "8x16384x16385", "8xx8", "x"};
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
        const char *bad_block[] = {"matmul", "a", "b", "-o", "c", "--block", sides[i], NULL};
        ck_assert_int_eq(spm_test_run(bad_block, 10, NULL, &err), 2);
        ck_assert_msg(strstr(err, "--block") && strstr(err, sides[i]), "%s: %s", sides[i], err);
        free(err);
    }
}
END_TEST

START_TEST(gen_matrix)
{
    const char *a1[] = {"gen",  "matrix", "--rows", "300", "--cols",       "200", "--density",
                        "0.05", "--seed", "7",      "-o",  path("G1.mtx"), NULL};
    const char *a2[] = {"gen",  "matrix", "--rows", "300", "--cols",       "200", "--density",
                        "0.05", "--seed", "7",      "-o",  path("G2.mtx"), NULL};
    ck_assert_int_eq(spm_test_run(a1, 20, NULL, NULL), 0);
    ck_assert_int_eq(spm_test_run(a2, 20, NULL, NULL), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", path("G1.mtx"), path("G2.mtx"));
    ck_assert_int_eq(system(cmd), 0); /* same seed, same file */
    int m, n;
    double *g = ref_read_mtx(path("G1.mtx"), &m, &n);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(m, 300);
    ck_assert_int_eq(n, 200);
    size_t nz = 0;
    for (size_t i = 0; i < 60000; i++)
        nz += g[i] != 0.0;
    ck_assert_msg(nz > 2600 && nz < 3400, "density off: %zu of 60000", nz);
    free(g);
    const char *dense[] = {"gen",        "matrix",    "--rows", "40",          "--format", "array",
                           "--symmetry", "symmetric", "-o",     path("D.mtx"), NULL};
    ck_assert_int_eq(spm_test_run(dense, 20, NULL, NULL), 0);
    g = ref_read_mtx(path("D.mtx"), &m, &n);
    ck_assert_ptr_nonnull(g);
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 40; j++)
            ck_assert(g[i * 40 + j] == g[j * 40 + i] && g[i * 40 + j] != 0.0);
    free(g);
    /* and what gen writes, matmul reads */
    const char *k64[] = {"--block", "64", NULL};
    ck_assert(check_files(path("D.mtx"), path("D.mtx"), k64) < 1e-12);
}
END_TEST

/*  Everything a terminal shows of a run: [fd] read to the end. */
static char *run_on_terminal(const char *const *argv)
{
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(spm_test_bin(), (char *const *)argv);
        _exit(127);
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while (buf && (n = read(master, buf + len, cap - len - 1)) > 0) /* EIO once it exits */
        if ((len += (size_t)n) + 1 == cap)
            buf = realloc(buf, cap *= 2);
    ck_assert_ptr_nonnull(buf);
    buf[len] = '\0';
    close(master);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "spm matmul failed:\n%s", buf);
    return buf;
}

/*  On a terminal, reading the inputs and writing C show a meter that
    names the files, and each meter's line is cleared when it ends; piped,
    the same run prints the report and no meter. */
START_TEST(terminal_shows_reading_and_writing)
{
    write_inputs(300, 200, 100, 0.3, 3);
    char what[2][300];
    snprintf(what[0], sizeof what[0], "reading %s and %s", path("A.mtx"), path("B.mtx"));
    snprintf(what[1], sizeof what[1], "writing %s", path("C.mtx"));
    const char *argv[] = {"spm",         "matmul", path("A.mtx"), path("B.mtx"), "-o",
                          path("C.mtx"), "--ieus", "2",           NULL};
    char *tty = run_on_terminal(argv);
    const char *at = tty;
    for (int i = 0; i < 2; i++) { /* in this order, each cleared before the next */
        const char *m = strstr(at, what[i]);
        ck_assert_msg(m, "no '%s' in:\n%s", what[i], tty);
        const char *pct = strchr(m, '%'), *clear = strstr(m, "\r\033[K");
        ck_assert_msg(pct && clear && pct < clear, "'%s': no share done, or never cleared",
                      what[i]);
        at = m;
    }
    free(tty);
    char *out = NULL;
    ck_assert_int_eq(spm_test_run(argv + 1, 60, &out, NULL), 0);
    ck_assert_msg(!strstr(out, "reading ") && !strstr(out, "writing ") && !strchr(out, '\r'),
                  "a meter went to a pipe:\n%s", out);
    ck_assert_ptr_nonnull(strstr(out, "SIs:")); /* the report still comes */
    free(out);
    ck_assert(check_files(path("A.mtx"), path("B.mtx"), NULL) < 1e-12);
}
END_TEST

static Suite *matmul_suite(void)
{
    Suite *s = suite_create("matmul");
    const spm_test_case_t c = {
        .timeout_s = 120, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &c, dense_shapes);
    SPM_TEST_ADD(s, &c, dense_default_block);
    SPM_TEST_ADD(s, &c, full_disk_while_writing_c);
    SPM_TEST_ADD(s, &c, rectangular_blocks);
    SPM_TEST_ADD(s, &c, sparse_shapes);
    SPM_TEST_ADD(s, &c, symmetric_inputs);
    SPM_TEST_ADD(s, &c, pattern_inputs);
    SPM_TEST_ADD_LOOP(s, &c, every_policy_and_update, 0, 5);
    SPM_TEST_ADD(s, &c, remote_center_two_nodes);
    SPM_TEST_ADD(s, &c, node_cache_is_emptied_when_the_client_is_done);
    SPM_TEST_ADD(s, &c, real_matrices);
    SPM_TEST_ADD_LOOP(s, &c, bad_input, 0, sizeof bad / sizeof *bad);
    SPM_TEST_ADD(s, &c, missing_input_and_usage);
    SPM_TEST_ADD(s, &c, gen_matrix);
    SPM_TEST_ADD(s, &c, terminal_shows_reading_and_writing);
    return s;
}

SPM_TEST_MAIN(matmul_suite)
