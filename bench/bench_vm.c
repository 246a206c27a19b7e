/*  Benchmarks of the VM core, each against its baseline in the same run:
    - dispatch rate of null SIs through the center with 1, 2 and 4 IEUs,
      against an in-process loop running the same SI body;
    - management overhead w_man at SIs of 0.25, 0.5, 1 and 5 ms;
    - one center feeding 1,024 slots of SIs that sleep 20 ms;
    - imbalance overhead of uniform:0:20ms work against the dissertation's
      model, equation 6.4: delta = (n_p - 1) / (n_i / c + n_p - 1).
    Medians of SPM_BENCH_REPS runs (default 3). SPM_BENCH_QUICK=1 shrinks
    the work for a smoke run. */
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench.h"

#include "runtime/si.h"
#include "tests/spm_test.h"
#include "transport/wire.h"

#include <stdio.h>
#include <stdlib.h>

/*  Runs `spm run synthetic ARGS --json` and returns its JSON report. */
static char *run_json(const char *sis, const char *work, const char *ieus, const char *prefetch,
                      const char *sfs)
{
    const char *argv[] = {"run", "synthetic",  "--sis",  sis,     "--work", work,     "--ieus",
                          ieus,  "--prefetch", prefetch, "--sfs", sfs,      "--json", NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 600, &out, &err);
    if (rc != 0) {
        fprintf(stderr, "bench: spm run failed (%d): %s", rc, err);
        exit(1);
    }
    free(err);
    return out;
}

static void bench_dispatch(void)
{
    const char *sis = bench_quick() ? "20000" : "200000";
    double n = atof(sis);
    /* Baseline: the same null SI body in an in-process loop. */
    unsigned char params[25] = {0};
    double base[16];
    for (int r = 0; r < bench_reps(); r++) {
        uint64_t t0 = spm_now_us();
        for (long i = 0; i < (long)n; i++)
            spm_si_exec_local("syn.work", NULL, 0, params, sizeof params, NULL, NULL);
        base[r] = n / ((spm_now_us() - t0) / 1e6);
    }
    double b = bench_median(base, bench_reps());
    printf("\n## Dispatch rate: %s null SIs (prefetch 64)\n\n", sis);
    printf("| IEUs | spm SIs/s (median) | in-process loop SIs/s | ratio |\n|---|---|---|---|\n");
    const char *ieus[] = {"1", "2", "4"};
    for (int k = 0; k < 3; k++) {
        double v[16];
        for (int r = 0; r < bench_reps(); r++) {
            char *j = run_json(sis, "fixed:0", ieus[k], "64", "1");
            v[r] = n / spm_test_json_num(j, "wall_s");
            free(j);
        }
        double m = bench_median(v, bench_reps());
        printf("| %s | %.0f | %.0f | %.4f |\n", ieus[k], m, b, m / b);
    }
}

/*  w_man (the center's CPU over the IEUs' busy time, the dissertation's
    management overhead) at SIs of 0.25, 0.5, 1 and 5 ms, 2 IEUs, prefetch
    1: the same work at every grain, 4 s of it (2 s on the 2 IEUs). */
static void bench_wman(void)
{
    const char *work[] = {"fixed:250us", "fixed:500us", "fixed:1ms", "fixed:5ms"};
    const char *sis[] = {"16000", "8000", "4000", "800"};
    const char *quick[] = {"2000", "1000", "500", "100"};
    const char *target[] = {"<= 0.02", "-", "<= 0.005", "-"};
    printf("\n## Management overhead w_man by SI grain (2 IEUs, prefetch 1)\n\n");
    printf("| SI | SIs | w_man (median) | center us per SI | efficiency | target w_man |\n"
           "|---|---|---|---|---|---|\n");
    for (int g = 0; g < 4; g++) {
        const char *n = bench_quick() ? quick[g] : sis[g];
        double w[16], e[16], us[16];
        for (int r = 0; r < bench_reps(); r++) {
            char *j = run_json(n, work[g], "2", "1", "1");
            w[r] = spm_test_json_num(j, "w_man");
            e[r] = spm_test_json_num(j, "efficiency");
            us[r] = spm_test_json_num(j, "center_cpu_s") * 1e6 / atof(n);
            free(j);
        }
        double wm = bench_median(w, bench_reps());
        printf("| %s | %s | %.4f (%.2f%%) | %.1f | %.3f | %s |\n", work[g] + 6, n, wm, 100 * wm,
               bench_median(us, bench_reps()), bench_median(e, bench_reps()), target[g]);
    }
}

