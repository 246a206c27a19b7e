/*  Level-2 fetch benchmark: a real `spm agent` serves blocks from its node
    cache to a fetching peer over TCP loopback, against raw ZeroMQ (a ROUTER
    thread answering each request with a buffer of the same size) in the
    same run. For 64 KiB, 512 KiB and 8 MiB blocks it prints throughput with
    4 requests in flight and the median round-trip latency of one request.
    SPM_BENCH_QUICK=1 moves less data. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench.h"

#include "datacache/nodecache.h"
#include "isa/core/codec.h"
#include "runtime/registry.h"
#include "tests/spm_test.h"
#include "transport/wire.h"

#define WINDOW 4 /* requests in flight for throughput */

/* ------------------------------------------------------ raw baseline */

typedef struct {
    void *ctx;
    char ep[128];
    size_t size;
    volatile int stop;
} raw_t;

static void *raw_server(void *arg)
{
    raw_t *r = arg;
    void *s = zmq_socket(r->ctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_bind(s, r->ep);
    char *buf = malloc(r->size);
    memset(buf, 7, r->size);
    while (!r->stop) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 50) <= 0)
            continue;
        zmq_msg_t id, req;
        zmq_msg_init(&id);
        zmq_msg_init(&req);
        zmq_msg_recv(&id, s, 0);
        zmq_msg_recv(&req, s, 0);
        zmq_msg_send(&id, s, ZMQ_SNDMORE);
        zmq_send(s, buf, r->size, 0); /* a copy, as the data agent makes */
        zmq_msg_close(&req);
    }
    free(buf);
    zmq_close(s);
    return NULL;
}

/*  Fetches N blocks through SOCK with WINDOW in flight; SEND sends one
    request. Returns bytes per second. */
static double throughput(void *sock, int n, size_t size, void (*send)(void *, int))
{
    uint64_t t0 = spm_now_us();
    int sent = 0, got = 0;
    while (got < n) {
        while (sent < n && sent - got < WINDOW)
            send(sock, sent++);
        zmq_msg_t m;
        zmq_msg_init(&m);
        int more = 1;
        while (more) { /* one reply: envelope (spm) or a single frame (raw) */
            zmq_msg_recv(&m, sock, 0);
            more = zmq_msg_more(&m);
        }
        zmq_msg_close(&m);
        got++;
    }
    return (double)n * (double)size / ((spm_now_us() - t0) / 1e6);
}

static double latency_us(void *sock, int n, void (*send)(void *, int))
{
    double v[64];
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++) {
        uint64_t t0 = spm_now_us();
        send(sock, i);
        zmq_msg_t m;
        zmq_msg_init(&m);
        int more = 1;
        while (more) {
            zmq_msg_recv(&m, sock, 0);
            more = zmq_msg_more(&m);
        }
        zmq_msg_close(&m);
        v[i] = (double)(spm_now_us() - t0);
    }
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return v[n / 2];
}

static void raw_send(void *sock, int i)
{
    (void)i;
    zmq_send(sock, "x", 1, 0);
}

#define NBLOCKS 16       /* blocks stored per size, fetched round-robin */
static uint64_t id_base; /* first SDB id of the current size */

static void spm_send(void *sock, int i)
{
    Spm__Fetch f = SPM__FETCH__INIT;
    f.req = (uint64_t)i + 1;
    f.sdb = id_base + (uint64_t)(i % NBLOCKS) + 1;
    f.version = 1;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_FETCH;
    env.fetch = &f;
    spm_wire_send(sock, NULL, &env, NULL, 0, NULL);
}

int main(void)
{
    const char *dir = spm_test_tmpdir();
    char ep[160], store[128], cache[128], data_ep[64];
    int port = 30000 + (int)(getpid() % 10000);
    snprintf(ep, sizeof ep, "ipc://%s/center", dir);
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(data_ep, sizeof data_ep, "tcp://127.0.0.1:%d", port);
    const char *center[] = {"center", "--listen",    ep,      "--store",
                            store,    "--log-level", "error", NULL};
    spm_test_proc_t pc = spm_test_start(center);
    usleep(200000);
    const char *agent[] = {
        "agent",         "--center", ep,           "--ieus",      "1",     "--cache-dir", cache,
        "--data-listen", data_ep,    "--insecure", "--log-level", "error", NULL};
    spm_test_proc_t pa = spm_test_start(agent);
    usleep(500000);
    const size_t sizes[] = {64 << 10, 512 << 10, 8 << 20};
    printf("# Level-2 fetch from a data agent vs raw ZeroMQ (TCP loopback, %d in flight)\n\n",
           WINDOW);
    printf("| block | spm MiB/s | raw MiB/s | ratio | spm latency us | raw latency us |\n"
           "|---|---|---|---|---|---|\n");
    void *ctx = zmq_ctx_new();
    for (int k = 0; k < 3; k++) {
        size_t size = sizes[k];
        int n = (int)((bench_quick() ? 64u << 20 : 512u << 20) / size);
        if (n < 8)
            n = 8;
        /* the agent's node cache, filled through its own LMDB map */
        spm_nodecache_t *nc = spm_nodecache_open(cache, 0, 0);
        SPM_TEST_ASSERT(nc != NULL);
        unsigned char *block = malloc(size);
        SPM_TEST_ASSERT(block != NULL);
        memset(block, 3, size);
        id_base = (uint64_t)k * 1000;
        for (uint64_t i = 1; i <= NBLOCKS; i++) {
            spm_put_le64(block, i);
            spm_put_le64(block + 8, size - 16); /* a syn.block: seed, length, payload */
            SPM_TEST_ASSERT(
                spm_nodecache_put(nc, id_base + i, 1, spm_name_id("syn.block"), block, size) == 0);
        }
        spm_nodecache_destroy(&nc);
        void *d = spm_wire_socket(ctx, ZMQ_DEALER);
        zmq_connect(d, data_ep);
        double spm_bw = throughput(d, n, size, spm_send);
        double spm_lat = latency_us(d, 32, spm_send);
        zmq_close(d);
        raw_t r = {.ctx = ctx, .size = size};
        snprintf(r.ep, sizeof r.ep, "tcp://127.0.0.1:%d", port + 1 + k);
        pthread_t th;
        pthread_create(&th, NULL, raw_server, &r);
        usleep(100000);
        void *rd = zmq_socket(ctx, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(rd, ZMQ_LINGER, &linger, sizeof linger);
        zmq_connect(rd, r.ep);
        double raw_bw = throughput(rd, n, size, raw_send);
        double raw_lat = latency_us(rd, 32, raw_send);
        zmq_close(rd);
        r.stop = 1;
        pthread_join(th, NULL);
        free(block);
        printf("| %zu KiB | %.0f | %.0f | %.2f | %.0f | %.0f |\n", size >> 10, spm_bw / 1048576,
               raw_bw / 1048576, spm_bw / raw_bw, spm_lat, raw_lat);
    }
    zmq_ctx_term(ctx);
    kill(pc.pid, SIGTERM);
    spm_test_finish(&pc, 15, NULL, NULL);
    spm_test_finish(&pa, 20, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
