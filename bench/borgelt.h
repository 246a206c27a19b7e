/*  Christian Borgelt's apriori, eclat and fpgrowth as peers of `spm mine`:
    found, built once, and timed whole, beside spm in the same run.

    Where they are: $SPM_PEERS (the folder with build.sh, or the one that
    holds borgelt/), else ../shared/peers/borgelt relative to the current
    directory (the repository, where `make bench` runs). A user's clone has
    no ../shared: borgelt_find then returns NULL with the reason, and the
    benchmark skips the peers saying so.

    Built once: into peers/borgelt beside the spm binary ($SPM_BIN's
    directory, build/ by default) with their build.sh, and reused while all
    three programs are there (remove the folder to build them again).

    Timed as a user runs them: one process each, its wall time from fork to
    exit, writing its output to a file; one thread each (they have no
    other mode). Measured beside, never copied from: nothing of theirs is
    compiled into spm or into this benchmark. Header-only. */
#ifndef SPM_BENCH_BORGELT_H_INCLUDED
#define SPM_BENCH_BORGELT_H_INCLUDED

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BORGELT_N 3
static const char *const borgelt_names[BORGELT_N] = {"apriori", "eclat", "fpgrowth"};

static int borgelt_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/*  The directory holding the three built programs (static buffer), building
    them first where they are not yet built; NULL when the sources are not
    here or the build failed, with the reason in WHY (WHYLEN bytes). */
static inline const char *borgelt_find(char *why, size_t whylen)
{
    static char bin[1024];
    char src[1024], probe[1100], cmd[2200];
    const char *env = getenv("SPM_PEERS");
    if (env && *env) {
        snprintf(probe, sizeof probe, "%s/build.sh", env);
        if (borgelt_exists(probe))
            snprintf(src, sizeof src, "%s", env);
        else
            snprintf(src, sizeof src, "%s/borgelt", env);
    } else {
        snprintf(src, sizeof src, "../shared/peers/borgelt");
    }
    snprintf(probe, sizeof probe, "%s/build.sh", src);
    if (!borgelt_exists(probe)) {
        snprintf(why, whylen, "%.900s is not here (set SPM_PEERS to the folder with build.sh)",
                 src);
        return NULL;
    }
    const char *spm = getenv("SPM_BIN");
    char dir[1024] = "build";
    if (spm && strrchr(spm, '/'))
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(spm, '/') - spm), spm);
    snprintf(bin, sizeof bin, "%s/peers/borgelt", dir);
    int built = 1;
    for (int p = 0; p < BORGELT_N; p++) {
        snprintf(probe, sizeof probe, "%s/%s", bin, borgelt_names[p]);
        built &= borgelt_exists(probe) && access(probe, X_OK) == 0;
    }
    if (built)
        return bin;
    printf("building Borgelt's miners into %s (once)\n", bin);
    fflush(stdout);
    snprintf(cmd, sizeof cmd, "sh '%.1000s/build.sh' '%.1000s' >/dev/null", src, bin);
    if (system(cmd) != 0) {
        snprintf(why, whylen, "%.500s/build.sh %.500s failed", src, bin);
        return NULL;
    }
    return bin;
}

/*  Runs ARGV (argv[0] a path; NULL-terminated) with stdout and stderr
    thrown away and returns its wall time in seconds, or -1 when it could
    not be run or exited with an error. */
static inline double borgelt_time(const char *const *argv)
{
    fflush(stdout);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

#endif
