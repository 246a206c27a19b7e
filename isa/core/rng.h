/*  rng - moved to include/spm/spm_rng.h, installed for plugins; this name stays for the tree. */
#include "spm/spm_rng.h"
