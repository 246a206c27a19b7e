/*  =========================================================================
    spm.h - the programmer's interface to the super-instruction virtual machine

    @header
    A program for spm is a set of super-functions (SFs) that run inside the
    center and emit super-instructions (SIs), plus the SI bodies that run
    inside execution units (IEUs) on every node. SIs read and write
    super-data blocks (SDBs): bounded, versioned byte blocks of a registered
    type. Everything a programmer needs is declared here; nothing else in the
    tree is part of the public interface.
    @discuss
    Registration happens from constructors (SPM_CONSTRUCTOR), so linking an
    object file is enough to make its opcodes, types and programs known to
    every process of the VM (all run the same binary).

        static int my_exec(spm_si_ctx_t *ctx) { ... }
        SPM_CONSTRUCTOR(my_isa)
        {
            spm_opcode_register(&(spm_opcode_t){.name = "my.op", .exec = my_exec});
        }

    Errors: every function that can fail returns 0 (or a count) on success and
    a negative SPM_E* code on failure; spm_strerror() names every code and
    spm_error_detail() gives the message of the last failure on this thread
    (file and line where there is one).
    @end
    =========================================================================
*/
#ifndef SPM_H_INCLUDED
#define SPM_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

#define SPM_OK 0
#define SPM_EINVAL -1      /* an argument or option value is invalid */
#define SPM_ENOMEM -2      /* out of memory */
#define SPM_EIO -3         /* reading or writing a file failed */
#define SPM_EFORMAT -4     /* malformed input file or block */
#define SPM_EPROTO -5      /* malformed, oversized or unexpected message */
#define SPM_ENOTFOUND -6   /* no such SDB, job, opcode, type or program */
#define SPM_ESTORE -7      /* the LMDB store failed */
#define SPM_EFULL -8       /* disk or store map full */
#define SPM_ETIMEOUT -9    /* a peer did not answer in time */
#define SPM_EUNREACH -10   /* the center cannot be reached */
#define SPM_EADDRINUSE -11 /* the endpoint is already bound by another process */
#define SPM_ECANCELED -12  /* the job was canceled */
#define SPM_EEXEC -13      /* an SI body failed */
#define SPM_EDEAD -14      /* a peer died */
#define SPM_ESYS -15       /* a system call failed */
#define SPM_EDENIED -16    /* refused: missing or wrong key */
#define SPM_ERANGE -17     /* a value or index is out of range */
#define SPM_ESTRANGER -18  /* the center does not know this peer (it restarted): HELLO again */
#define SPM_ELAST -18

/*  Returns a static, human-readable name for an SPM_E* code ("unknown error"
    for anything else). Never NULL. */
const char *spm_strerror(int code);

/*  Records CODE with a printf-style detail message for this thread and returns
    CODE, so a failure path reads: return spm_error(SPM_EFORMAT, "%s:%d: ...").
    The detail is what the user sees on the one error line. */
int spm_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*  Returns the detail message of the last spm_error() on this thread, or the
    empty string. The pointer stays valid until the next spm_error(). */
const char *spm_error_detail(void);

/* ----------------------------------------------------------- registration */

#define SPM_CONSTRUCTOR(name) __attribute__((constructor)) static void spm_register_##name(void)

/* --------------------------------------------------------------- SDB types */

/*  A type of super-data block. The runtime moves and stores blocks as opaque
    bytes in the type's portable (fixed little-endian) encoding; the ISA that
    owns the type encodes and decodes them. Every function pointer except
    validate is optional. */
typedef struct spm_sdb_type {
    const char *name; /* unique, e.g. "mm.dense" */
    /*  Checks that LEN bytes at DATA are a well-formed block of this type.
        Returns 0 or SPM_EFORMAT. Run on every block that arrives from the
        network before an SI body sees it. */
    int (*validate)(const void *data, size_t len);
    /*  ACC merge: folds partial B into A and returns the result in *OUT
        (malloc'd, owned by the caller) and *OUTLEN. A may be NULL with ALEN 0
        when there is no earlier version. Returns 0 or an SPM_E* code. */
    int (*merge)(const void *a, size_t alen, const void *b, size_t blen, void **out,
                 size_t *outlen);
    /*  Writes a one-line summary of the block (shape, fill) into BUF. */
    void (*summary)(const void *data, size_t len, char *buf, size_t size);
} spm_sdb_type_t;

