/*  =========================================================================
    gen - `spm gen transactions`: write a Quest synthetic database

    Streams one transaction per line (FIMI format) through spm_outfile_t,
    so an interrupted run leaves no partial file.
    =========================================================================
*/
#include "programs/apriori/cmd.h"
#include "base/textio.h"
#include "programs/apriori/quest.h"
#include "base/textio.h"
#include "base/cli.h"
#include "spm/spm.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: spm gen transactions [options] -o FILE\n"
    "\n"
    "Writes a synthetic transaction database in FIMI format (one transaction\n"
    "per line, sorted integer items) with the IBM Quest generator of Agrawal\n"
    "and Srikant (VLDB 1994). T25I10D100K is --avg-size 25 --avg-pattern 10\n"
    "--transactions 100000.\n"
    "\n"
    "  --transactions D   number of transactions |D| (default 100000)\n"
    "  --avg-size T       average transaction size |T| (Poisson; default 10)\n"
    "  --avg-pattern I    average size of the potentially large itemsets |I|\n"
    "                     (Poisson; default 4)\n"
    "  --items N          number of items N (default 1000)\n"
    "  --patterns L       number of potentially large itemsets |L| (default 2000)\n"
    "  --correlation C    mean fraction of a pattern taken from the previous\n"
    "                     one (exponential; default 0.5)\n"
    "  --corruption C     mean corruption level of a pattern (normal with\n"
    "                     deviation 0.1; default 0.5)\n"
    "  --seed S           random seed (default 1); same seed, same file\n"
    "  -o, --output FILE  where to write ('-': stdout)\n"
    "  --sync             make the file durable before returning (sync it and its\n"
    "                     directory); without it a crash of the machine soon\n"
    "                     after may lose it (a partial file is never seen)\n"
    "  -h, --help         this help\n";

int spm_cmd_gen_transactions(int argc, char **argv)
{
    static const struct option longopts[] = {{"transactions", required_argument, 0, 'D'},
                                             {"avg-size", required_argument, 0, 'T'},
                                             {"avg-pattern", required_argument, 0, 'I'},
                                             {"items", required_argument, 0, 'N'},
                                             {"patterns", required_argument, 0, 'L'},
                                             {"correlation", required_argument, 0, 'c'},
                                             {"corruption", required_argument, 0, 'r'},
                                             {"seed", required_argument, 0, 's'},
                                             {"output", required_argument, 0, 'o'},
                                             {"sync", no_argument, 0, 'S'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    const char *out = NULL;
    long v;
    int c, rc = 0, sync = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D':
            rc = spm_parse_long("--transactions", optarg, 0, 1L << 40, &v);
            p.transactions = (uint64_t)v;
            break;
        case 'T':
            rc = spm_parse_double("--avg-size", optarg, 1e-9, 1e6, &p.avg_size);
            break;
        case 'I':
            rc = spm_parse_double("--avg-pattern", optarg, 1e-9, 1e6, &p.avg_pattern);
            break;
        case 'N':
            rc = spm_parse_long("--items", optarg, 1, 1L << 31, &v);
            p.items = (uint32_t)v;
            break;
        case 'L':
            rc = spm_parse_long("--patterns", optarg, 1, 1L << 26, &v);
            p.patterns = (uint32_t)v;
            break;
        case 'c':
            rc = spm_parse_double("--correlation", optarg, 0, 1e6, &p.correlation);
            break;
        case 'r':
            rc = spm_parse_double("--corruption", optarg, 0, 1, &p.corruption);
            break;
        case 's':
            rc = spm_parse_long("--seed", optarg, 0, 0x7fffffffffffffffL, &v);
            p.seed = (uint64_t)v;
            break;
        case 'o':
            out = optarg;
            break;
        case 'S':
            sync = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return spm_cli_usage("gen transactions", "bad option");
        }
        if (rc != 0)
            return spm_cli_fail("gen transactions", rc);
    }
    if (!out || optind != argc)
        return spm_cli_usage("gen transactions",
                             !out ? "-o FILE is required" : "unexpected argument");
    spm_quest_t *q = spm_quest_new(&p);
    if (!q)
        return spm_cli_fail("gen transactions", SPM_EINVAL);
    spm_outfile_t *f = spm_outfile_open(out);
    if (!f) {
        spm_quest_destroy(&q);
        return spm_cli_fail("gen transactions", SPM_EIO);
    }
    spm_outfile_set_sync(f, sync);
    FILE *s = spm_outfile_stream(f);
    const uint32_t *items;
    size_t n;
    while ((rc = spm_quest_next(q, &items, &n)) == 1) {
        for (size_t i = 0; i < n; i++)
            fprintf(s, i ? " %u" : "%u", items[i]);
        fputc('\n', s);
    }
    spm_quest_destroy(&q);
    if (rc != 0) {
        spm_outfile_abort(&f);
        return spm_cli_fail("gen transactions", rc);
    }
    if ((rc = spm_outfile_commit(&f)) != 0)
        return spm_cli_fail("gen transactions", rc);
    return 0;
}
