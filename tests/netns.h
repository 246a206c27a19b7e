/*  =========================================================================
    netns - a simulated cluster: hosts in network namespaces on one bridge,
    their links shaped with tc, the bytes on each link counted

    Shared by the tests about several hosts (tests/integration/
    test_multihost.c) and the benchmarks that measure a cluster
    (bench/bench_scale.c, bench/paper): loopback alone hides what a link
    costs, so a claim about a cluster is shown here.

        spm_netns_t net;
        spm_netns_init(&net, "spmh", "10.77.0", 5);  -- names from our pid
        if (spm_netns_up(&net, 100) != 0) skip;      -- 100 Mbit/s links
        ... spm_netns_host(&net, 2) is host 2's namespace, at 10.77.0.2:
            run a process there with `ip netns exec NS ...`
            (spm_test_start_in) ...
        spm_netns_bytes(&net, 2, &rx, &tx);          -- what crossed its link
        spm_netns_down(&net);                        -- kills and deletes

    Host h (1..nhosts) has eth0 at SUBNET.h/24, joined by a veth pair to a
    bridge in namespace 0 (its end there is hH). With a rate, each
    direction of each link is a tbf queue of that rate. Making namespaces
    needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): spm_netns_up says -1
    where the machine does not allow it, and the caller skips with a
    message.
    =========================================================================
*/
#ifndef SPM_TESTS_NETNS_H_INCLUDED
#define SPM_TESTS_NETNS_H_INCLUDED

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPM_NETNS_MAX_HOSTS 32

typedef struct {
    char ns[SPM_NETNS_MAX_HOSTS + 1][32]; /* [0] the bridge, [h] host h */
    char subnet[16];                      /* "10.77.0": host h is SUBNET.h */
    int nhosts;
    char why[256]; /* what failed, when spm_netns_up returned -2 */
} spm_netns_t;

/*  Runs ARGV and waits for it, its output to /dev/null when QUIET.
    Returns its exit status, or -1. fork, exec and waitpid only, so that a
    signal handler may call it (spm_netns_down from a bench's cleanup). */
