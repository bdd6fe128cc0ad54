# gpushim - a GPU memory profiler.
#
#   make               build/libgpushim.so and build/gpushim
#   make test          every test with gcc, under AddressSanitizer and UBSan, and with clang;
#                      the multi-threaded ones under valgrind's memcheck
#   make check         every test, once (BUILD=dir SAN=1 for a sanitizer build); built,
#                      then run, with a job per CPU (JOBS=n to choose)
#   make layering      the layers' rules (tests/layering/check_layers.py), part of check
#   make check-tsan    the multi-threaded tests under ThreadSanitizer (build/tsan)
#   make check-valgrind  the multi-threaded tests under valgrind's memcheck
#   make demo          a simulated training job under the shim, then its report
#   make demo-python   examples/pytorch_leak.py's loop without a GPU (examples/sim_torch)
#   make bench         recording and analysis cost, side by side with heaptrack
#   make bench-python  what recording Python frames costs per allocation, GIL held and released
#   make fuzz          libFuzzer over the trace reader and every export (clang;
#                      FUZZ_SECONDS per target, default 60)
#   make fuzz-regress  each fuzz target once over its seed corpus and its crashes
#   make install       PREFIX=/usr/local (bin/gpushim, lib/libgpushim.so,
#                      lib/gpushim/python/gpushim: the Python module)
#
# Builds with gcc or clang (make CC=clang). Needs zlib and elfutils' libdw;
# tests need Criterion and python3, and go (go tool pprof) and chromium (the HTML
# export's rendering test) where installed: make test installs them. No CUDA
# headers or libraries are needed.

CC ?= cc
BUILD ?= build
PREFIX ?= /usr/local
SAN ?=
# jobs for the builds of check, test and demo: one per CPU
ifndef JOBS
JOBS := $(shell nproc 2>/dev/null || echo 1)
endif

WARN := -Wall -Wextra -Werror
ifeq ($(SAN),1)
# -O1, as AddressSanitizer's documentation builds: a fifth less time to
# build than -O2, and the build was most of make test's sanitized pass
CFLAGS ?= -O1 -g
endif
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -Iinclude -I. -MMD -MP
LDFLAGS ?=
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ALL_CFLAGS += $(SANFLAGS)
LDFLAGS += $(SANFLAGS)
endif
# ThreadSanitizer (make check-tsan): the shim, the simulated driver and the programs.
ifeq ($(TSAN),1)
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
ALL_CFLAGS += $(SANFLAGS)
LDFLAGS += $(SANFLAGS)
endif