/*  Registers TYPE (the struct is copied, the strings are not). Returns 0, or
    SPM_EINVAL for a duplicate or missing name. */
int spm_sdb_type_register(const spm_sdb_type_t *type);

/*  Returns the registered type NAME, or NULL. */
const spm_sdb_type_t *spm_sdb_type_find(const char *name);

/* ---------------------------------------------------------------- opcodes */

/*  Operand access modes. The IDU infers dependences from them:
    R    reads the newest version issued before this SI (waits for it);
    W    writes a new version (never waits: versions rename);
    RW   reads the newest version and writes the next one;
    ACC  produces a partial that is merged (with the type's merge) into the
         SDB before the next reader; ACC SIs on one SDB run concurrently. */
typedef enum { SPM_R = 1, SPM_W = 2, SPM_RW = 3, SPM_ACC = 4 } spm_mode_t;

#define SPM_MAX_OPERANDS 256
#define SPM_MAX_REPLY (64 * 1024) /* bytes an SI may send back to its SF */

/*  The execution context of one SI on an IEU thread. */
typedef struct spm_si_ctx spm_si_ctx_t;

typedef struct spm_opcode {
    const char *name; /* unique, e.g. "mm.multiply" */
    /*  Runs the SI. Operands are already local. Returns 0, or an SPM_E* code
        (set a message with spm_error first) to fail the SI. An SI never
        communicates. */
    int (*exec)(spm_si_ctx_t *ctx);
} spm_opcode_t;

/*  Registers OP (copied). Returns 0 or SPM_EINVAL for a duplicate name. */
int spm_opcode_register(const spm_opcode_t *op);

/*  Returns the registered opcode NAME, or NULL. */
const spm_opcode_t *spm_opcode_find(const char *name);

/*  Number of operands of the running SI. */
size_t spm_si_noperands(const spm_si_ctx_t *ctx);

/*  Mode of operand I. */
spm_mode_t spm_si_mode(const spm_si_ctx_t *ctx, size_t i);

/*  Gives the bytes of input operand I (mode R or RW) in *DATA and *LEN. The
    bytes are owned by the runtime, read-only, and valid until exec returns.
    Returns 0, or SPM_ERANGE when I is not a readable operand. */
int spm_si_input(const spm_si_ctx_t *ctx, size_t i, const void **data, size_t *len);

/*  Sets the result of operand I (mode W, RW or ACC). Takes ownership of DATA,
    which must come from malloc. Returns 0 or SPM_ERANGE (DATA is then freed). */
int spm_si_output(spm_si_ctx_t *ctx, size_t i, void *data, size_t len);

/*  The parameter bytes given at issue time (owned by the runtime). */
const void *spm_si_params(const spm_si_ctx_t *ctx, size_t *len);

/*  Copies up to SPM_MAX_REPLY bytes to be handed to the issuing SF's commit.
    Returns 0 or SPM_ERANGE when LEN is too large. */
int spm_si_reply(spm_si_ctx_t *ctx, const void *data, size_t len);

/* ----------------------------------------------------------- super-functions */

typedef uint64_t spm_sdb_t; /* an SDB id, unique in the VM; 0 is no SDB */

/*  Operand flags: hints that change where bytes are kept, never results.
    NOCACHE  the node that runs the SI will not read this block again: an
             input is fetched for this SI alone and not kept in the node's
             cache; an output goes to the center's store but not into the
             node's cache. For blocks read once (staged inputs turned into
             typed ones) and for final results, which would only push
             useful blocks out of the cache and cost a copy each. */
#define SPM_NOCACHE 1u

typedef struct {
    spm_sdb_t sdb;
    spm_mode_t mode;
    unsigned flags; /* SPM_NOCACHE or 0 */
} spm_operand_t;

/*  The IEU asking for work, as an SF's feed policy sees it. */
typedef struct spm_ieu {
    uint32_t ieu;   /* IEU index in the VM, from 0 */
    uint32_t node;  /* node (agent) index in the VM, from 0 */
    uint32_t slots; /* SIs it executes at once */
} spm_ieu_t;

