# trevo -- build, test, benchmark, fuzz.
#
#   make            build build/trevo
#   make run        install dependencies, run the main job
#   make test       install dependencies, build, run every test
#   make bench      run the benchmarks and write their tables into BENCHMARKS.md
#   make asan       the tests under address + undefined-behaviour sanitizers
#   make valgrind   the single-process search under valgrind --leak-check=full
#   make test-faults / test-hosts   the fault matrix; several MPI hosts (root)
#   make fuzz       short libFuzzer runs of every parser (FUZZ_SECONDS=600 for long;
#                   a campaign: FUZZ_SECONDS=1800 FUZZ_RUNS=10000000, whichever first)
#   make format / format-check / clean / deps
#   make install / uninstall   trevo, libtrevo, its headers, trevo.pc, trevo.1 (PREFIX, DESTDIR)
#
# Layers (docs/architecture.md): genome/ and nn/ are plain C libraries built with plain
# $(CC) and no MPI include path; store/ adds SQLite; master/ and worker/ are
# built with mpicc. Sources are found by wildcard: a new .c file in a module
# folder, a tests/test_*.c, a tests/bench/bench_*.c or a tests/fuzz/fuzz_*.c
# needs no change here.

BUILD ?= build
CC ?= cc
MPICC ?= mpicc
SAN ?=
FUZZ_SECONDS ?= 20

DEB_PKGS = build-essential libopenmpi-dev openmpi-bin libsqlite3-dev sqlite3 libmsgpack-dev \
           libcmocka-dev libinih-dev libopenblas-dev clang libclang-rt-14-dev clang-format \
           valgrind gnuplot-nox graphviz
DEB_PKGS += zlib1g-dev dataset-fashion-mnist
# make install's test: pkg-config builds docs/library.md's program, groff checks the man page.
DEB_PKGS += pkgconf groff-base
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Werror
OPT = -O2 -g
ifeq ($(SAN),1)
OPT = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
endif
# -ffp-contract=off: no fused multiply-add contraction, so that every SIMD
# clone and every machine computes bit-identical results (docs/contracts.md, "Determinism").
BASE_CFLAGS = -std=c11 $(OPT) $(WARN) -ffp-contract=off -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L
OPENBLAS_CFLAGS = $(shell pkg-config --cflags openblas 2>/dev/null)
LDLIBS = -lsqlite3 -lmsgpackc -linih -lz -ldl -lm -lpthread
LDFLAGS = $(if $(filter 1,$(SAN)),-fsanitize=address$(,)undefined)
, := ,