# python3's headers (python3-dev) and extension suffix: test_pylayout.c
# compares the written-in layouts with them; examples/sim_torch's extension.
PY_INCLUDE := $(shell python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_EXT_SUFFIX := $(shell python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
SIMTENSOR := $(BUILD)/examples/python/simtensor$(PY_EXT_SUFFIX)

# `make` alone builds the shim and the analyzer: named here, before the rules
# below generate the layers' archives, the first of which would otherwise be
# make's default goal.
.DEFAULT_GOAL := all

# ---- the layers: a folder each, built as a static archive each ----
# From the bottom (docs/architecture.md "The layers"): the layers both sides
# share, then each side's. A layer's archive holds the objects of its folder.
SHARED_LAYERS := analyzer/util analyzer/trace analyzer/model
SHIM_LAYERS := shim/base shim/file shim/bound shim/writer shim/record shim/hooks shim/entry
ANALYZER_LAYERS := analyzer/read analyzer/symbols analyzer/whatif analyzer/findings analyzer/report \
                   analyzer/export analyzer/cmd
# $(call lib,LAYERS,VARIANT): their archives, in the order given; VARIANT
# "pic/" for objects that go into libgpushim.so, "" for the rest.
lib = $(foreach l,$(1),$(BUILD)/lib/$(2)$(subst /,-,$(l)).a)
define layer_archive
$(call lib,$(1),$(2)): $(patsubst %.c,$(BUILD)/obj/$(2)%.o,$(wildcard $(1)/*.c))
	@mkdir -p $$(@D)
	rm -f $$@ && $(AR) rcs $$@ $$^
endef
$(foreach l,$(SHARED_LAYERS) $(SHIM_LAYERS),$(eval $(call layer_archive,$(l),pic/)))
$(foreach l,$(SHARED_LAYERS) $(SHIM_LAYERS) $(ANALYZER_LAYERS),$(eval $(call layer_archive,$(l),)))

# What links where, a line each, the top layer first: the linker reads an
# archive once, in order, so a call up a layer does not link. The shim's own
# layers go in whole (their hooks are called from outside, not from below);
# of the shared layers, only what the shim calls.
SHIM_LIBS := $(call lib,shim/entry shim/hooks shim/record shim/writer shim/bound shim/file shim/base,pic/)
SHIM_SHARED_LIBS := $(call lib,analyzer/model analyzer/trace analyzer/util,pic/)
ANALYZER_LIBS := $(call lib,analyzer/cmd analyzer/export analyzer/report analyzer/findings \
                   analyzer/whatif analyzer/symbols analyzer/read analyzer/model analyzer/trace analyzer/util,)
# Unit tests: the analyzer's layers and the shim's pure ones (built without -fPIC).
UNIT_LIBS := $(call lib,analyzer/cmd analyzer/export analyzer/report analyzer/findings \
               analyzer/whatif analyzer/symbols analyzer/read shim/record shim/file shim/base analyzer/model \
               analyzer/trace analyzer/util,)

ANALYZER_SRC := $(wildcard $(addsuffix /*.c,$(SHARED_LAYERS) $(ANALYZER_LAYERS))) analyzer/main.c \
                analyzer/nomem_wrap.c
PROG_SRC := $(wildcard tests/progs/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
PROGS := $(PROG_SRC:tests/progs/%.c=$(BUILD)/progs/%)
SIM := $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libcudart.so.13

.PHONY: all deps test-deps test check check-build check-run check-tsan check-valgrind unit integration layering demo demo-python \
        bench bench-python \
        install uninstall clean sim progs fuzz fuzz-build fuzz-regress fuzz-corpus
all: $(BUILD)/libgpushim.so $(BUILD)/gpushim

# initial-exec TLS: the shim's few thread-local bytes are read without a call
# to __tls_get_addr on every event (the loader keeps room for them even when
# PyTorch dlopens the shim as its allocator).
$(BUILD)/obj/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(NOASAN) -fPIC -ftls-model=initial-exec -fvisibility=hidden -c $< -o $@

# The dlsym path runs inside a sanitizer's own start-up, before its shadow
# memory exists (see shim/entry/dlsym_hook.c): never built with AddressSanitizer.
ifeq ($(SAN),1)
$(BUILD)/obj/pic/shim/entry/dlsym_hook.o $(BUILD)/obj/pic/shim/base/real.o: NOASAN := -fno-sanitize=address
endif
ifeq ($(TSAN),1)
$(BUILD)/obj/pic/shim/entry/dlsym_hook.o $(BUILD)/obj/pic/shim/base/real.o: NOASAN := -fno-sanitize=thread
endif

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libgpushim.so: $(SHIM_LIBS) $(SHIM_SHARED_LIBS) shim/exports.map
	$(CC) -shared -o $@ -Wl,--whole-archive $(SHIM_LIBS) -Wl,--no-whole-archive $(SHIM_SHARED_LIBS) \
		$(LDFLAGS) -Wl,--version-script=shim/exports.map \
		-Wl,-z,defs -Wl,-soname,libgpushim.so -lz -ldl -lpthread

# Every failed allocation of the analyzer's is counted (analyzer/nomem_wrap.c).
comma := ,
NOMEM_WRAP := $(addprefix -Wl$(comma)--wrap=,malloc calloc realloc strdup strndup aligned_alloc)
$(BUILD)/gpushim: $(BUILD)/obj/analyzer/main.o $(BUILD)/obj/analyzer/nomem_wrap.o $(ANALYZER_LIBS)
	$(CC) -o $@ $(BUILD)/obj/analyzer/main.o $(BUILD)/obj/analyzer/nomem_wrap.o $(ANALYZER_LIBS) \
		$(NOMEM_WRAP) $(LDFLAGS) -ldw -lelf -ldeflate -lz -lm

# ---- the simulated CUDA driver and runtime (tests/sim) ----
SIM_RUNTIME_SRC := $(wildcard tests/sim/runtime/*.c)
sim: $(SIM)
$(BUILD)/sim/libcuda.so.1: $(patsubst %.c,$(BUILD)/obj/pic/%.o,$(wildcard tests/sim/driver/*.c))
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ $(LDFLAGS) -Wl,-soname,libcuda.so.1 -ldl -lpthread
	ln -sf libcuda.so.1 $(BUILD)/sim/libcuda.so
$(BUILD)/sim/libcudart.so.13: $(patsubst %.c,$(BUILD)/obj/pic/%.o,$(SIM_RUNTIME_SRC)) tests/sim/runtime.map
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(filter %.o,$^) $(LDFLAGS) -Wl,-soname,libcudart.so.13 -Wl,-rpath,'$$ORIGIN' \
		-Wl,--version-script=tests/sim/runtime.map -ldl -lpthread
	ln -sf libcudart.so.13 $(BUILD)/sim/libcudart.so

# ---- programs the integration tests run under the shim ----
# drv_*: linked with the driver (-lcuda); rt_*: with the runtime (-lcudart);
# static_*: linked statically; the rest link neither and dlopen what they use.
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
NVCC_PROGS := $(if $(NVCC),$(BUILD)/progs/real_cudart $(BUILD)/examples/cuda_leak)
# NVIDIA's NVTX v3 headers, where the toolkit installed them (tests/progs/nvtx/).
NVTX_DIR := $(patsubst %/nvtx3/nvToolsExt.h,%,$(firstword $(wildcard /usr/local/cuda/include/nvtx3/nvToolsExt.h)))
NVTX_PROGS := $(if $(NVTX_DIR),$(BUILD)/progs/drv_nvtx)
# Stubs named like the frameworks' CUDA libraries (tests/progs/drv_framework.c) and
# cuBLAS (tests/progs/drv_roles.c: a workspace).
FRAMEWORK_STUBS := $(addprefix $(BUILD)/progs/fw/,libc10_cuda.so xla_extension.so libtensorflow_framework.so.2 \
                   libcublasLt.so.13)
progs: $(PROGS) $(BUILD)/progs/libgsplugin.so $(BUILD)/progs/libgsrtplugin.so \
	$(BUILD)/progs/libgsnext.so $(NVCC_PROGS) $(NVTX_PROGS) $(BUILD)/examples/sim_training $(BUILD)/bench/bench_workload \
	$(BUILD)/bench/bench_whatif \
	$(FRAMEWORK_STUBS) $(if $(wildcard $(PY_INCLUDE)/Python.h),$(SIMTENSOR))
$(FRAMEWORK_STUBS): tests/progs/plugin/framework_stub.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS) -L$(BUILD)/sim -lcuda
$(BUILD)/progs/libgsplugin.so: tests/progs/plugin/gsplugin.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -fPIC -shared -o $@ $< $(LDFLAGS) -L$(BUILD)/sim -lcuda
$(BUILD)/progs/libgsnext.so: tests/progs/plugin/gsnext.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $< $(LDFLAGS)
$(BUILD)/progs/libgsrtplugin.so: tests/progs/plugin/gsrtplugin.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -fPIC -shared -o $@ $< $(LDFLAGS) -L$(BUILD)/sim \
		-Wl,-rpath,'$$ORIGIN/../sim' -lcudart
# NVIDIA's real runtime, where the toolkit is installed (never sanitized: nvcc's own flags).
$(BUILD)/examples/cuda_leak: examples/cuda_leak.cu
	@mkdir -p $(@D)
	$(NVCC) -cudart shared -o $@ $<
$(BUILD)/progs/real_cudart: tests/progs/real_cudart.cu
	@mkdir -p $(@D)
	$(NVCC) -cudart shared -o $@ $<
PROG_LINK = $(if $(filter drv_%,$(notdir $@)),-lcuda,$(if $(filter rt_%,$(notdir $@)),-lcudart))
$(BUILD)/progs/static_%: tests/progs/static_%.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize%,$(ALL_CFLAGS)) -static -o $@ $<
$(BUILD)/progs/%: tests/progs/%.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -o $@ $< $(LDFLAGS) -L$(BUILD)/sim \
		-Wl,-rpath,'$$ORIGIN/../sim' $(PROG_LINK) -ldl -lpthread
$(BUILD)/progs/drv_nvtx: tests/progs/nvtx/drv_nvtx.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -isystem $(NVTX_DIR) -o $@ $< $(LDFLAGS) \
		-L$(BUILD)/sim -Wl,-rpath,'$$ORIGIN/../sim' -lcuda -ldl -lpthread
# NCCL links the CUDA runtime statically: dl_nccl_runtime has the simulated
# one inside it, and reaches the driver only through it.
$(BUILD)/progs/dl_nccl_runtime: tests/progs/dl_nccl_runtime.c $(SIM_RUNTIME_SRC) \
		tests/sim/runtime/runtime.h $(SIM)
	@mkdir -p $(@D)
	$(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -O1 -fno-omit-frame-pointer -o $@ \
		tests/progs/dl_nccl_runtime.c $(SIM_RUNTIME_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../sim' \
		-ldl -lpthread
$(BUILD)/examples/sim_training: examples/sim_training.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 -o $@ $< $(LDFLAGS) -L$(BUILD)/sim -Wl,-rpath,'$$ORIGIN/../sim' -lcudart
$(BUILD)/bench/bench_workload: tests/bench/bench_workload.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O2 -fno-inline -o $@ $< $(LDFLAGS) -L$(BUILD)/sim \
		-Wl,-rpath,'$$ORIGIN/../sim' -lcuda
# The model of PyTorch's caching allocator alone, per request (bench.py's whatif rows).
WHATIF_BENCH_LIBS := $(call lib,analyzer/whatif analyzer/util,)
$(BUILD)/bench/bench_whatif: $(BUILD)/obj/tests/bench/bench_whatif.o $(WHATIF_BENCH_LIBS)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(WHATIF_BENCH_LIBS) $(LDFLAGS) -lm

# ---- tests ----
ifneq ($(wildcard $(PY_INCLUDE)/internal/pycore_frame.h),)
$(BUILD)/obj/tests/unit/test_pylayout.o: ALL_CFLAGS += -isystem $(PY_INCLUDE) -DGS_PYTHON_HEADERS
endif

$(BUILD)/unit_tests: $(UNIT_OBJ) $(UNIT_LIBS)
	$(CC) -o $@ $(UNIT_OBJ) $(UNIT_LIBS) $(LDFLAGS) -lcriterion -ldw -lelf -ldeflate -lz -lm -lpthread

# The project's CUDA declarations against the toolkit's, where it is installed.
CUDA_H := $(firstword $(wildcard /usr/local/cuda/include/cuda.h /usr/include/cuda.h))
$(BUILD)/abi_check.ok: tests/abi/check_cuda_abi.c include/gpushim_cuda.h
	@mkdir -p $(@D)
	@if [ -n "$(CUDA_H)" ]; then \
	    $(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -I$(dir $(CUDA_H)) -fsyntax-only tests/abi/check_cuda_abi.c && \
	    echo "abi: include/gpushim_cuda.h matches $(CUDA_H)"; \
	else echo "abi: SKIPPED (no cuda.h on this machine)"; fi
	@touch $@

# A sanitizer's report in a test's process (a leak, found as it exits) fails
# the run: Criterion counts the test as passed by then.
unit: $(BUILD)/unit_tests
	@$(BUILD)/unit_tests 2>$(BUILD)/unit.stderr; rc=$$?; cat $(BUILD)/unit.stderr >&2; \
	if grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error:" $(BUILD)/unit.stderr; \
	then echo "unit: a sanitizer reported in a test (above)" >&2; exit 1; fi; exit $$rc

# Every stack of the fast unwinder compared with libunwind's (GPUSHIM_UNWIND=check),
# but in the sanitized build, whose runs record with the fast unwinder as users do.
# AGAIN=1: a further pass of make test (run_tests.py --again)
integration: all progs
	python3 tests/integration/run_tests.py --build $(BUILD) --jobs $(JOBS) \
		$(if $(filter 1,$(SAN)),--sanitized,--unwind-check) $(if $(filter 1,$(AGAIN)),--again)

# Includes, calls and cycles between files, what libgpushim.so holds: every
# one goes down a layer (docs/architecture.md "The layers").
layering: all sim
	python3 tests/layering/check_layers.py --build $(BUILD)

# make check builds everything its tests run with JOBS jobs, then runs the
# unit tests (Criterion: a test a CPU) and the integration tests (JOBS
# modules at once, each module's tests one at a time).
check-build: all progs sim $(BUILD)/unit_tests $(BUILD)/abi_check.ok
check:
	$(MAKE) -j$(JOBS) check-build
	$(MAKE) -j1 check-run
check-run: layering $(BUILD)/abi_check.ok unit integration

deps:
	@sh scripts/install-deps.sh
# and what only the tests use (scripts/install-deps.sh says what)
test-deps:
	@sh scripts/install-deps.sh test
	@sh scripts/fetch-viewers.sh

# The multi-threaded tests (threads, forks, crashes; the analyzer's reading
# ahead) under ThreadSanitizer: the shim, the simulated driver, the programs
# and the analyzer built with -fsanitize=thread in build/tsan; any report
# fails the test.
STRESS_TESTS := -k churn -k threads_exact -k sixteen_threads -k fork_children -k fork_without \
                -k failed_execs_while_threads
TSAN_TESTS := $(STRESS_TESTS) -k crash_control -k crash_sigkill -k crash_underscore \
              -k crash_exit_group -k crash_killed -k read_ahead \
              -k ranges_marks_and_regions_from_nvtx -k ranges_through_the_api
check-tsan:
	$(MAKE) -j$(JOBS) TSAN=1 BUILD=build/tsan all progs
	python3 tests/integration/run_tests.py --build build/tsan --tsan $(TSAN_TESTS)

# The same programs under valgrind's memcheck, the shim preloaded (this build),
# but drv_execrace: its hundreds of failed execs while threads run take valgrind
# past the test's two minutes.
VALGRIND_TESTS := -k churn -k threads_exact -k sixteen_threads -k fork_children -k fork_without
check-valgrind:
	$(MAKE) -j$(JOBS) all progs
	python3 tests/integration/run_tests.py --build $(BUILD) --jobs $(JOBS) --valgrind memcheck \
		$(VALGRIND_TESTS)

# gcc, then gcc with AddressSanitizer and UBSan, then clang where installed,
# then valgrind; each pass says how long it took, its build included.
timed = s=$$(date +%s); $(1) || exit; echo "test: the $(2) pass took $$(( $$(date +%s) - s )) s"
test: test-deps
	@$(call timed,$(MAKE) check,gcc)
	@$(call timed,$(MAKE) check SAN=1 BUILD=build/san AGAIN=1,ASan and UBSan)
	@if command -v clang >/dev/null; then $(call timed,$(MAKE) check CC=clang BUILD=build/clang AGAIN=1,clang); \
	else echo "clang: SKIPPED (not installed)"; fi
	@$(call timed,$(MAKE) check-valgrind,valgrind)

# ---- fuzzing (tests/fuzz): clang's libFuzzer, AddressSanitizer and UBSan ----
# One harness per target; the analyzer (less main.c) built once for them all.
FUZZ_CC ?= clang
FUZZ_BUILD ?= $(BUILD)/fuzz
# One spelling for a folder inside the tree, as its dependency files name its
# objects: given as an absolute path (test_fuzz_corpus.py), an object whose
# header changed would otherwise not be rebuilt.
override FUZZ_BUILD := $(patsubst $(CURDIR)/%,%,$(abspath $(FUZZ_BUILD)))
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := report export recover multi symcache symbols
FUZZ_CFLAGS := -std=gnu11 $(WARN) -O1 -g -Iinclude -I. -MMD -MP \
               -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_OBJ := $(filter-out $(FUZZ_BUILD)/obj/analyzer/main.o $(FUZZ_BUILD)/obj/analyzer/nomem_wrap.o,$(ANALYZER_SRC:%.c=$(FUZZ_BUILD)/obj/%.o))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
# seconds one input may take before it counts as a hang
FUZZ_TIMEOUT ?= 10
FUZZ_OPTS := -rss_limit_mb=2048 -timeout=$(FUZZ_TIMEOUT) -close_fd_mask=2
# leaks of libdw's own on malformed DWARF (tests/fuzz/lsan.supp says which)
export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/fuzz/lsan.supp

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_file.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(filter-out -MMD -MP,$(FUZZ_CFLAGS)) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) \
		-ldw -lelf -ldeflate -lz -lm
fuzz-build: $(FUZZ_BINS)
.SECONDARY: $(FUZZ_OBJ)

# Each target for FUZZ_SECONDS, from its seeds (tests/fuzz/corpus/T) and what
# earlier runs found ($(FUZZ_BUILD)/corpus/T); a crash is left in
# $(FUZZ_BUILD)/crashes/T/ and stops it (copy it to tests/fuzz/crashes/T/).
# One target at a time; `make -j2 fuzz` runs two at once. Then the total.
fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)
	@cat $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%.runs) | \
	    awk '{n += $$1} END {print "fuzz: " n " executions in all, no crash, hang or sanitizer report"}'

fuzz-run-%: $(FUZZ_BUILD)/fuzz_%
	@mkdir -p $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/crashes/$*
	@rm -f $(FUZZ_BUILD)/fuzz_$*.runs
	@$(FUZZ_BUILD)/fuzz_$* $(FUZZ_OPTS) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/crashes/$*/ \
	    $(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* >$(FUZZ_BUILD)/fuzz_$*.log 2>&1; \
	rc=$$?; \
	runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/fuzz_$*.log); \
	echo "fuzz $*: $${runs:-?} executions in $(FUZZ_SECONDS) s, exit $$rc"; \
	if [ $$rc -ne 0 ]; then tail -n 40 $(FUZZ_BUILD)/fuzz_$*.log; exit 1; fi; \
	echo "$${runs:-0}" >$(FUZZ_BUILD)/fuzz_$*.runs

# Each target's inputs replayed without libFuzzer (tests/fuzz/replay_main.c),
# built in this build's way (its compiler, its sanitizers): make check
# replays the seeds and the crashes with them in every pass
# (tests/integration/test_fuzz_corpus.py).
FUZZ_REPLAYS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz-replay/replay_%)
$(BUILD)/fuzz-replay/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c tests/fuzz/fuzz_file.h \
		$(ANALYZER_LIBS)
	@mkdir -p $(@D)
	$(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -o $@ $< tests/fuzz/replay_main.c $(ANALYZER_LIBS) \
		$(LDFLAGS) -ldw -lelf -ldeflate -lz -lm -lpthread
check-build: $(FUZZ_REPLAYS)

# Every seed and every crash found so far, once through its target.
fuzz-regress: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    set -- $$(ls -d tests/fuzz/corpus/$$t/* tests/fuzz/crashes/$$t/* 2>/dev/null); \
	    $(FUZZ_BUILD)/fuzz_$$t $(FUZZ_OPTS) "$$@" >$(FUZZ_BUILD)/regress_$$t.log 2>&1 || \
	        { tail -n 40 $(FUZZ_BUILD)/regress_$$t.log; exit 1; }; \
	    echo "fuzz-regress $$t: $$# inputs, no crash"; \
	done

# The seed corpus again, from the test programs run under the shim.
fuzz-corpus: all progs
	python3 tests/fuzz/make_corpus.py --build $(BUILD)

# ---- for people ----
demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/examples/sim_training
	@sh examples/run_demo.sh $(BUILD)

# The PyTorch leak example without a GPU (examples/sim_torch): its tensors
# are a C extension built against python3's headers (python3-dev).
$(SIMTENSOR): examples/sim_torch/simtensor.c $(SIM)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -isystem $(PY_INCLUDE) -fPIC -shared -o $@ $< $(LDFLAGS) -L$(BUILD)/sim \
		-Wl,-rpath,'$$ORIGIN/../../sim' -lcuda
demo-python: all
	@sh scripts/install-deps.sh python
	@$(MAKE) --no-print-directory $(SIMTENSOR)
	@sh examples/run_demo_python.sh $(BUILD)

bench: all $(BUILD)/bench/bench_workload $(BUILD)/bench/bench_whatif
	python3 tests/bench/bench.py --build $(BUILD)
	python3 tests/bench/bench.py --build $(BUILD) --frames 100 --big-events 0 --whatif-requests 0
	python3 tests/bench/bench_sites.py --build $(BUILD)

bench-python: all sim
	python3 tests/bench/bench_python.py --build $(BUILD)
	python3 tests/bench/bench_handoff.py --build $(BUILD)

# The Python module goes where PYTHONPATH can name it: PREFIX/lib/gpushim/python.
PYTHON_DIR := $(PREFIX)/lib/gpushim/python
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PYTHON_DIR)/gpushim
	install -m 755 $(BUILD)/gpushim $(DESTDIR)$(PREFIX)/bin/gpushim
	install -m 644 $(BUILD)/libgpushim.so $(DESTDIR)$(PREFIX)/lib/libgpushim.so
	install -m 644 python/gpushim/*.py $(DESTDIR)$(PYTHON_DIR)/gpushim/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/gpushim $(DESTDIR)$(PREFIX)/lib/libgpushim.so
	rm -rf $(DESTDIR)$(PYTHON_DIR)/gpushim

clean:
	rm -rf build

# What each object and program was built from (gcc -MMD): a header changed
# rebuilds them (the programs' own, progs.h, too).
-include $(shell find $(BUILD)/obj $(BUILD)/progs $(BUILD)/examples $(BUILD)/bench $(BUILD)/sim \
	$(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