static inline int spm_netns_exec(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (quiet) {
            FILE *null = freopen("/dev/null", "w", stdout);
            (void)null;
            null = freopen("/dev/null", "w", stderr);
            (void)null;
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int spm_netns_sh(int quiet, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int spm_netns_sh(int quiet, const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    char *argv[] = {"sh", "-c", cmd, NULL};
    return spm_netns_exec(argv, quiet);
}

/*  Names the namespaces PREFIX + our pid + "-" + h, so that runs at once
    never meet, and makes nothing yet. NHOSTS is at most
    SPM_NETNS_MAX_HOSTS. */
static inline void spm_netns_init(spm_netns_t *n, const char *prefix, const char *subnet,
                                  int nhosts)
{
    memset(n, 0, sizeof *n);
    n->nhosts = nhosts < SPM_NETNS_MAX_HOSTS ? nhosts : SPM_NETNS_MAX_HOSTS;
    snprintf(n->subnet, sizeof n->subnet, "%s", subnet);
    for (int h = 0; h <= n->nhosts; h++)
        snprintf(n->ns[h], sizeof n->ns[h], "%s%d-%d", prefix, (int)(getpid() % 100000), h);
}

/*  Kills every process in the namespaces (only what the caller started
    runs there) and deletes them; quiet about those that do not exist.
    Safe to call twice, and from a signal handler. */
static inline void spm_netns_down(spm_netns_t *n)
{
    for (int h = n->nhosts; h >= 0; h--) {
        spm_netns_sh(1, "ip netns pids %s 2>/dev/null | xargs -r kill -9 2>/dev/null", n->ns[h]);
        char *argv[] = {"ip", "netns", "del", n->ns[h], NULL};
        spm_netns_exec(argv, 1);
    }
}

/*  Shapes host H's link to MBIT each way (tc tbf, replacing any shaping
    it had). Returns 0, or -1 when tc failed. */
static inline int spm_netns_shape(spm_netns_t *n, int h, double mbit)
{
    /* tbf's bucket (burst) must hold a whole GSO packet (up to 64 KiB on
       a veth) and at least a timer tick of traffic, or it cannot reach
       the rate, so it is 20 ms of the rate and never below 64 KiB: 250 KB
       at 100 Mbit/s. Its queue (latency) is 50 ms: long enough that
       TCP's bursts wait rather than being dropped (a drop halves a
       sender's window, and the numbers would be TCP's loss recovery
       instead of the link), short enough not to hide the rate behind a
       deep buffer. eth0's egress is what the host sends; the bridge's end
       of the veth sends what the host receives. */
    long burst = (long)(mbit * 1e6 / 8 * 0.020);
    if (burst < 65536)
        burst = 65536;
    return spm_netns_sh(0,
                        "tc -n %s qdisc replace dev eth0 root tbf rate %.0fkbit burst %ld latency "
                        "50ms && tc -n %s qdisc replace dev h%d root tbf rate %.0fkbit burst %ld "
                        "latency 50ms",
                        n->ns[h], mbit * 1000, burst, n->ns[0], h, mbit * 1000, burst) == 0
               ? 0
               : -1;
}

/*  Makes the bridge and the hosts, removing what an earlier run under the
    same names left. MBIT > 0 shapes each link to MBIT each way; 0 leaves
    it at the veth's speed. Returns 0; -1 where namespaces cannot be made
    here (not root); -2 when a later step failed (N->why says which), with
    everything made removed again. */
static inline int spm_netns_up(spm_netns_t *n, double mbit)
{
    spm_netns_down(n);
    if (spm_netns_sh(1, "ip netns add %s", n->ns[0]) != 0)
        return -1;
    const char *b = n->ns[0];
    if (spm_netns_sh(0, "ip -n %s link add br0 type bridge && ip -n %s link set br0 up", b, b)) {
        snprintf(n->why, sizeof n->why, "cannot make the bridge in %s", b);
        spm_netns_down(n);
        return -2;
    }
    for (int h = 1; h <= n->nhosts; h++) {
        const char *x = n->ns[h];
        if (spm_netns_sh(0,
                         "ip netns add %s && "
                         "ip -n %s link add h%d type veth peer name eth0 netns %s && "
                         "ip -n %s link set h%d master br0 && ip -n %s link set h%d up && "
                         "ip -n %s addr add %s.%d/24 dev eth0 && ip -n %s link set eth0 up && "
                         "ip -n %s link set lo up",
                         x, b, h, x, b, h, b, h, x, n->subnet, h, x, x) != 0) {
            snprintf(n->why, sizeof n->why, "cannot link host %d (%s)", h, x);
            spm_netns_down(n);
            return -2;
        }
        if (mbit > 0 && spm_netns_shape(n, h, mbit) != 0) {
            snprintf(n->why, sizeof n->why, "cannot shape host %d's link (tc tbf)", h);
            spm_netns_down(n);
            return -2;
        }
    }
    return 0;
}

/*  Host H's namespace, for `ip netns exec` (spm_test_start_in). */
static inline const char *spm_netns_host(const spm_netns_t *n, int h)
{
    return n->ns[h];
}

/*  Bytes host H's link has received (*RX) and sent (*TX) so far, counted
    at its eth0. Returns 0, or -1 when the counters cannot be read. */
static inline int spm_netns_bytes(const spm_netns_t *n, int h, unsigned long long *rx,
                                  unsigned long long *tx)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "ip netns exec %s cat /sys/class/net/eth0/statistics/rx_bytes "
             "/sys/class/net/eth0/statistics/tx_bytes",
             n->ns[h]);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    int got = f ? fscanf(f, "%llu %llu", rx, tx) : 0;
    if (f)
        pclose(f);
    return got == 2 ? 0 : -1;
}

#endif
