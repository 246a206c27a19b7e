#!/bin/sh
# Checks the Debian packages that `make deb` built (make check-deb runs it;
# .ci/run too): what they hold, lintian, the systemd units, and, where it
# can, the package installed and its center started under systemd.
#
#   sh scripts/check-deb.sh DIR     DIR holds spm_*.deb, spm-dev_*.deb, *.changes
#
# The install runs in a throwaway container: systemd-nspawn boots this
# machine's own system (an overlay of / whose writes go to a tmpfs) with
# systemd as PID 1 and no network but loopback; the package is installed
# there, keys made as the spm user, the center and an agent started, and a
# job run through them. It needs root and systemd-nspawn; without them it
# is skipped with a message. Prints one closing line: N passed, N failed,
# N skipped.
set -u
dir=${1:?usage: check-deb.sh DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
pass=0
fail=0
skip=0
ok() {
    echo "ok    $1"
    pass=$((pass + 1))
}
bad() {
    echo "FAIL  $1"
    fail=$((fail + 1))
}
skipped() {
    echo "skip  $1"
    skip=$((skip + 1))
}
tmp=$(mktemp -d)
root=""
cleanup() {
    if [ -n "$root" ]; then
        [ -n "${nspawn_pid:-}" ] && kill "$nspawn_pid" 2>/dev/null && wait "$nspawn_pid" 2>/dev/null
        umount "$root/root" 2>/dev/null
        umount "$root" 2>/dev/null
        rmdir "$root" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

deb=$(ls "$dir"/spm_*.deb 2>/dev/null | head -n 1)
dev=$(ls "$dir"/spm-dev_*.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ] || [ -z "$dev" ]; then
    bad "$dir holds spm_*.deb and spm-dev_*.deb (make deb)"
    echo "deb: $pass passed, $fail failed, $skip skipped"
    exit 1
fi
echo "== $(basename "$deb") $(basename "$dev")"

# What the package installs: the command, every man page of docs/man, the
# units, the configuration (a conffile), the Slurm script.
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$tmp/list"
want="/usr/bin/spm /lib/systemd/system/spm-center.service /lib/systemd/system/spm-agent.service
/etc/spm/spm.conf /usr/share/spm/spm.slurm /usr/share/doc/spm/README.Debian"
for m in "$src"/docs/man/*.1; do want="$want /usr/share/man/man1/$(basename "$m").gz"; done
missing=""
for f in $want; do grep -qxF "$f" "$tmp/list" || missing="$missing $f"; done
if [ -z "$missing" ]; then ok "spm holds the binary, $(ls "$src"/docs/man/*.1 | wc -l) man pages, both units, spm.conf, spm.slurm"; else bad "spm lacks:$missing"; fi
dpkg-deb -c "$dev" >"$tmp/devlist"
grep -q '/usr/include/spm/spm.h$' "$tmp/devlist" && grep -q '/spm.pc$' "$tmp/devlist" &&
    ok "spm-dev holds spm.h and spm.pc" || bad "spm-dev lacks spm.h or spm.pc"
dpkg-deb -I "$deb" conffiles 2>/dev/null | grep -qxF /etc/spm/spm.conf &&
    ok "/etc/spm/spm.conf is a conffile (an operator's edits survive upgrades)" || bad "/etc/spm/spm.conf is not a conffile"

# debian/control's Build-Depends are what scripts/deps.sh installs.
bdeps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$src/debian/control" | sed '$d' | sed 's/^Build-Depends://' |
    tr ',' '\n' | sed 's/(.*)//; s/<.*>//; s/[[:space:]]//g' | grep -v '^$' | grep -v '^debhelper-compat$')
deps=$(sed -n '/^PKGS="/,/"$/p' "$src/scripts/deps.sh" | tr -d '"' | sed 's/^PKGS=//')
extra=""
for p in $bdeps; do echo " $deps " | tr '\n' ' ' | grep -q " $p " || extra="$extra $p"; done
if [ -z "$extra" ]; then ok "Build-Depends ($(echo $bdeps | wc -w) packages) are in scripts/deps.sh"; else bad "Build-Depends not in scripts/deps.sh:$extra"; fi

# lintian: no error (warnings and information are printed, not failed).
if command -v lintian >/dev/null; then
    changes=$(ls "$dir"/*.changes | head -n 1)
    lintian --allow-root "$changes" >"$tmp/lintian" 2>&1
    sed 's/^/      /' "$tmp/lintian"
    if grep -q '^E:' "$tmp/lintian"; then bad "lintian finds errors"; else ok "lintian: no error ($(grep -c '^W:' "$tmp/lintian") warnings)"; fi
else
    skipped "lintian: not installed (apt-get install lintian)"
fi

# The units as packaged: systemd reads them without a complaint, and
# systemd-analyze security rates them below 5 (the stock units were 9.2).
dpkg-deb -x "$deb" "$tmp/x"
if command -v systemd-analyze >/dev/null; then
    mkdir "$tmp/u"
    for u in spm-center spm-agent; do
        grep -q '^ExecStart=/usr/bin/spm ' "$tmp/x/lib/systemd/system/$u.service" ||
            bad "$u.service: ExecStart is not /usr/bin/spm"
        sed "s|^ExecStart=/usr/bin/spm|ExecStart=$tmp/x/usr/bin/spm|" "$tmp/x/lib/systemd/system/$u.service" >"$tmp/u/$u.service"
        if systemd-analyze verify --man=no "$tmp/u/$u.service" >"$tmp/verify" 2>&1 && ! [ -s "$tmp/verify" ]; then
            ok "systemd-analyze verify $u.service"
        else
            sed 's/^/      /' "$tmp/verify"
            bad "systemd-analyze verify $u.service"
        fi
        if systemd-analyze security --offline=yes "$tmp/u/$u.service" >"$tmp/sec" 2>&1; then
            level=$(sed -n 's/.*exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/sec")
            if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l < 5) }'; then
                ok "systemd-analyze security $u.service: exposure $level (under 5)"
            else
                grep '✗' "$tmp/sec" | sed 's/^/      /'
                bad "systemd-analyze security $u.service: exposure ${level:-unknown}, not under 5"
            fi
        else
            skipped "systemd-analyze security --offline: not in this systemd ($(systemd-analyze --version | head -n 1))"
        fi
    done
else
    skipped "systemd-analyze: not installed (apt-get install systemd)"
fi

# Installed under systemd: in a container that boots this machine's system.
why=""
[ "$(id -u)" -eq 0 ] || why="not root"
[ -z "$why" ] && ! command -v systemd-nspawn >/dev/null && why="no systemd-nspawn (apt-get install systemd-container)"
[ -z "$why" ] && [ ! -x /lib/systemd/systemd ] && why="no systemd on this machine"
if [ -z "$why" ]; then
    root=$(mktemp -d /tmp/spm-deb-root-XXXXXX)
    if ! { mount -t tmpfs tmpfs "$root" && mkdir "$root/u" "$root/w" "$root/root" &&
        mount -t overlay overlay -o "lowerdir=/,upperdir=$root/u,workdir=$root/w" "$root/root"; } 2>"$tmp/mount"; then
        why="cannot lay an overlay of / ($(head -n 1 "$tmp/mount"))"
    fi
fi
if [ -n "$why" ]; then
    skipped "install under systemd: $why"
else
    # Nothing of spm from this machine in the container (a binary, a store
    # a test left in /var/lib/spm): the package's alone. The overlay keeps
    # the removals; this machine keeps its files.
    rm -rf "$root/root/usr/bin/spm" "$root/root/usr/local/bin/spm" "$root/root/etc/spm" \
        "$root/root/var/lib/spm" "$root/root/var/cache/spm" "$root/root/lib/systemd/system/spm-"* \
        "$root/root/etc/systemd/system/spm-"* "$root/root/usr/local/lib/systemd/system/spm-"*
    machine=spm-deb-$$
    # basic.target: systemd and its journal, none of this machine's services.
    systemd-nspawn -q -D "$root/root" -M "$machine" --register=no --keep-unit --link-journal=no \
        --private-network --bind-ro="$(cd "$dir" && pwd)":/mnt/spm-debs -b -- systemd.unit=basic.target \
        >"$tmp/nspawn.log" 2>&1 </dev/null &
    nspawn_pid=$!
    # The container's PID 1 is the child of systemd-nspawn.
    pid1=""
    n=0
    while [ -z "$pid1" ] && [ $n -lt 100 ] && kill -0 "$nspawn_pid" 2>/dev/null; do
        sleep 0.1
        pid1=$(ps -o pid= --ppid "$nspawn_pid" | head -n 1 | tr -d ' ')
        n=$((n + 1))
    done
    c() { nsenter -t "$pid1" -a "$@"; }
    state=""
    n=0
    while [ -n "$pid1" ] && [ $n -lt 300 ]; do
        state=$(c systemctl is-system-running 2>/dev/null)
        case $state in running | degraded) break ;; esac
        sleep 0.1
        n=$((n + 1))
    done
    case $state in
    running | degraded)
        ok "a container boots this machine's system with systemd as PID 1 ($(c cat /proc/1/comm))"
        c dpkg -i /mnt/spm-debs/"$(basename "$deb")" /mnt/spm-debs/"$(basename "$dev")" >"$tmp/dpkg" 2>&1 &&
            ok "dpkg -i $(basename "$deb") $(basename "$dev")" || { sed 's/^/      /' "$tmp/dpkg"; bad "dpkg -i"; }
        c getent passwd spm | grep -q ':/usr/sbin/nologin$' &&
            ok "postinst made the system user spm (no login shell)" || bad "no system user spm"
        modes=$(c stat -c '%n %U:%G %a' /var/lib/spm /var/cache/spm /etc/spm/keys 2>&1 | tr '\n' ';')
        [ "$modes" = "/var/lib/spm spm:spm 750;/var/cache/spm spm:spm 750;/etc/spm/keys spm:spm 700;" ] &&
            ok "postinst made $modes" || bad "directories: $modes"
        # README.Debian's steps, the center's and one node's on one host.
        for k in "center" "client --plugins" "agent --authorize"; do
            c runuser -u spm -- spm keygen --keys /etc/spm/keys --name $k >/dev/null 2>"$tmp/keygen" ||
                { cat "$tmp/keygen"; bad "spm keygen --name $k as spm"; }
        done
        c sed -i 's/^ieus = 0/ieus = 2/; s/^allow_plugins = auto/allow_plugins = keys/' /etc/spm/spm.conf
        c systemctl start spm-center
        # Ready when it answers: spm status waits for it up to its bound.
        if c timeout 20 spm status >"$tmp/status" 2>&1; then
            ok "systemctl start spm-center: spm status answers ($(head -n 1 "$tmp/status" | cut -c1-40)...)"
        else
            sed 's/^/      /' "$tmp/status"
            c journalctl -u spm-center --no-pager | tail -n 10 | sed 's/^/      /'
            bad "spm-center does not answer spm status"
        fi
        main=$(c systemctl show -p MainPID --value spm-center)
        hard=$(c grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/"$main"/status 2>/dev/null | tr -s '\t ' ' ' | tr '\n' ';')
        [ "$hard" = "CapEff: 0000000000000000;NoNewPrivs: 1;Seccomp: 2;" ] &&
            ok "the center runs as spm without capabilities or privilege gain, with a system-call filter" ||
            bad "the center's confinement: '$hard'"
        c systemctl start spm-agent
        # A dense product (OpenBLAS) and a plugin would need W+X memory if
        # anything did: the units deny it (MemoryDenyWriteExecute).
        if c sh -c 'cd /tmp && spm gen matrix --rows 300 --cols 300 --density 1 --seed 3 -o A.mtx &&
                timeout 60 spm matmul A.mtx A.mtx -o C.npy --block 150 --quiet --center tcp://localhost:7700' \
            >"$tmp/job" 2>&1 && c test -s /tmp/C.npy; then
            ok "a dense matmul runs on the packaged center and agent (OpenBLAS under MemoryDenyWriteExecute)"
        else
            sed 's/^/      /' "$tmp/job"
            c journalctl -u spm-agent --no-pager | tail -n 10 | sed 's/^/      /'
            bad "a matmul on the packaged center and agent"
        fi
        # A plugin built with spm-dev's spm.pc, loaded from memory (memfd,
        # dlopen) by the center and the IEUs: that needs no W+X memory either.
        if c sh -c 'cd /tmp && cc -O2 -o libmontecarlo.so /usr/share/doc/spm-dev/examples/montecarlo/montecarlo.c \
                $(pkg-config --cflags --libs spm) -lm && timeout 60 spm run --plugin /tmp/libmontecarlo.so \
                --center tcp://localhost:7700 --quiet montecarlo --samples 100000' >"$tmp/job" 2>&1 &&
            grep -q '^pi 3\.1' "$tmp/job"; then
            ok "a plugin built against spm-dev runs on the packaged center and agent ($(grep '^pi' "$tmp/job" | cut -c1-16))"
        else
            sed 's/^/      /' "$tmp/job"
            bad "a plugin on the packaged center and agent"
        fi
        c systemctl stop spm-agent spm-center
        c dpkg --purge spm-dev spm >"$tmp/dpkg" 2>&1 && ! c test -e /var/lib/spm && ! c test -e /etc/spm/keys &&
            ok "dpkg --purge spm removes /var/lib/spm and /etc/spm/keys" || { sed 's/^/      /' "$tmp/dpkg"; bad "dpkg --purge spm"; }
        c systemctl poweroff >/dev/null 2>&1
        n=0
        while kill -0 "$nspawn_pid" 2>/dev/null && [ $n -lt 100 ]; do
            sleep 0.1
            n=$((n + 1))
        done
        ;;
    *)
        sed 's/^/      /' "$tmp/nspawn.log" | tail -n 5
        skipped "install under systemd: the container did not boot (${state:-no PID 1})"
        ;;
    esac
fi
echo "deb: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