NN_DIRS = nn nn/train nn/conv nn/spike nn/deploy
TV_SRC = $(wildcard tv/*.c)
GENOME_SRC = $(wildcard genome/*.c)
NN_SRC = $(foreach d,$(NN_DIRS),$(wildcard $(d)/*.c))
DATA_SRC = $(wildcard data/*.c)
STORE_SRC = $(wildcard store/*.c)
TASKS_SRC = $(wildcard tasks/*.c)
WORKER_SRC = $(wildcard worker/*.c)
MASTER_SRC = $(wildcard master/*.c)
CLI_SRC = $(filter-out cli/main.c,$(wildcard cli/*.c))
TEST_SRC = $(wildcard tests/test_*.c)
BENCH_SRC = $(wildcard tests/bench/bench_*.c)
FUZZ_SRC = $(wildcard tests/fuzz/fuzz_*.c)

# Each folder's include path: its own headers and those of the folders below
# it (docs/architecture.md); `make layers` checks the includes against it.
INC_TV = -Itv
INC_GENOME = -Igenome $(INC_TV)
INC_NN = $(addprefix -I,$(NN_DIRS)) $(INC_GENOME)
INC_DATA = -Idata $(INC_TV)
INC_STORE = -Istore $(INC_GENOME)
INC_TASKS = -Itasks -Idata $(INC_NN)
INC_WORKER = -Iworker $(INC_TASKS)
INC_MASTER = -Imaster -Istore $(INC_WORKER)
INC_CLI = -Icli $(INC_MASTER)

H_TV = $(wildcard tv/*.h)
H_GENOME = $(H_TV) $(wildcard genome/*.h)
H_NN = $(H_GENOME) $(foreach d,$(NN_DIRS),$(wildcard $(d)/*.h))
H_STORE = $(H_GENOME) $(wildcard store/*.h)
H_DATA = $(H_TV) $(wildcard data/*.h)
H_TASKS = $(H_NN) $(H_DATA) $(wildcard tasks/*.h)
H_WORKER = $(H_TASKS) $(wildcard worker/*.h)
H_MASTER = $(H_WORKER) $(wildcard store/*.h master/*.h)
H_ALL = $(H_MASTER) $(wildcard cli/*.h tests/*.h)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_TV = $(BUILD)/libtv.a
LIB_GENOME = $(BUILD)/libgenome.a
LIB_NN = $(BUILD)/libnn.a
LIB_DATA = $(BUILD)/libdata.a
LIB_STORE = $(BUILD)/libstore.a
LIB_TASKS = $(BUILD)/libtasks.a
LIB_WORKER = $(BUILD)/libworker.a
LIB_MASTER = $(BUILD)/libmaster.a
LIB_CLI = $(BUILD)/libcli.a
LIBS = $(LIB_CLI) $(LIB_MASTER) $(LIB_WORKER) $(LIB_TASKS) $(LIB_DATA) $(LIB_STORE) $(LIB_NN) \
       $(LIB_GENOME) $(LIB_TV)
TREVO = $(BUILD)/trevo
TESTS = $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCHES = $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all run test check unit integration bench bench-run asan fuzz format format-check \
        clean deps layers test-faults test-hosts valgrind
.DELETE_ON_ERROR:

all: $(TREVO)

# ---- libraries, one per module, each with only its own include paths ----
# Each folder as FOLDER:NAME:COMPILER: its objects are compiled by COMPILER
# (plain C below worker/, mpicc from it up) with the flags CFLAGS_NAME and the
# include path INC_NAME, and rebuilt when a header it can see (H_NAME)
# changes; the pattern of nn/ covers its sub-folders. PIC_INC_FOLDER: the
# include path of its -fPIC objects (make lib).
MODULES = tv:TV:CC genome:GENOME:CC nn:NN:CC data:DATA:CC store:STORE:CC tasks:TASKS:CC \
          worker:WORKER:MPICC master:MASTER:MPICC cli:CLI:MPICC
H_CLI = $(H_ALL)
CFLAGS_CLI = $(OPENBLAS_CFLAGS)
define module_rule
PIC_INC_$(1) = $$(INC_$(2))
$$(BUILD)/obj/$(1)/%.o: $(1)/%.c $$(H_$(2))
	@mkdir -p $$(@D)
	$$($(3)) $$(BASE_CFLAGS) $$(CFLAGS_$(2)) $$(INC_$(2)) -c $$< -o $$@
endef
$(foreach m,$(MODULES),$(eval $(call module_rule,$(word 1,$(subst :, ,$(m))),$(word 2,$(subst :, ,$(m))),$(word 3,$(subst :, ,$(m))))))

$(LIB_TV): $(call obj,$(TV_SRC))
$(LIB_GENOME): $(call obj,$(GENOME_SRC))
$(LIB_NN): $(call obj,$(NN_SRC))
$(LIB_DATA): $(call obj,$(DATA_SRC))
$(LIB_STORE): $(call obj,$(STORE_SRC))
$(LIB_TASKS): $(call obj,$(TASKS_SRC))
$(LIB_WORKER): $(call obj,$(WORKER_SRC))
$(LIB_MASTER): $(call obj,$(MASTER_SRC))
$(LIB_CLI): $(call obj,$(CLI_SRC))
$(BUILD)/lib%.a:
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# A plugin task (docs/plugins.md) calls the executable's genome_, nn_, tv_,
# task_ and data_ functions: exported (-rdynamic), their libraries linked in whole.
PLUGIN_API_LIBS = $(LIB_TASKS) $(LIB_DATA) $(LIB_NN) $(LIB_GENOME) $(LIB_TV)
PLUGIN_API = -rdynamic -Wl,--whole-archive $(PLUGIN_API_LIBS) -Wl,--no-whole-archive
$(TREVO): $(call obj,cli/main.c) $(LIBS)
	$(MPICC) $(LDFLAGS) -o $@ $(filter-out $(PLUGIN_API_LIBS),$^) $(PLUGIN_API) $(LDLIBS)

# ---- tests, benchmarks -------------------------------------------------
INC_ALL = $(INC_CLI) -Itests
# Test binaries only (not the benchmarks, fuzzers or trevo): the allocation
# functions are wrapped, so that calls from our libraries and the tests go to
# tests/failalloc.c, which can fail the k-th one and count live blocks
# (tests/failalloc.h); unarmed, it passes every call through.
FAILALLOC = $(BUILD)/obj/tests/failalloc.o
FAILALLOC_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=aligned_alloc \
                 -Wl,--wrap=open_memstream
$(FAILALLOC): tests/failalloc.c tests/failalloc.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -Itests -c $< -o $@
$(BUILD)/tests/%: tests/%.c $(H_ALL) $(LIBS) $(FAILALLOC)
	@mkdir -p $(@D)
	$(MPICC) $(BASE_CFLAGS) $(INC_ALL) $(OPENBLAS_CFLAGS) $(LDFLAGS) $(FAILALLOC_WRAP) -o $@ $< \
	    $(FAILALLOC) $(LIBS) -lcmocka $(LDLIBS)
$(BUILD)/bench/%: tests/bench/%.c $(H_ALL) $(wildcard tests/bench/*.h) $(LIBS)
	@mkdir -p $(@D)
	$(MPICC) $(BASE_CFLAGS) $(INC_ALL) $(OPENBLAS_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS)

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "make deps: installing" $$missing; \
	    $(SUDO) apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# `make test` = dependencies, then a fresh make that sees them, then the checks
# (the benchmarks are built too, not run, so they cannot rot).
test: deps
	@$(MAKE) --no-print-directory check

# What a target runs is built first, JOBS compilations at a time (unless make
# was given its own -j), then the tests run one after another.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PARALLEL = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS))
check:
	@$(MAKE) --no-print-directory $(PARALLEL) $(LIBS) $(TESTS) $(TREVO) $(BENCHES)
	@$(MAKE) --no-print-directory layers unit integration

# The house's rules (tests/layers.sh, docs/architecture.md): calls between
# folders go down, no two files call each other, genome/ and nn/ stay plain C.
LIB_SRC = $(TV_SRC) $(GENOME_SRC) $(NN_SRC) $(DATA_SRC) $(STORE_SRC) $(TASKS_SRC) $(WORKER_SRC) \
          $(MASTER_SRC) $(CLI_SRC)
# A folder may call the folders whose headers its include path (INC_NAME)
# holds: the one home of the layering; layers.sh adds the rule inside nn/.
layers: $(LIBS)
	@tests/layers.sh $(foreach m,$(MODULES),--allow "$(word 1,$(subst :, ,$(m))):$(INC_$(word 2,$(subst \
	    :, ,$(m))))") $(call obj,$(LIB_SRC))

unit: $(TESTS)
	@tests/run_unit.sh $(TESTS)

integration: $(TREVO)
	@tests/run_integration.sh $(TREVO)

# The fault matrix in full (RELIABILITY.md); `make test` runs its short form.
test-faults: deps
	@$(MAKE) --no-print-directory $(TREVO)
	@tests/faults/run.sh --full $(TREVO)

# Several MPI hosts as network namespaces on this machine (needs root).
test-hosts: deps
	@$(MAKE) --no-print-directory $(TREVO)
	@rc=0; tests/hosts/run.sh $(TREVO) || rc=$$?; \
	if [ $$rc = 77 ]; then echo "make test-hosts: SKIPPED (needs root and ip netns): not a pass"; \
	else exit $$rc; fi

run: deps
	@$(MAKE) --no-print-directory $(TREVO)
	@tests/run_main_job.sh $(TREVO)

bench: deps
	@$(MAKE) --no-print-directory bench-run

BENCH_SCRIPTS = $(wildcard tests/bench/bench_*.sh)
bench-run: $(BENCHES) $(TREVO)
	@TREVO=$(TREVO) tests/bench/run.sh $(BENCHES) $(BENCH_SCRIPTS)

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 check

# The single-process search and the commands around it under valgrind.
valgrind: $(TREVO)
	@tests/run_valgrind.sh $(TREVO)

# ---- fuzzing (clang + libFuzzer) ---------------------------------------
# Every parser has a target (tests/fuzz/fuzz_*.c, seeds in tests/fuzz/corpus/).
# The libraries are compiled once with the fuzzer's coverage; no MPI: worker/
# contributes its codec (msg.c) and worker.c (the config reads init_net through it), master/
# only its config (config.c, config_keys.c).
FUZZ_BUILD = $(BUILD)/fuzz
FUZZ_OPT = -O1
FUZZ_FLAGS = -std=c11 $(FUZZ_OPT) -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
             -ffp-contract=off -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L
FUZZ_INC = -Icli $(INC_MASTER)
FUZZ_LIBSRC = $(TV_SRC) $(GENOME_SRC) $(NN_SRC) $(DATA_SRC) $(TASKS_SRC) worker/msg.c worker/worker.c master/config.c \
              master/config_keys.c \
              master/state.c master/pop.c cli/row.c cli/conv_spec.c cli/cuba_file.c
FUZZ_OBJ = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_LIBSRC))
FUZZERS = $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRC))
.SECONDARY: $(FUZZ_OBJ)
# The float kernels, every SIMD target and block width inlined, take clang
# minutes at -O1 with the sanitizers (stepb.c: 206 s against 22 s at -O0);
# no fuzzer runs them for speed.
$(FUZZ_BUILD)/obj/nn/stepb.o $(FUZZ_BUILD)/obj/nn/step1.o $(FUZZ_BUILD)/obj/nn/train/train_kern.o: \
    FUZZ_OPT = -O0
$(FUZZ_BUILD)/obj/%.o: %.c $(H_ALL)
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_INC) -c $< -o $@
$(FUZZ_BUILD)/%: tests/fuzz/%.c $(FUZZ_OBJ) $(H_ALL)
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_INC) -o $@ $< $(FUZZ_OBJ) -lmsgpackc -linih -lz -lm

fuzz:
	@$(MAKE) --no-print-directory $(PARALLEL) $(FUZZERS)
	@FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZERS)

# ---- the engine's code that the C export writes (nn/deploy/export.c) ------
# The int8 arithmetic: export.c writes out the text of nn/deploy/quant_arith.h,
# the header the engine compiles, embedded by this rule as one C string per line
# (quant_arith.h says why). The activations: nn/act.def, included by act.c and
# export.c. Their objects (normal, PIC, fuzz) depend on these like on a header.
GEN = $(BUILD)/gen
INC_NN += -I$(GEN)
EXPORT_OBJ = $(call obj,nn/deploy/export.c) $(BUILD)/pic/nn/deploy/export.o \
             $(FUZZ_BUILD)/obj/nn/deploy/export.o
$(EXPORT_OBJ): $(GEN)/quant_arith.inc
$(EXPORT_OBJ) $(call obj,nn/act.c) $(BUILD)/pic/nn/act.o $(FUZZ_BUILD)/obj/nn/act.o: nn/act.def
$(GEN)/quant_arith.inc: nn/deploy/quant_arith.h
	@mkdir -p $(@D)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/",/' $< >$@

# The version (one home: TREVO_VERSION below), stored with every run, and the
# git commit of a build from a checkout (`trevo version`; "" otherwise, and
# "-dirty" after it when the tree has changes), rewritten only when it
# changes, so that only main.c follows the commit.
$(GEN)/version.h: Makefile
	@mkdir -p $(@D)
	printf '#define TREVO_VERSION "%s"\n' '$(TREVO_VERSION)' >$@
$(GEN)/commit.h: FORCE
	@mkdir -p $(@D)
	@c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || \
	    c=$$c-dirty; }; printf '#define TREVO_COMMIT "%s"\n' "$$c" >$@.new; \
	    cmp -s $@.new $@ || mv $@.new $@; rm -f $@.new
$(call obj,cli/main.c): $(GEN)/commit.h $(GEN)/version.h
$(call obj,master/run.c) $(FUZZ_BUILD)/obj/master/run.o: $(GEN)/version.h
.PHONY: FORCE
FORCE:

# ---- formatting --------------------------------------------------------
FORMAT_FILES = $(wildcard tv/*.[ch] genome/*.[ch] $(addsuffix /*.[ch],$(NN_DIRS)) data/*.[ch] store/*.[ch] \
               tasks/*.[ch] worker/*.[ch] master/*.[ch] cli/*.[ch] tests/*.[ch] tests/*/*.[ch])
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES) && echo "format-check: ok"