static void bench_imbalance(void)
{
    const int np = 2;
    const int sfs[] = {1, 10, 40};
    const char *sis = bench_quick() ? "400" : "1600";
    double n = atof(sis);
    printf("\n## Imbalance overhead, uniform:0:20ms, %s SIs, %d IEUs (model: eq. 6.4, c = 0.5)\n\n",
           sis, np);
    printf("| SFs | n_i | measured idle share (median) | model delta | measured w_idle |\n"
           "|---|---|---|---|---|\n");
    for (int k = 0; k < 3; k++) {
        char ks[16];
        snprintf(ks, sizeof ks, "%d", sfs[k]);
        double share[16], widle[16];
        for (int r = 0; r < bench_reps(); r++) {
            char *j = run_json(sis, "uniform:0:20ms", "2", "1", ks);
            double wi = spm_test_json_num(j, "w_idle");
            double wc = spm_test_json_num(j, "w_comm");
            double wm = spm_test_json_num(j, "w_man");
            widle[r] = wi;
            share[r] = wi / (1 + wi + wc + wm);
            free(j);
        }
        double ni = n / sfs[k], c = 0.5;
        double delta = (np - 1) / (ni / c + np - 1);
        printf("| %d | %.0f | %.4f | %.4f | %.4f |\n", sfs[k], ni,
               bench_median(share, bench_reps()), delta, bench_median(widle, bench_reps()));
    }
}

/*  Wall time of the same job with and without --trace. */
static void bench_trace(void)
{
    const char *sis = bench_quick() ? "1000" : "4000";
    double with[16], without[16];
    for (int r = 0; r < bench_reps(); r++) {
        for (int k = 0; k < 2; k++) {
            const char *argv[] = {"run",
                                  "synthetic",
                                  "--sis",
                                  sis,
                                  "--work",
                                  "fixed:1ms",
                                  "--ieus",
                                  "2",
                                  "--json",
                                  k ? "--trace" : NULL,
                                  "/tmp/spm-bench-trace.json",
                                  NULL};
            char *out, *err;
            if (spm_test_run(argv, 600, &out, &err) != 0) {
                fprintf(stderr, "bench: traced run failed: %s", err);
                exit(1);
            }
            (k ? with : without)[r] = spm_test_json_num(out, "wall_s");
            free(out);
            free(err);
        }
    }
    unlink("/tmp/spm-bench-trace.json");
    double a = bench_median(without, bench_reps()), b = bench_median(with, bench_reps());
    printf("\n## Tracing overhead (%s SIs of 1 ms, 2 IEUs)\n\n", sis);
    printf("| wall without trace (median) | with --trace | overhead |\n|---|---|---|\n");
    printf("| %.3f s | %.3f s | %+.2f%% |\n", a, b, 100 * (b - a) / a);
}

/*  Slots of live IEUs in `spm status --json` of the VM at EP. */
static int live_slots(const char *ep)
{
    const char *argv[] = {"status", "--center", ep, "--json", NULL};
    char *out, *err;
    int slots = 0;
    if (spm_test_run(argv, 30, &out, &err) == 0)
        for (const char *p = out; (p = strstr(p, "\"slots\": ")) != NULL; p++)
            slots += strncmp(strstr(p, "\"state\": ") + 10, "\"dead\"", 6) != 0 ? atoi(p + 9) : 0;
    free(out);
    free(err);
    return slots;
}

/*  One center feeding 1,024 slots: 8 agents of 4 IEUs of 32 slots on this
    machine (center, agents and IEUs share its cores), 100,000 SIs that
    sleep 20 ms; efficiency = (SIs x 20 ms / 1,024) / wall. */
static void bench_slots(void)
{
    const int agents = bench_quick() ? 2 : 8, slots = agents * 4 * 32;
    const char *sis = bench_quick() ? "10000" : "100000";
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *extra[] = {"--slots", "32", NULL};
    for (int a = 0; a < agents; a++)
        spm_test_vm_agent(&vm, "4", extra);
    for (int t = 0; t < 300 && live_slots(vm.ep) < slots; t++)
        usleep(200000);
    double eff[16], rate[16], us[16], ideal = atof(sis) * 0.020 / slots;
    for (int r = 0; r < bench_reps(); r++) {
        const char *argv[] = {"run",    "synthetic",  "--center", vm.ep,    "--sis", sis,
                              "--work", "fixed:20ms", "--sleep",  "--json", NULL};
        char *out, *err;
        if (spm_test_run(argv, 600, &out, &err) != 0)
            SPM_TEST_FAIL("bench_vm: the %d-slot run failed: %s\n", slots, err);
        double wall = spm_test_json_num(out, "wall_s");
        eff[r] = ideal / wall;
        rate[r] = atof(sis) / wall;
        us[r] = spm_test_json_num(out, "center_cpu_s") * 1e6 / atof(sis);
        free(out);
        free(err);
    }
    spm_test_vm_stop(&vm);
    printf("\n## One center, %d slots (%d agents x 4 IEUs x 32 slots, all on this machine): %s "
           "SIs sleeping 20 ms\n\n",
           slots, agents, sis);
    printf("| efficiency (median) | SIs/s | center us per SI | target efficiency |\n"
           "|---|---|---|---|\n");
    printf("| %.3f | %.0f | %.1f | >= 0.85 |\n", bench_median(eff, bench_reps()),
           bench_median(rate, bench_reps()), bench_median(us, bench_reps()));
}

int main(void)
{
    printf("# spm VM core benchmarks (%d repetitions; medians)\n", bench_reps());
    bench_dispatch();
    bench_wman();
    bench_slots();
    bench_imbalance();
    bench_trace();
    return 0;
}
