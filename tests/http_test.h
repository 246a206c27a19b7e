/*  =========================================================================
    http_test - what the tests of the HTTP ports share (tests/integration/
    test_http.c, test_dashboard.c): a free loopback port, whether a tool
    (curl, chromium, promtool, python3) is installed. Header-only; include
    after tests/spm_test.h.
    =========================================================================
*/
#ifndef SPM_TESTS_HTTP_TEST_H_INCLUDED
#define SPM_TESTS_HTTP_TEST_H_INCLUDED

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/*  A loopback port nobody listens on now (another process may take it
    before the caller does: start the server soon after). */
static inline int spm_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    SPM_TEST_ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/*  Whether the command TOOL is on the PATH. */
static inline int spm_test_have(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

#endif