clean:
	rm -rf build

# ---- the library, `make install`, `make uninstall` -----------------------
# libtrevo (static and shared) holds what a program or a task plugin links
# with: genome/, nn/, tasks/ and data/ (data sets). Not the
# store (SQLite) nor master/ and worker/ (MPI): a program reads a run's
# champion from the file `trevo best` writes. Its objects are compiled again
# with -fPIC under $(BUILD)/pic/, so build/trevo's own objects do not change.
# `make install PREFIX=/usr DESTDIR=/tmp/stage` installs into /tmp/stage/usr
# and lists the directories it had to make in share/trevo/made-dirs;
# `make uninstall` (same PREFIX and DESTDIR) removes exactly what install
# wrote, and those directories if they are empty, so the prefix is left as
# it was.
PREFIX ?= /usr/local
DESTDIR ?=
TREVO_VERSION = 0.1.0
TREVO_SOVERSION = 0
LIBTREVO_SRC = $(TV_SRC) $(GENOME_SRC) $(NN_SRC) $(TASKS_SRC) $(wildcard data/*.c)
LIBTREVO_HDR = $(wildcard tv/tv.h genome/genome.h nn/nn.h nn/spike/spike.h nn/train/train.h \
                          nn/train/sparsify.h \
                          tasks/task.h tasks/plugin.h tasks/sha256.h data/data.h)
LIBTREVO_LIBS = -lmsgpackc -lm $(if $(wildcard data/*.c),-lz)
LIBTREVO_A = $(BUILD)/libtrevo.a
LIBTREVO_SO = $(BUILD)/libtrevo.so.$(TREVO_SOVERSION)
LIBTREVO_OBJ = $(patsubst %.c,$(BUILD)/pic/%.o,$(LIBTREVO_SRC))
# Every file install writes, and the directories it may make (parents first).
INSTALL_FILES = bin/trevo $(addprefix include/trevo/,$(notdir $(LIBTREVO_HDR))) lib/libtrevo.a \
                lib/libtrevo.so.$(TREVO_SOVERSION) lib/libtrevo.so lib/pkgconfig/trevo.pc \
                share/man/man1/trevo.1 share/trevo/made-dirs
INSTALL_DIRS = . bin include include/trevo lib lib/pkgconfig share share/man share/man/man1 \
               share/trevo
.PHONY: lib install uninstall

lib: $(LIBTREVO_A) $(LIBTREVO_SO)
$(BUILD)/pic/%.o: %.c $(H_TASKS) $(wildcard data/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -fPIC $(PIC_INC_$(firstword $(subst /, ,$*))) -c $< -o $@
$(LIBTREVO_A): $(LIBTREVO_OBJ)
$(LIBTREVO_SO): $(LIBTREVO_OBJ)
	$(CC) -shared -Wl,-soname,libtrevo.so.$(TREVO_SOVERSION) -Wl,-z,defs $(LDFLAGS) -o $@ $^ \
	    $(LIBTREVO_LIBS)

install: $(TREVO) lib
	@set -e; d="$(DESTDIR)$(PREFIX)"; made=; \
	for s in $(INSTALL_DIRS); do [ -d "$$d/$$s" ] || made="$$made $$s"; done; \
	install -d $(addprefix "$$d"/,$(INSTALL_DIRS)); \
	install -m 755 $(TREVO) "$$d/bin/trevo"; \
	install -m 644 $(LIBTREVO_HDR) "$$d/include/trevo/"; \
	install -m 644 $(LIBTREVO_A) "$$d/lib/libtrevo.a"; \
	install -m 755 $(LIBTREVO_SO) "$$d/lib/libtrevo.so.$(TREVO_SOVERSION)"; \
	ln -sf libtrevo.so.$(TREVO_SOVERSION) "$$d/lib/libtrevo.so"; \
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TREVO_VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(LIBTREVO_LIBS)|' trevo.pc.in >"$$d/lib/pkgconfig/trevo.pc"; \
	install -m 644 docs/trevo.1 "$$d/share/man/man1/trevo.1"; \
	for s in $$made; do echo "$$s"; done >>"$$d/share/trevo/made-dirs"; \
	echo "make install: trevo, its headers, libtrevo, trevo.pc and trevo.1 in $$d"

uninstall:
	@d="$(DESTDIR)$(PREFIX)"; dirs=$$(tac "$$d/share/trevo/made-dirs" 2>/dev/null); \
	for f in $(INSTALL_FILES); do rm -f "$$d/$$f"; done; \
	for s in $$dirs; do p="$$d/$$s"; rmdir "$${p%/.}" 2>/dev/null || true; done; \
	echo "make uninstall: trevo's files removed from $$d"
