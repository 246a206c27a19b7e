/*  codec - moved to include/spm/spm_codec.h, installed for plugins; this name stays for the tree.
 */
#include "spm/spm_codec.h"