typedef enum { SPM_RESULT_SI = 1, SPM_RESULT_CHILD = 2 } spm_result_kind_t;

/*  What an SF's commit is told. Everything is owned by the runtime and valid
    during the call only. */
typedef struct spm_result {
    spm_result_kind_t kind;
    uint64_t tag;      /* the tag given to spm_sf_issue or spm_sf_spawn */
    int status;        /* 0, or the SPM_E* code the SI or child failed with */
    const void *reply; /* the SI's reply bytes (spm_si_reply), or NULL */
    size_t reply_len;
    const spm_ieu_t *ieu; /* who executed the SI (NULL for a child) */
} spm_result_t;

typedef struct spm_sf spm_sf_t;

/*  A super-function class. A plugin's callbacks run in a host process of
    its job (`spm sfhost`), never in the center, which sends the host the
    job's events and does not wait for it: a slow callback delays only its
    own job. Each turn's events must be answered within the center's
    bound (center.sf_bound_ms, 2 s by default): a callback that runs
    longer, loops, blocks or crashes fails its own job, in one line naming
    the program, the SF and the callback. So callbacks must not block and
    must not run long; a program with very many SIs to issue issues them
    as IEUs ask (the feed hook) or a bounded batch per call. In a host,
    spm_sf_ieus and spm_sf_nodes answer what the center last sent,
    spm_sf_bytes_to and spm_sdb_holders answer 0, all SFs of a job run at
    its priority, and a failure only the center can see (an SI naming an
    unknown SDB) fails the job instead of being returned. (The packaged
    programs' SFs run in the center's single thread.)

    They must also be deterministic: what an SF does may depend only on what
    reaches it through this API (its args, the feed calls and commits in
    their order, spm_sf_ieus, spm_sf_nodes, spm_sf_bytes_to,
    spm_sdb_holders and spm_sf_seed, whose answers are journaled), never on
    the clock, a random source, the environment, files or global state of
    the center. A center that is killed and started again on the same store
    resumes every job by running its SFs again from the journaled events:
    the same calls must issue the same SIs. (SI code, which runs once per
    commit on an IEU, may do as it likes.) */
typedef struct spm_sf_class {
    const char *name;
    /*  Called once when the SF becomes active, with the bytes given to spawn
        or submit (valid during the call). Issues first SIs or spawns children.
        Returns 0 or an SPM_E* code, which fails the job. */
    int (*start)(spm_sf_t *sf, const void *args, size_t len);
    /*  Optional policy hook: called when IEU WHO asks for work and no issued
        SI of this SF is ready. The SF may issue SIs now; ready ones go to WHO
        first. Returns the number of SIs issued (0: nothing for WHO now). */
    int (*feed)(spm_sf_t *sf, const spm_ieu_t *who);
    /*  Optional: an SI of this SF committed, or a child SF finished. */
    void (*commit)(spm_sf_t *sf, const spm_result_t *r);
    /*  Optional: the SF is finished; free its state. */
    void (*finish)(spm_sf_t *sf);
} spm_sf_class_t;

/*  The SF's private state pointer (NULL until set). */
void *spm_sf_state(spm_sf_t *sf);
void spm_sf_set_state(spm_sf_t *sf, void *state);

/*  Priority of the SF; larger runs first. */
int spm_sf_priority(const spm_sf_t *sf);

/*  Creates a new SDB of TYPE with no version yet. Returns its id, or 0 when
    TYPE is not registered. */
spm_sdb_t spm_sdb_new(spm_sf_t *sf, const char *type);

/*  Issues one SI: OPCODE with N operands, PARAMS copied, TAG given back in
    commit. The SI becomes ready when every version it reads is committed.
    Returns 0, or SPM_ENOTFOUND (opcode or SDB unknown), SPM_EINVAL. */
int spm_sf_issue(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                 const void *params, size_t params_len, uint64_t tag);

/*  Starts a child SF of CLS with ARGS (copied) at PRIORITY: the child's
    start has run when this returns (so SIs it issued are in the pool). The
    parent's commit is called with SPM_RESULT_CHILD and TAG when the child
    finishes. Returns 0 or an SPM_E* code (the child's start failure, which
    fails the job). */
