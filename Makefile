# spm - the super-instruction virtual machine.
#
#   make            build build/spm
#   make run        install missing packages, build, run a synthetic job on an embedded VM
#   make check      install missing packages, build, run every test; T=SUITE builds and
#                   runs only tests/*/test_SUITE.c, T=SUITE:TEST only that test of it
#   make check-list print every SUITE:TEST name, one a line (T=SUITE: that suite's)
#   make bench      run the benchmarks in bench/ (they print ratios against baselines)
#   make install    install binary, man pages, systemd units (UNITDIR), headers and
#                   pkg-config files under PREFIX (DESTDIR for a staging root)
#   make deb        build the Debian packages spm and spm-dev into build/deb (installs
#                   dpkg-dev, debhelper and lintian when missing; debian/)
#   make check-deb  make deb, then check the packages (scripts/check-deb.sh): contents,
#                   lintian, the units; installs them and starts the center where
#                   systemd runs (root)
#   make examples   build examples/ against the installed spm (they are plugins)
#   make format     clang-format every source file
#   make fuzz       build the libFuzzer targets in tests/fuzz with clang and run each
#                   for FUZZ_SECONDS (default 60; T=name runs one)
#   make check-san  make check on a build with AddressSanitizer and UBSan
#   make chaos      the long chaos run (minutes): jobs under killed IEUs, agents and
#                   centers, stopped processes and corrupted node caches (CHAOS_ROUNDS,
#                   CHAOS_SEED, CHAOS_STOP_EVERY, CHAOS_CORRUPT_EVERY (every how many
#                   faults; 0: never), ...: see tests/chaos/chaos.c)
#   make deps       install the Debian packages the build needs, when missing
#                   (DEPS=no: never, as the package build says)

PREFIX   ?= /usr/local
# systemd reads units from /usr/local/lib/systemd/system too.
UNITDIR  ?= $(PREFIX)/lib/systemd/system
DEPS     ?= yes
BUILD    ?= build
CC       ?= cc
SANITIZE ?=
FUZZ_SECONDS ?= 60
OPT      ?= -O2

PKGS     := libzmq libprotobuf-c lmdb inih libxxhash zlib libdeflate
# Opened with dlopen where they are used (isa/matrix/kernels.c, transport/http.c),
# not linked: loading them took half of every spm process's start. The
# build passes their paths; the benchmarks that call them link them.
LAZY     := openblas libmicrohttpd
lazy_lib  = $(shell d=$$(pkg-config --variable=libdir $(1) 2>/dev/null); \
              objdump -p "$$d/lib$(2).so" 2>/dev/null | awk -v d="$$d" '/SONAME/ {print d "/" $$2}')
