/*  =========================================================================
    clock - the monotonic clock every layer reads

    @discuss
    Durations, deadlines and rates are measured on CLOCK_MONOTONIC in
    microseconds, so that a change of the wall clock never stretches a
    lease or a timeout.
    @end
    =========================================================================
*/
#ifndef SPM_CLOCK_H_INCLUDED
#define SPM_CLOCK_H_INCLUDED

#include <stdint.h>

/*  Microseconds on the monotonic clock. */
uint64_t spm_now_us(void);

#endif
