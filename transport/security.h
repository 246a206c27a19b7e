/*  =========================================================================
    security - CurveZMQ on every TCP endpoint, keys, and the allow-list

    @discuss
    Every tcp:// endpoint is encrypted and authenticated with CurveZMQ.
    ipc:// endpoints (the embedded VM) live in a 0700 directory and need no
    keys. A key directory (security.keys, --keys) holds:

        center.key, center.pub     the center's key pair
        agent.key, agent.pub       a node's key pair (its agent and IEUs)
        client.key, client.pub     a client's key pair
        authorized/NAME.pub           public keys let in by the center and by
                                   the nodes' data agents

    `spm keygen --name NAME` writes NAME.key (0600) and NAME.pub; with
    --authorize it also copies NAME.pub into authorized/. A server socket
    asks a ZAP handler (polled by the owning thread, no extra thread) about
    every new connection: a key not in authorized/ is refused, logged with
    the peer's address and counted. Plain TCP without keys needs --insecure
    (security.insecure) and warns.
    @end
    =========================================================================
*/
#ifndef SPM_SECURITY_H_INCLUDED
#define SPM_SECURITY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct spm_security spm_security_t;

/*  Prepares ROLE ("center", "agent" or "client") with keys from DIR (NULL:
    the configured security.keys). Keys are read lazily, on the first tcp://
    endpoint. INSECURE allows plain TCP. Returns NULL when out of memory. */
spm_security_t *spm_security_new(const char *dir, const char *role, int insecure);
void spm_security_destroy(spm_security_t **self_p);

/*  Binds SOCK to ENDPOINT in CTX; a tcp:// endpoint becomes a CurveZMQ
    server with ZAP authentication (the handler socket is created in CTX on
    first use). Returns 0, or SPM_EDENIED (no keys and not insecure),
    SPM_EADDRINUSE, SPM_EINVAL with the detail set. */
int spm_security_bind(spm_security_t *self, void *ctx, void *sock, const char *endpoint);

/*  Connects SOCK to ENDPOINT; over tcp:// as a CurveZMQ client that expects
    SERVER_KEY (Z85; NULL: the center's, from center.pub). Returns 0 or an
    SPM_E* code with the detail set. */
int spm_security_connect(spm_security_t *self, void *sock, const char *endpoint,
                         const char *server_key);

/*  Handshake events a monitor of a connecting socket reports. */
#define SPM_SECURITY_EVENTS (0x0800 | 0x1000 | 0x2000 | 0x4000) /* ZMQ_EVENT_HANDSHAKE_* */

/*  Starts a monitor of SOCK (in CTX) for EVENTS and the handshake events,
    and returns the PAIR socket to poll for them (the caller closes it), or
    NULL when the monitor cannot be made. */
void *spm_security_monitor(void *ctx, void *sock, int events);

/*  Reads every event waiting on MONITOR (from spm_security_monitor on a
    socket connected to ENDPOINT). Returns 0 while nothing is wrong, else
    SPM_EDENIED with a one-line detail naming the key file this process
    used and what to do: the center refused the key (not in its
    authorized/), it wants keys and this process has none (--insecure),
    or the handshake failed twice with no success in between (center.pub
    is not that center's key). */
int spm_security_monitor_read(spm_security_t *self, void *monitor, const char *endpoint);

/*  This process's public key (Z85), or "" when it has none (insecure or ipc). */
const char *spm_security_public(spm_security_t *self);

/*  The ZAP handler socket to poll (NULL until a secure bind made it), and
    the handling of whatever requests are waiting on it. */
void *spm_security_zap(spm_security_t *self);
void spm_security_zap_handle(spm_security_t *self);

/*  Whether public KEY (Z85) is in the key directory's authorized/SUB/
    (read now, so an operator's change counts at once). */
int spm_security_listed(spm_security_t *self, const char *sub, const char *key);

/*  Copies into NAME (SIZE bytes) the name of the key directory's
    authorized/NAME.pub that holds public KEY (Z85). Returns 1, or 0 when
    none does (NAME is left as it was). */
int spm_security_key_name(spm_security_t *self, const char *key, char *name, size_t size);

/*  Connections refused so far. */
uint64_t spm_security_refused(const spm_security_t *self);

/*  Whether tcp:// endpoints are secured (keys present, not insecure). */
int spm_security_on(const spm_security_t *self);

#endif