int spm_sf_spawn(spm_sf_t *sf, const spm_sf_class_t *cls, const void *args, size_t len,
                 int priority, uint64_t tag);

/*  Labels the next SI this SF issues with a name in the program's words
    ("tile 3", "rows 100-199"): at most 63 bytes, the rest cut. Every
    message about that SI names its opcode and this label ("mb.shade
    (tile 3) failed on IEU 7: ..."); an SI without a label is named by its
    position ("the 7th SI of mb.shade"). Costs nothing when not called. */
void spm_sf_label(spm_sf_t *sf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*  Declares that this SF will issue nothing more. It finishes when its
    issued SIs have committed and its children have finished. */
void spm_sf_done(spm_sf_t *sf);

/*  Fails the whole job with CODE and a message; its SIs are dropped. */
void spm_sf_fail(spm_sf_t *sf, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*  Adds N to the number of SIs the job expects to run in all, for progress
    and ETA. Optional: without it, progress counts issued SIs. */
void spm_sf_expect(spm_sf_t *sf, uint64_t n);

/*  Sets the job's result bytes (copied), handed to the client with the report.
    Typically the ids of the output SDBs. Returns 0 or SPM_ENOMEM. */
int spm_sf_set_result(spm_sf_t *sf, const void *data, size_t len);

/*  The job's seed: 64 random bits drawn at submit, the same for all its SFs
    and the same again when the job is resumed after a center restart. SFs
    that want randomness (sampling, shuffling, tie-breaking) draw it from a
    generator seeded with this, not from rand() or the clock. */
uint64_t spm_sf_seed(const spm_sf_t *sf);

/*  Number of IEUs and nodes connected now (for policies that partition). */
uint32_t spm_sf_ieus(const spm_sf_t *sf);
uint32_t spm_sf_nodes(const spm_sf_t *sf);

/*  Locality, for feed policies: the bytes the operands OPS would move to
    WHO's node (the sizes of the versions they read that its cache lacks;
    0 when everything is local). In a plugin's host (`spm sfhost`, where
    every plugin SF runs) it answers 0 whatever the blocks' places: the
    host does not see the center's directory. A plugin's feed policy
    that ranks IEUs by it ranks them equal; the pool still issues, of the
    first 8 ready SIs of an SF, the one that moves the fewest bytes to
    the asking IEU (or the first of the first 256 that moves none). */
uint64_t spm_sf_bytes_to(spm_sf_t *sf, const spm_operand_t *ops, size_t n, const spm_ieu_t *who);

/*  Fills up to MAX nodes whose caches hold the newest version of SDB.
    Returns how many hold it. In a plugin's host it returns 0 and fills
    nothing, as spm_sf_bytes_to answers 0 there. */
size_t spm_sdb_holders(spm_sf_t *sf, spm_sdb_t sdb, uint32_t *nodes, size_t max);

/*  A program: what `spm run NAME` and the packaged commands submit. */
typedef struct spm_program {
    const char *name;           /* e.g. "synthetic" */
    const spm_sf_class_t *root; /* the SF started with the submitted args */
} spm_program_t;

int spm_program_register(const spm_program_t *p);
const spm_program_t *spm_program_find(const char *name);

/* ---------------------------------------------------------------- plugins */

/*  A program built out of tree is a shared object, run on a VM that is
    already up with `spm run --plugin ./libmine.so PROGRAM ARG...`:

        cc -O2 -o libmine.so mine.c $(pkg-config --cflags --libs spm)

    Write SPM_PLUGIN; once in it, at file scope. It marks the object with the
    ABI version of the spm.h it was built against, which the VM checks
    before anything of the object runs. The object's SPM_CONSTRUCTOR
    functions register its opcodes, SDB types and programs as in-tree code
    does; the VM scopes those names by the object's content hash, so two
    plugins, or two versions of one, may use the same names side by side.
    Lookups from its super-functions (spm_sf_issue, spm_sdb_new) find the
    plugin's own names first, then the built-in ones.
    docs/PROGRAMMING.md is the guide. */
#define SPM_ABI_VERSION 1

typedef struct spm_plugin_mark {
    char magic[8]; /* "spm-abi" */
    uint32_t abi;  /* SPM_ABI_VERSION of the spm.h it was built against */
    uint32_t size; /* sizeof(spm_plugin_mark_t) */
} spm_plugin_mark_t;

#define SPM_PLUGIN                                                                                 \
    __attribute__((used, section("spm_plugin"))) const spm_plugin_mark_t spm_plugin_mark = {       \
        "spm-abi", SPM_ABI_VERSION, sizeof(spm_plugin_mark_t)}

/*  A plugin program's arguments: its root SF's start gets the ARGs that
    followed PROGRAM on the command line as consecutive NUL-terminated
    strings. Stores up to MAX pointers to them (into ARGS) in ARGV and
    returns how many there are (which may exceed MAX). Its result
    (spm_sf_set_result) is printed on stdout by `spm run --plugin`, so a
    plugin's root SF sets text. */
size_t spm_args(const void *args, size_t len, const char **argv, size_t max);

/* ----------------------------------------------------------- typed blocks */

/*  Built-in SDB types for what most programs hold, so that a program
    defines no encode, decode, validate or merge for them. Use the names
    with spm_sdb_new and in ACC operands:

    SPM_F64     an array of doubles (IEEE 754, little-endian, 8 bytes each);
                merge adds element by element (a shorter array counts as
                zeros past its end)
    SPM_I64     an array of 64-bit signed integers (little-endian); merge
                adds element by element (wrapping), as SPM_F64
    SPM_BYTES   bytes; merge appends, the partials in the order their SIs
                were issued. Staged input (spm_stage_*) is of this type
    SPM_KCOUNT  a key-count table: byte-string keys (at most 64 KiB each)
                to 64-bit counts, kept sorted by key (memcmp order); merge
                adds the counts of equal keys */
#define SPM_F64 "spm.f64"
#define SPM_I64 "spm.i64"
#define SPM_BYTES "spm.bytes"
#define SPM_KCOUNT "spm.kcount"

/*  Operand I (mode R or RW) as an array: *V points at its *N elements,
    read-only and valid until exec returns (aligned: copied when the block
    is not). An RW operand with no version yet gives *N 0. Returns 0,
    SPM_ERANGE (not a readable operand) or SPM_EFORMAT (its length is not
    a multiple of 8), with the detail set. */
int spm_si_f64(spm_si_ctx_t *ctx, size_t i, const double **v, size_t *n);
int spm_si_i64(spm_si_ctx_t *ctx, size_t i, const int64_t **v, size_t *n);

/*  Sets the output of operand I (mode W, RW or ACC) to a copy of the N
    elements at V. Returns 0, SPM_ERANGE (operand I is R or out of range)
    or SPM_ENOMEM. */
int spm_si_put_f64(spm_si_ctx_t *ctx, size_t i, const double *v, size_t n);
int spm_si_put_i64(spm_si_ctx_t *ctx, size_t i, const int64_t *v, size_t n);

/*  A key-count table being built (a hash table), for an SPM_KCOUNT output. */
typedef struct spm_kcount spm_kcount_t;

/*  A new, empty table, or NULL when out of memory. */
spm_kcount_t *spm_kcount_new(void);

/*  Adds N to the count of the KLEN bytes at KEY (copied), which starts at
    0. Returns 0, SPM_ERANGE (KLEN over 65,535) or SPM_ENOMEM. */
int spm_kcount_add(spm_kcount_t *t, const void *key, size_t klen, uint64_t n);

/*  The number of distinct keys in T. */
size_t spm_kcount_size(const spm_kcount_t *t);

/*  Frees *SELF_P and sets it to NULL; NULL is a no-op. */
void spm_kcount_destroy(spm_kcount_t **self_p);

/*  Encodes *T, sorted by key, as the output of operand I, and destroys it
    (also on failure). Returns 0, SPM_ERANGE or SPM_ENOMEM. */
int spm_si_put_kcount(spm_si_ctx_t *ctx, size_t i, spm_kcount_t **t);

/*  Walks an encoded SPM_KCOUNT block of LEN bytes at DATA, wherever it is
    (an SI's input, a block the command side fetched): set *POS to 0
    first; each call gives the next entry, in key order: *KEY (not
    NUL-terminated, pointing into DATA), *KLEN and *COUNT. Returns 1 for
    an entry, 0 at the end, SPM_EFORMAT for a malformed block. */
int spm_kcount_next(const void *data, size_t len, size_t *pos, const char **key, size_t *klen,
                    uint64_t *count);

/* ----------------------------------------------------------- option tables */

/*  A program's options as a table, parsed from the words it was given (the
    root SF's args through spm_args, or the command side's argv) and printed
    as its --help. A NAME starting with "--" is an option; any other NAME is
    a positional word, taken in table order (one without a default must be
    given). Each value is stored at OFFSET in the caller's struct:

        INT    int64_t, the word a decimal integer in [MIN, MAX]
        REAL   double, a number in [MIN, MAX]
        TEXT   const char *, pointing into the words (or at DEF)
        FLAG   int, set to 1 when the option is given (it takes no value)

        typedef struct { int64_t samples; double tol; const char *file; } opts_t;
        static const spm_argdef_t defs[] = {
            {"--samples", SPM_ARG_INT, offsetof(opts_t, samples), 1, 1e12, "1000000", "points"},
            {"--tol", SPM_ARG_REAL, offsetof(opts_t, tol), 0, 1, "1e-6", "stop below this"},
            {"FILE", SPM_ARG_TEXT, offsetof(opts_t, file), 0, 0, NULL, "the input"}};
*/
typedef enum { SPM_ARG_INT = 1, SPM_ARG_REAL, SPM_ARG_TEXT, SPM_ARG_FLAG } spm_argtype_t;

typedef struct spm_argdef {
    const char *name;   /* "--samples", or a positional word's name ("FILE") */
    spm_argtype_t type; /* what the value is, and the type of the field at offset */
    size_t offset;      /* offsetof(the caller's struct, the field) */
    double min, max;    /* INT and REAL: the range, both ends included */
    const char *def;    /* the default, as it would be typed; NULL: 0, NULL, off (or required) */
    const char *help;   /* one line */
} spm_argdef_t;

#define SPM_ARGS_HELP 1 /* spm_args_parse: --help was given */

/*  Parses the ARGC words ARGV per the N definitions DEFS into the struct
    at OUT (every field in DEFS is set: to its default when not given).
    Returns 0, SPM_ARGS_HELP when a word is --help or -h (print
    spm_args_usage), or SPM_EINVAL with a one-line detail naming the word
    ("--blocks: '0' is not a whole number from 1 to 65536", "unknown
    option --smaples", "FILE is missing"). */
int spm_args_parse(const spm_argdef_t *defs, size_t n, int argc, const char *const *argv,
                   void *out);

/*  The --help text of PROGRAM with options DEFS: a usage line, ABOUT (one
    paragraph, or NULL) and a line per definition with its default and
    range. Returns malloc'd text (the caller frees), or NULL when out of
    memory. */
char *spm_args_usage(const char *program, const char *about, const spm_argdef_t *defs, size_t n);

/* ------------------------------------------------------------ command side */

/*  A program may have a command side: a main that runs in the `spm run
    --plugin` process, before and after the super-functions run in the VM.
    There it reads files, stages them as SDBs, runs the root SF with their
    ids, and writes results where it likes:

        static int wf_main(spm_client_t *c, int argc, char **argv)
        {
            spm_sdb_t *ids;
            size_t n;
            int rc = spm_stage_file(c, argv[1], SPM_CUT_LINES, 8 << 20, 0, &ids, &n);
            ... rc = spm_client_run(c, ids, n * sizeof *ids, &result, &len);
        }
        SPM_CONSTRUCTOR(wf)
        {
            ... spm_program_register(&(spm_program_t){"wordfreq", &root});
            spm_main_register(&(spm_main_t){"wordfreq", wf_main});
        }

    A program without a main runs as before: its words go to its root SF
    and the text it sets as its result is printed on stdout. The run
    report goes to stderr (or the file named by `spm run --report`),
    never to stdout. */
typedef struct spm_client spm_client_t;

typedef struct spm_main {
    const char *program; /* the registered program this is the command side of */
    /*  Runs the command: ARGV[0] is the program's name, ARGV[1..ARGC-1] the
        words after it. Returns 0, or an SPM_E* code with spm_error's
        detail set: `spm run` prints "spm: run: DETAIL" and exits 1. */
    int (*main)(spm_client_t *c, int argc, char **argv);
} spm_main_t;

/*  Registers the command side M (copied; the strings are not) from an
    SPM_CONSTRUCTOR. Returns 0, or SPM_EINVAL (a name or main missing, or
    PROGRAM already has one in this scope). */
int spm_main_register(const spm_main_t *m);

/*  How spm_stage_file cuts a file into blocks of at most BLOCK bytes:
    LINES    whole lines ('\n'-ended, the last one maybe not); a line
             longer than BLOCK is a block of its own
    RECORDS  whole records of RECORD bytes; the file must hold a whole
             number of them
    BYTES    BLOCK bytes each, the last one shorter */
typedef enum { SPM_CUT_LINES = 1, SPM_CUT_RECORDS = 2, SPM_CUT_BYTES = 3 } spm_cut_t;

/*  Stages the file at PATH as SPM_BYTES blocks cut per CUT, and gives
    their ids, in file order, in *IDS (owned by C, valid until main
    returns) and *N. The blocks go straight onto the nodes, as `spm mine`
    stages its input, with a meter on stderr when it is a terminal. Where
    the IEUs can read the file by its path (an embedded VM, or `spm run
    --shared-files`: every node sees PATH as this machine does), only
    where each block lies is staged, with the file's size and time, and
    this process reads no more of the file than a few KiB where each block
    of lines ends: an SI then reads the block from the file, checking the
    size and time before and after, and a file changed since fails the SI
    in one line (a change that leaves both as they were, as `touch -d`
    can, is not seen). A file that changes while it is staged fails here. Returns 0, SPM_EIO
   (detail: the file and why), SPM_EFORMAT (RECORDS: not a whole number of records; changed while
    staged), SPM_EINVAL (BLOCK 0 or over 512 MiB, RECORD 0 or over
    BLOCK) or a staging failure (SPM_EUNREACH, SPM_EFULL, ...). */
int spm_stage_file(spm_client_t *c, const char *path, spm_cut_t cut, size_t block, size_t record,
                   spm_sdb_t **ids, size_t *n);

/*  Stages LEN bytes at DATA (copied) as SPM_BYTES blocks of at most BLOCK
    bytes; as spm_stage_file cut by BYTES. */
int spm_stage_buffer(spm_client_t *c, const void *data, size_t len, size_t block, spm_sdb_t **ids,
                     size_t *n);

/*  Stages the COUNT elements at ELEMS as blocks of TYPE (SPM_F64 or SPM_I64:
    doubles or int64_t; SPM_BYTES: bytes) of at most PER_BLOCK elements
    each. Returns as spm_stage_file; SPM_EINVAL for another type. */
int spm_stage_array(spm_client_t *c, const char *type, const void *elems, size_t count,
                    size_t per_block, spm_sdb_t **ids, size_t *n);

/*  Runs the program's root SF with the LEN bytes ARGS (an array of the
    staged ids is the usual thing to pass: every machine spm runs on is
    little-endian) and follows it to its end, with a bar and the report on
    stderr. *RESULT (malloc'd, the caller frees; NULL when none) gets the
    bytes the root SF set with spm_sf_set_result. Returns 0, or the job's
    SPM_E* code with its one-line message as the detail. */
int spm_client_run(spm_client_t *c, const void *args, size_t len, void **result,
                   size_t *result_len);

/*  Fetches the newest version of SDB ID. *DATA is malloc'd (the caller
    frees). Returns 0, SPM_ENOTFOUND or another SPM_E* code. */
int spm_client_get(spm_client_t *c, spm_sdb_t id, void **data, size_t *len);

/*  Writes the newest versions of the N SDBs IDS to OUT, one after another
    in the order of IDS, as they arrive (up to 16 fetched at once, at most
    16 held back waiting for an earlier one). Returns 0, SPM_EIO (a write
    failed), or a fetch's failure. */
int spm_client_write(spm_client_t *c, const spm_sdb_t *ids, size_t n, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