CPPFLAGS += -D_GNU_SOURCE -I. -Iinclude -I$(BUILD)/gen -I/usr/include/suitesparse
CPPFLAGS += -DSPM_OPENBLAS='"$(call lazy_lib,openblas,openblas)"'
CPPFLAGS += -DSPM_MICROHTTPD='"$(call lazy_lib,libmicrohttpd,microhttpd)"'
CFLAGS   += -std=c11 $(OPT) -g -Wall -Wextra -Werror -pthread
CFLAGS   += $(shell pkg-config --cflags $(PKGS) $(LAZY) 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcxsparse -pthread -lm
LAZY_LIBS = $(shell pkg-config --libs $(LAZY) 2>/dev/null)
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
BUILD    := build/san
endif

PROTO    := transport/spm.proto
GEN_C    := $(BUILD)/gen/transport/spm.pb-c.c
GEN_H    := $(BUILD)/gen/transport/spm.pb-c.h
SRCS     := $(sort $(wildcard base/*.c transport/*.c runtime/*.c datacache/*.c idu/*.c ieu/*.c \
                isa/*/*.c vm/*/*.c programs/*/*.c))
LIB_SRCS := $(filter-out vm/cmd/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/spm.pb-c.o
MAIN_OBJ := $(BUILD)/obj/vm/cmd/main.o
BIN      := $(BUILD)/spm
TESTS    := $(sort $(wildcard tests/unit/test_*.c tests/integration/test_*.c))
TEST_BINS:= $(patsubst tests/%.c,$(BUILD)/tests/%,$(TESTS))
FUZZ_SRCS:= $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS:= $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
BENCHES  := $(sort $(wildcard bench/bench_*.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCHES))
PAPER    := $(sort $(wildcard bench/paper/exp_*.c))
PAPER_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(PAPER))
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

.PHONY: all deps deps-quiet run check check-list check-san examples chaos bench bench-paper install deb check-deb clean format format-check tests fuzz fuzz-bins fuzz-seeds
all: deps-quiet $(BIN)

deps:
	@sh scripts/deps.sh

deps-quiet:
	@[ "$(DEPS)" = no ] || sh scripts/deps.sh

# Order-only on the package check, so that `make -j` on a fresh machine
# installs protoc-c (and the headers) before anything needs them.
$(GEN_C) $(GEN_H): $(PROTO) | deps-quiet
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $(PROTO)

$(BUILD)/obj/gen/spm.pb-c.o: $(GEN_C)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -c $< -o $@

# The git commit spm_build_info and `spm --version` name (base/build.c);
# "unknown" outside git. Only base/build.o is rebuilt when it changes.
SPM_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
$(BUILD)/gen/commit.txt: FORCE
	@mkdir -p $(BUILD)/gen
	@echo '$(SPM_COMMIT)' | cmp -s - $@ || echo '$(SPM_COMMIT)' > $@
$(BUILD)/obj/base/build.o: $(BUILD)/gen/commit.txt
$(BUILD)/obj/base/build.o: CPPFLAGS += -DSPM_COMMIT='"$(SPM_COMMIT)"'

# The dashboard's page is assembled into its object (.incbin).
$(BUILD)/obj/vm/center/dashboard.o: vm/center/dashboard.html

$(BUILD)/obj/%.o: %.c $(GEN_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# The list of objects is a prerequisite too, so that deleting a source file
# rebuilds the archive without its object (and its registrations).
$(BUILD)/objs.txt: FORCE
	@mkdir -p $(BUILD)
	@echo '$(LIB_OBJS)' | cmp -s - $@ || echo '$(LIB_OBJS)' > $@

$(BUILD)/libspm.a: $(LIB_OBJS) $(BUILD)/objs.txt
	@rm -f $@ && ar rcs $@ $(LIB_OBJS)

FORCE:

# Objects register opcodes, types, programs and commands from constructors,
# so the whole archive is linked in.
WHOLE = -Wl,--whole-archive $(BUILD)/libspm.a -Wl,--no-whole-archive

# Plugins (docs/PROGRAMMING.md) are shared objects whose spm_* references
# are resolved against the binary: those symbols are exported.
EXPORT = -Wl,--export-dynamic-symbol='spm_*'

$(BIN): $(MAIN_OBJ) $(BUILD)/libspm.a
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS) $(EXPORT) -o $@ $(MAIN_OBJ) $(WHOLE) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libspm.a $(wildcard tests/*.h tests/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) $(LDFLAGS) $(EXPORT) -o $@ $< \
	    $(WHOLE) $(shell pkg-config --libs check) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libspm.a $(wildcard bench/*.h bench/paper/*.h) tests/spm_test.h
	@mkdir -p $(dir $@)
	@echo "  BENCH   $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) $(LDFLAGS) -o $@ $< \
	    $(WHOLE) $(shell pkg-config --libs check) $(LDLIBS) $(LAZY_LIBS)

# Plugins the tests run: tests/plugins/NAME.c and the examples, built
# against the tree's spm.h as `make examples` builds them against the
# installed one; version.c twice (two versions of one program).
PLUGIN_FLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -ffp-contract=off -fPIC \
                -shared -Iinclude/spm
TEST_PLUGINS := $(patsubst tests/plugins/%.c,$(BUILD)/plugins/lib%.so,$(wildcard tests/plugins/*.c))
EXAMPLE_NAMES := $(notdir $(patsubst %/,%,$(dir $(wildcard examples/*/*.c))))
PLUGINS  := $(TEST_PLUGINS) $(BUILD)/plugins/libversion2.so \
            $(EXAMPLE_NAMES:%=$(BUILD)/plugins/lib%.so)

$(BUILD)/plugins/lib%.so: tests/plugins/%.c $(wildcard include/spm/*.h)
	@mkdir -p $(dir $@)
	@echo "  PLUGIN  $@"
	@$(CC) $(PLUGIN_FLAGS) -o $@ $<

$(BUILD)/plugins/libversion2.so: tests/plugins/version.c include/spm/spm.h
	@mkdir -p $(dir $@)
	@echo "  PLUGIN  $@"
	@$(CC) $(PLUGIN_FLAGS) -DPLUGIN_VERSION=2 -o $@ $<

define example_rule
$(BUILD)/plugins/lib$(1).so: examples/$(1)/$(1).c $(wildcard include/spm/*.h)
	@mkdir -p $$(dir $$@)
	@echo "  PLUGIN  $$@"
	@$$(CC) $$(PLUGIN_FLAGS) -o $$@ $$< -lm
endef
$(foreach e,$(EXAMPLE_NAMES),$(eval $(call example_rule,$(e))))

tests: $(TEST_BINS) $(PLUGINS)

# The examples, built out of tree as a programmer builds them: against the
# installed spm (make install; PKG_CONFIG_PATH if not under /usr/local).
examples:
	@$(MAKE) --no-print-directory -C examples

run: all
	$(BIN) run synthetic --sis 2000 --work uniform:0:4ms

# T=SUITE (or SUITE:TEST) builds only the suite whose file is test_SUITE.c,
# and the plugins; T=layers runs only scripts/layers.sh; T=list is check-list.
T_SUITE  := $(firstword $(subst :, : ,$(T)))
CHECK_BINS := $(if $(filter-out list,$(T_SUITE)),$(filter %/test_$(T_SUITE),$(TEST_BINS)),$(TEST_BINS))

check: all $(CHECK_BINS) $(PLUGINS)
	@SPM_BIN=$(abspath $(BIN)) SPM_SOURCE_DIR=$(CURDIR) SPM_PLUGINS=$(abspath $(BUILD)/plugins) \
	    sh scripts/check.sh "$(T)" $(CHECK_BINS)

check-list: $(CHECK_BINS)
	@sh scripts/check.sh --list "$(T)" $(CHECK_BINS)

check-san:
	@$(MAKE) --no-print-directory SANITIZE=address,undefined check

# The long form of tests/integration/test_chaos.c; not part of check.
chaos: all $(BUILD)/chaos/chaos
	@SPM_BIN=$(abspath $(BIN)) $(BUILD)/chaos/chaos

$(BUILD)/chaos/chaos: tests/chaos/chaos.c tests/chaos/chaos.h tests/spm_test.h
	@mkdir -p $(dir $@)
	@echo "  CHAOS   $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) $(LDFLAGS) -o $@ $<

# The fuzz targets need clang's libFuzzer; the library is rebuilt with clang
# and coverage instrumentation into build/fuzz. A crash stops the run and
# leaves the input in build/fuzz/crash-NAME-*: copy it to
# tests/fuzz/regress/NAME/ so test_fuzz replays it.
fuzz:
	@command -v clang >/dev/null || { echo "make fuzz needs clang and libclang-rt-14-dev" \
	    "(apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
	@$(MAKE) --no-print-directory CC=clang BUILD=build/fuzz \
	    SANITIZE=fuzzer-no-link,address,undefined fuzz-bins
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh scripts/fuzz.sh build/fuzz/fuzz "$(T)"

fuzz-bins: $(FUZZ_BINS)

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/targets.h $(BUILD)/libspm.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< $(WHOLE) $(LDLIBS)

# Rewrites the seed corpus in tests/fuzz/corpus from tests/fuzz/seeds.c.
fuzz-seeds: all $(BUILD)/fuzz-seeds
	$(BUILD)/fuzz-seeds tests/fuzz/corpus

$(BUILD)/fuzz-seeds: tests/fuzz/seeds.c $(BUILD)/libspm.a
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(WHOLE) $(LDLIBS)

bench: all $(BENCH_BINS) $(BUILD)/plugins/libwordfreq.so
	@SPM_BIN=$(abspath $(BIN)) SPM_PLUGINS=$(abspath $(BUILD)/plugins) \
	    sh scripts/bench.sh $(BUILD)/bench "$(T)"

# The dissertation's experiments on a simulated cluster; writes bench/paper/RESULTS.md
# (T=NAME: only bench/paper/exp_*NAME*, its section spliced in).
bench-paper: all $(PAPER_BINS)
	@SPM_BIN=$(abspath $(BIN)) sh bench/paper/run.sh $(BUILD)/bench/paper "$(T)"

# The units name the binary where the Debian package puts it (/usr/bin);
# their ExecStart is written for PREFIX.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/spm $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/spm $(DESTDIR)$(UNITDIR)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/spm
	install -m 644 include/spm/spm.h include/spm/spm_rng.h include/spm/spm_codec.h \
	    $(DESTDIR)$(PREFIX)/include/spm/
	install -m 644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	for u in spm-center spm-agent; do \
	    sed -e 's|^ExecStart=/usr/bin/spm |ExecStart=$(PREFIX)/bin/spm |' conf/$$u.service \
	        > $(DESTDIR)$(UNITDIR)/$$u.service && chmod 644 $(DESTDIR)$(UNITDIR)/$$u.service || exit 1; \
	done
	install -m 644 conf/spm.conf $(DESTDIR)$(PREFIX)/share/spm/
	install -m 755 conf/spm.slurm $(DESTDIR)$(PREFIX)/share/spm/
	install -m 644 $(BUILD)/libspm.a $(DESTDIR)$(PREFIX)/lib/libspm.a
	sed -e 's|@PREFIX@|$(PREFIX)|' conf/spm.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/spm.pc
	sed -e 's|@PREFIX@|$(PREFIX)|' conf/spm-static.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/spm-static.pc

# The packages are built from a copy of the tree in build/deb/spm-VERSION
# (dpkg-buildpackage writes beside the tree it builds), from scratch, with
# Debian's hardening flags: build/deb/*.deb.
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
deb:
	@sh scripts/deps.sh deb
	@rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/spm-$(DEB_VERSION)
	@tar -cf - --exclude=./build --exclude=./.git . | tar -xf - -C $(BUILD)/deb/spm-$(DEB_VERSION)
	cd $(BUILD)/deb/spm-$(DEB_VERSION) && dpkg-buildpackage -b -us -uc -j2 >../build.log 2>&1 \
	    || { tail -n 30 ../build.log; exit 1; }
	@ls $(BUILD)/deb/*.deb

check-deb: deb
	@sh scripts/check-deb.sh $(BUILD)/deb

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRCS)
	@python3 -m json.tool conf/grafana-dashboard.json >/dev/null

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
