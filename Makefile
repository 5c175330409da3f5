# SPDX-License-Identifier: GPL-2.0-only
#
# afmalloc user-facing targets. kbuild itself reads ./Kbuild, both in the
# kernel tree (overlaid as mm/afmalloc/) and for the out-of-tree module.
#
#   make check     set up, checkpatch, docs, KUnit on UML (beside the debug
#                  kernel's build), in-VM tests on the debug kernel (its
#                  KUnit suites with 8 vCPUs, memory hot-remove) and zswap
#                  on Debian's kernel (CI runs this)
#   make vm-test-smp    the KUnit suites in the debug guest with SMP_CPUS (8)
#                  vCPUs, more than the host's cores (make check's KUnit
#                  step in the debug guest)
#   make vm-test-offline  memory blocks holding zram's and zswap's pages
#                  taken offline (the debug guest with ZONE_MOVABLE; in make
#                  check)
#   make vm-test-offline-kasan  the same for afmalloc/zspage on the KASAN
#                  kernel with 4 vCPUs
#   make vm-test-cma  a CMA area holding zram's and zswap's pages allocated
#                  whole (the debug guest with cma=)
#   make vm-test-kasan  make check's in-VM tests on the debug kernel with KASAN
#   make vm-test-kasan-smp  vm-test-smp on the KASAN kernel (SMP_CPUS vCPUs)
#   make kunit-arm64    the KUnit suites on an emulated arm64 kernel (2 CPUs;
#                  PAGES=16K: 16 KiB pages)
#   make demo      set up, build, boot, untar/remove benchmark, print the table
#   make bench     the benchmark with options: DATASET=quick|full ROUNDS=N RUNS=N
#                  ALLOC=zsmalloc,... COMP=lz4|zstd OUT=dir BOOT_ARGS=...
#   make bench-arm64  the benchmark (DATASET, ROUNDS, RUNS, COMP, OUT as for
#                  make bench) on an emulated arm64 guest with 16 KiB pages
#                  (PAGES=4K: 4 KiB), zsmalloc against afmalloc/zspage
#   make bench-speed  in-kernel ops/s of every allocator (bench/speed/run.sh;
#                  WORKING_SET=65536: objects a thread beyond the L2 and most L3s)
#   make bench-speed-uml  the same natively on the host's CPU (UML, 1 thread;
#                  WORKING_SET as for bench-speed)
#   make bench-speed-arm64  the same on an emulated arm64 kernel with 16 KiB
#                  pages (PAGES=4K: 4 KiB), with the memory each pool holds
#   make bench-fio / bench-zswap-time  fio on zram, zswap wall time
#   make bench-churn  swap churn on zram or zswap (CHURN_TARGET), every page checked
#   make bench-smallpool  a small zram device written from every vCPU of an 8-vCPU guest
#   make vm-test   the in-VM tests on the lean guest kernel, quick dataset
#   make module    afmalloc.ko against KDIR (default: the running kernel)
#   make vm-test-stock  zswap on afmalloc.ko in the unmodified Debian 6.12 kernel
#   make vm-test-zero-race  zswap's stale entries behind zero pages (patches/0006)
#   make vm-test-cx16       the guest CPU's flags across cmpxchg16b (CX16_SECONDS=600)
#   make checkpatch  checkpatch.pl --strict on every C file, document and patch
#                  (in make check)
#   make docs      Documentation/mm/afmalloc.rst and the API's kernel-doc built
#                  with the kernel's htmldocs, no warning of ours (in make check)
#
# Caches live in $(AFMALLOC_CACHE) (default ~/.cache/afmalloc).

SHELL := /bin/bash
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
KDIR ?= /lib/modules/$(shell uname -r)/build
DATASET ?= quick
ROUNDS ?= 1
RUNS ?= 1
ALLOC ?= zsmalloc,zsmalloc+compact,afmalloc/slab,afmalloc/zspage
COMP ?= lz4
OUT ?=
BOOT_ARGS ?=
AFMALLOC_CACHE ?= $(HOME)/.cache/afmalloc
AFMALLOC_BUILD ?= $(AFMALLOC_CACHE)/build
# The debug guest kernel (scripts/build-guest.sh --debug) and how make check
# boots it: lockdep, DEBUG_VM, DEBUG_LIST, kmemleak, fault injection; its
# KASAN variant (--kasan), for make vm-test-kasan.
DEBUG_KDIR := $(AFMALLOC_BUILD)/guest-debug
KASAN_KDIR := $(AFMALLOC_BUILD)/guest-kasan
VM_DEBUG := $(TOP)/scripts/vm-run.sh --memory 1G
# What the targets below depend on for set-up: make check runs setup once,
# then its sub-makes with SETUP_DONE=1.
SETUP := $(if $(SETUP_DONE),,setup)
# Each step of make check is timed into this file (scripts/timed.sh).
TIMED := $(TOP)/scripts/timed.sh

.PHONY: all help setup source tree kunit kunit-arm64 guest guest-debug guest-kasan vm-test vm-inputs vm-test-zswap \
	vm-test-stock vm-test-debug vm-test-smp vm-test-offline vm-test-offline-kasan vm-test-cma vm-test-kasan vm-test-kasan-smp check timings-begin readme-check script-tests readme demo bench bench-speed bench-zswap bench-fio \
	bench-zswap-time bench-speed-uml bench-speed-arm64 bench-arm64 bench-churn bench-smallpool vm-test-churn vm-test-zero-race vm-test-cx16 results-collect module module-clean checkpatch docs

all: help

help:
	@sed -n '3,/^# Caches live/p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

setup:
	$(TIMED) setup $(TOP)/scripts/setup.sh

source:
	$(TOP)/scripts/kernel-source.sh

tree:
	$(TOP)/scripts/prepare-tree.sh

kunit: $(SETUP)
	$(TIMED) kunit $(TOP)/scripts/kunit.sh

# The same suites on an arm64 kernel (2 CPUs, 4 KiB pages; PAGES=16K: 16
# KiB pages) under QEMU's emulation, cross-compiled: not part of make check
# (its cold build and emulated run would not fit CI's budget beside the
# rest).
ARM64_PAGES := $(if $(filter 16K 16k,$(PAGES)),-16k)
kunit-arm64: $(SETUP)
	$(TIMED) kunit-arm64$(ARM64_PAGES) $(TOP)/scripts/kunit.sh --arm64$(ARM64_PAGES)

guest: $(SETUP)
	$(TIMED) guest-build $(TOP)/scripts/build-guest.sh

guest-debug: $(SETUP)
	$(TIMED) guest-debug-build $(TOP)/scripts/build-guest.sh --debug

guest-kasan: $(SETUP)
	$(TIMED) guest-kasan-build $(TOP)/scripts/build-guest.sh --kasan

vm-test: guest
	$(TIMED) vm-zram-integrity $(TOP)/scripts/vm-run.sh --memory 2G --timeout 1200 --append slab_nomerge \
		$(TOP)/tests/vm/zram-integrity.sh --dataset "$$($(TOP)/bench/dataset.sh quick)"
	$(TIMED) vm-zram-alloc $(TOP)/scripts/vm-run.sh --memory 2G --timeout 1800 --append slab_nomerge \
		$(TOP)/tests/vm/zram-alloc.sh --dataset "$$($(TOP)/bench/dataset.sh quick)" \
		--alloc zsmalloc,afmalloc/zspage
	$(TIMED) vm-zspage-migrate $(TOP)/scripts/vm-run.sh --memory 2G --timeout 900 --append slab_nomerge \
		$(TOP)/tests/vm/zspage-migrate.sh --size 96 --rounds 2
	$(TIMED) vm-fault-inject $(TOP)/scripts/vm-run.sh --memory 2G --timeout 1200 \
		--append "slab_nomerge page_owner=on" $(TOP)/tests/vm/fault-inject.sh
	$(TIMED) vm-bad-input $(TOP)/scripts/vm-run.sh --memory 1G --timeout 600 --append slab_nomerge \
		$(TOP)/tests/vm/bad-input.sh

# The in-VM tests on the debug kernel (what make check runs), in one boot
# (tests/vm/debug-suite.sh: KUnit suites with stress, zram integrity on
# afmalloc/zspage with the tiny dataset, fault injection, bad input, zswap,
# short swap churn on zram);
# the run fails on any splat in dmesg and ends with a kmemleak scan. Its
# timeout leaves room for slow hosts: with KASAN in that kernel, the suite
# took 878 s on one 2-core machine and 2086 s on another (2026-11-28; see
# bench/results/make-check-cold-d8aa6d4). vm-test-kasan runs the same suite on the
# KASAN variant (about twice as slow under TCG: not part of make check).
DEBUG_SUITE = --timeout 3600 --append "slab_nomerge page_owner=on" \
	$(TOP)/tests/vm/debug-suite.sh \
	--dataset "$$($(TOP)/bench/dataset.sh tiny)" \
	--zswap-load "$$($(TOP)/tests/vm/zswap-stock.sh --print-load)" \
	--churn-bin "$$($(TOP)/bench/churn/run.sh --print-bin)" \
	--zero-race-bin "$$($(TOP)/tests/vm/zswap-zero-race.sh --print-bin)"
# The suite's inputs, made first as a step of their own: a failure there
# is reported with its log, not lost inside the suite's command line.
vm-inputs:
	$(TIMED) vm-inputs bash -c 'set -e; $(TOP)/bench/dataset.sh tiny; \
		$(TOP)/tests/vm/zswap-stock.sh --print-load; $(TOP)/bench/churn/run.sh --print-bin; \
		$(TOP)/tests/vm/zswap-zero-race.sh --print-bin'

# make check's debug suite leaves its KUnit step to vm-test-smp (the same
# suites, more CPUs); KUNIT_HERE=1 runs it here too, on 2 vCPUs.
vm-test-debug: guest-debug vm-inputs
	$(TIMED) vm-debug-suite $(VM_DEBUG) --kernel $(DEBUG_KDIR) $(DEBUG_SUITE) --kunit-dir $(DEBUG_KDIR) \
		$(if $(KUNIT_HERE),,--skip kunit)

# The debug suite's KUnit step in a boot of its own, with more vCPUs than
# the host has cores (SMP_CPUS, default 8; under TCG any number boots): a
# pool of as many shards, the zspage stress with a worker bound to each
# CPU at first and then free to roam, so that every shard allocates and
# frees cross shards (make check runs it after the debug suite, which
# then skips its own KUnit step: the same time as before, more CPUs).
SMP_CPUS ?= 8
vm-test-smp: guest-debug vm-inputs
	$(TIMED) vm-smp-suite $(VM_DEBUG) --cpus $(SMP_CPUS) --kernel $(DEBUG_KDIR) $(DEBUG_SUITE) \
		--kunit-dir $(DEBUG_KDIR) --only kunit

# Memory hot-remove (tests/vm/memory-offline.sh): the debug guest booted
# with 384 MiB of its 1 GiB in ZONE_MOVABLE, where zram's and zswap's
# pages go first; the blocks holding them are taken offline, which
# migrates every page:
# afmalloc/zspage, then zsmalloc (the control) in a boot of its own, the
# blocks as fresh as for the first (make check runs it).
VM_OFFLINE = $(VM_DEBUG) --kernel $(DEBUG_KDIR) --timeout 1800 \
	--append "slab_nomerge page_owner=on movablecore=384M" $(TOP)/tests/vm/memory-offline.sh
vm-test-offline: guest-debug
	$(TIMED) vm-memory-offline $(VM_OFFLINE) --alloc afmalloc/zspage
	$(TIMED) vm-memory-offline-zsmalloc $(VM_OFFLINE) --alloc zsmalloc

# CMA (tests/vm/memory-offline.sh --cma): the debug guest booted with
# 512 MiB of its 1 GiB a CMA area, where movable pages go first while it
# holds more than half of the free memory; the area allocated whole
# through debugfs, as a driver's cma_alloc() would, which gives up where
# a page does not move (offlining retries until it does): afmalloc/zspage,
# then zsmalloc in a boot of its own.
VM_CMA = $(VM_DEBUG) --kernel $(DEBUG_KDIR) --timeout 1800 \
	--append "slab_nomerge page_owner=on cma=512M" $(TOP)/tests/vm/memory-offline.sh --cma
vm-test-cma: guest-debug
	$(TIMED) vm-cma $(VM_CMA) --alloc afmalloc/zspage
	$(TIMED) vm-cma-zsmalloc $(VM_CMA) --alloc zsmalloc

# vm-test-offline for afmalloc/zspage on the KASAN kernel with
# OFFLINE_CPUS vCPUs (outside make check, as vm-test-kasan): there the
# kernel's boot-time reservations reach into ZONE_MOVABLE, and the test
# leaves out the blocks they lie in.
OFFLINE_CPUS ?= 4
vm-test-offline-kasan: guest-kasan
	$(TIMED) vm-memory-offline-kasan $(VM_DEBUG) --kernel $(KASAN_KDIR) --cpus $(OFFLINE_CPUS) \
		--timeout 1800 --append "slab_nomerge page_owner=on movablecore=384M" \
		$(TOP)/tests/vm/memory-offline.sh --alloc afmalloc/zspage

vm-test-kasan: guest-kasan vm-inputs
	$(TIMED) vm-kasan-suite $(VM_DEBUG) --kernel $(KASAN_KDIR) $(DEBUG_SUITE) --kunit-dir $(KASAN_KDIR) --kasan

# vm-test-smp on the KASAN variant: the KUnit suites with SMP_CPUS vCPUs
# (outside make check, as vm-test-kasan).
vm-test-kasan-smp: guest-kasan vm-inputs
	$(TIMED) vm-kasan-smp-suite $(VM_DEBUG) --cpus $(SMP_CPUS) --kernel $(KASAN_KDIR) $(DEBUG_SUITE) \
		--kunit-dir $(KASAN_KDIR) --kasan --only kunit

# zswap's stale entries behind zero-filled pages (patches/0006): the
# project's lean kernel, zsmalloc and both afmalloc stores, 3 runs each of
# 200 zswap writebacks and zero-filled swap-outs (a few minutes under TCG).
# tests/vm/zswap-zero-race.sh --stock shows the bug on Debian's kernel.
vm-test-zero-race: guest
	$(TIMED) vm-zero-race $(TOP)/tests/vm/zswap-zero-race.sh \
		--zpool zsmalloc,afmalloc/zspage,afmalloc/slab

# The guest CPU (under TCG: QEMU's emulation of it) and the flags register
# across cmpxchg16b, the instruction SLUB's fast paths end in: user-space
# threads, no zram, zswap or afmalloc (README, "Data integrity: the
# emulator": QEMU 7.2 fails it). OUT=dir keeps the guest console.
CX16_SECONDS ?= 600
vm-test-cx16: guest
	$(TIMED) vm-cx16-flags $(TOP)/tests/vm/cx16-flags.sh --seconds $(CX16_SECONDS) \
		$(if $(OUT),--out $(OUT))

# zswap on afmalloc built into the project's kernel.
vm-test-zswap: guest
	$(TIMED) vm-zswap-own-kernel $(TOP)/tests/vm/zswap-stock.sh --own-kernel

# zswap on afmalloc.ko built against Debian's linux-headers, in Debian's kernel.
vm-test-stock: $(SETUP)
	$(TIMED) vm-zswap-stock-kernel $(TOP)/tests/vm/zswap-stock.sh

# The steps are timed into $(AFMALLOC_CACHE)/timings/check.tsv (the
# README's timing table is generated from a copy of it).
check: export AFMALLOC_TIMINGS = $(AFMALLOC_CACHE)/timings/check.tsv
# The UML KUnit build and run go beside the debug kernel's build
# (scripts/beside.sh: nice 19; its output is printed once the VM tests are
# done): a kernel build leaves CPU idle in its serial parts (configuration,
# links, the tree's unpacking). Cold on the project's machine, ccache in
# its default mode: 1201 s this way (0834c7f); 1269 s with KUnit beside the
# VM tests instead (5a531b6), which it slowed (debug suite 309 -> 607 s:
# the emulated guest loses more than nice 19 suggests).
# On failure the timing table and what each failed step said (timed.sh
# --failures) come last, so that a log cut to its end names the failure.
check: timings-begin readme-check script-tests setup checkpatch docs
	@$(TOP)/scripts/beside.sh $(AFMALLOC_CACHE)/timings/kunit-beside.out \
		$(MAKE) --no-print-directory SETUP_DONE=1 kunit -- \
		$(MAKE) --no-print-directory SETUP_DONE=1 vm-test-debug vm-test-smp vm-test-offline vm-test-stock || \
		{ $(TIMED) --report; $(TIMED) --failures; echo "make check: FAILED"; exit 1; }
	@$(TIMED) --report
	@echo "make check: all passed"

timings-begin:
	@$(TIMED) --begin

# Every figure in README.md and bench/results/README.md against the committed
# results (python3 only, a second); `make readme` regenerates both and the
# summary plot.
readme-check:
	$(TIMED) readme-check python3 $(TOP)/bench/readme_results.py --check

# The workbench scripts' own tests (tests/scripts/, bash only, a second).
script-tests:
	$(TIMED) script-tests bash -c '$(TOP)/tests/scripts/shared-cache.sh && \
		$(TOP)/tests/scripts/vm-run-boot.sh && $(TOP)/tests/scripts/beside.sh && \
		$(TOP)/tests/scripts/timed.sh && $(TOP)/tests/scripts/prepare-tree.sh && \
		$(TOP)/tests/scripts/churn-options.sh && $(TOP)/tests/scripts/speed-options.sh && \
		$(TOP)/tests/scripts/arm64-options.sh && $(TOP)/tests/scripts/afm-params.sh && \
		$(TOP)/tests/scripts/hugetlb-take.sh && $(TOP)/tests/scripts/dataset.sh'

readme:
	python3 $(TOP)/bench/readme_results.py
	$(AFMALLOC_CACHE)/venv/bin/python $(TOP)/bench/plot_summary.py

# The demo's steps are timed too (timings/demo.tsv, logs in timings/demo-logs;
# the guest console of the boot is kept in the results folder, console.log).
demo: export AFMALLOC_TIMINGS = $(AFMALLOC_CACHE)/timings/demo.tsv
demo: export AFMALLOC_TIMINGS_LOGS = $(AFMALLOC_CACHE)/timings/demo-logs
demo: timings-begin setup
	@$(TIMED) demo $(TOP)/bench/run.sh --dataset quick --rounds 1 --alloc $(ALLOC) || \
		{ $(TIMED) --report; $(TIMED) --failures; \
		  echo "make demo: FAILED (step logs in $(AFMALLOC_CACHE)/timings/demo-logs)"; exit 1; }
	@$(TIMED) --report

bench: setup
	$(TOP)/bench/run.sh --dataset $(DATASET) --rounds $(ROUNDS) --alloc $(ALLOC) \
		--comp $(COMP) --runs $(RUNS) $(if $(OUT),--out $(OUT)) $(if $(BOOT_ARGS),--append "$(BOOT_ARGS)")

# The same on an emulated arm64 guest (QEMU's virt machine under TCG), 16 KiB
# pages by default (PAGES=4K: 4 KiB), with a Debian arm64 root of its own
# (scripts/arm64-root.sh: made once, its configuration run in the guest,
# ~12 min); the arm64 kernel's cross build ~5 min cold. No
# Highalloc-Stress there. ALLOC_ARM64: zsmalloc and afmalloc/zspage.
ALLOC_ARM64 ?= zsmalloc,afmalloc/zspage
bench-arm64: setup
	$(TOP)/bench/run.sh --arch arm64 $(if $(PAGES),--pages $(PAGES)) --dataset $(DATASET) \
		--rounds $(ROUNDS) --alloc $(ALLOC_ARM64) --comp $(COMP) --runs $(RUNS) \
		$(if $(OUT),--out $(OUT)) $(if $(BOOT_ARGS),--append "$(BOOT_ARGS)")

# Swap churn (issue 15): bench/churn/run.sh, every allocator in one boot,
# ~7 min per allocator and run under TCG, after a warm-up of ~1 min per
# allocator (run.sh --warmup); CHURN_TARGET=zram|zswap, COMP, RUNS.
# zsmalloc+compact is not a churn allocator, hence CHURN_ALLOC. Results in
# bench/results/churn-TARGET-COMP unless OUT is given.
CHURN_TARGET ?= zram
CHURN_ALLOC ?= afmalloc/zspage,afmalloc/slab,zsmalloc
bench-churn: setup
	$(TOP)/bench/churn/run.sh --target $(CHURN_TARGET) --alloc $(CHURN_ALLOC) --comp $(COMP) \
		--runs $(RUNS) --cpus 2 --memory 2G --mb 384 --procs 4 --threads 2 \
		--churn 120 --exit 60 --switch 60 --switch-slot 15 --rest 60 \
		--out $(or $(OUT),$(TOP)/bench/results/churn-$(CHURN_TARGET)-$(COMP))

# The short churn test on the lean kernel (~3.5 min): zram and zswap, afmalloc
# and zsmalloc, every page checked; fails on a mismatch or if nothing swapped.
vm-test-churn: guest
	$(TIMED) vm-churn-short $(TOP)/scripts/vm-run.sh --memory 2G --timeout 1200 --append slab_nomerge \
		$(TOP)/tests/vm/churn-short.sh --bin "$$($(TOP)/bench/churn/run.sh --print-bin)"

# fio on one zram device per allocator in one boot (~10 min under TCG, host alone).
bench-fio: setup
	$(TOP)/bench/fio/run.sh $(if $(OUT),--out $(OUT))

# A small zram device written from every vCPU of a many-vCPU guest
# (CPUS, default 8): what a pool that stores little costs in shards.
bench-smallpool: setup
	$(TOP)/bench/smallpool/run.sh $(if $(CPUS),--cpus $(CPUS)) $(if $(OUT),--out $(OUT))

# zswap wall time, afmalloc vs zsmalloc switched at run time in one boot (~8 min under TCG).
bench-zswap-time: setup
	$(TOP)/bench/zswap-time/run.sh $(if $(OUT),--out $(OUT))

# After a make check: copy its step times and the logs with reliability
# rows into bench/results/ (then regenerate the README's results).
results-collect:
	python3 $(TOP)/bench/readme_results.py --collect-check

# In-kernel microbenchmark: ops/s of every allocator in one boot, 3 runs.
bench-speed: setup
	$(TOP)/bench/speed/run.sh $(if $(WORKING_SET),--working-set $(WORKING_SET)) $(if $(OUT),--out $(OUT))

# The same microbenchmark on the host's own CPU: built into a UML kernel
# and run at its boot, natively (one thread), with a perf profile
# (bench/speed/uml.sh; ~7 min cold for the UML build, ~1 min warm).
bench-speed-uml: setup
	$(TOP)/bench/speed/uml.sh --perf $(if $(WORKING_SET),--working-set $(WORKING_SET)) $(if $(OUT),--out $(OUT))

# The same microbenchmark on arm64, 16 KiB pages by default (PAGES=4K: 4 KiB),
# under qemu-system-aarch64, built in and run at boot, with the memory each
# pool holds after its fill and its writes (bench/speed/arm64.sh; the cross
# build about as long as make kunit-arm64's when cold, 3 min with ccache
# warm from it; about 2 min for the 3 emulated runs of the defaults).
bench-speed-arm64: setup
	$(TOP)/bench/speed/arm64.sh $(if $(PAGES),--pages $(PAGES)) $(if $(OUT),--out $(OUT))

# zswap effective compression (Zswapped/Zswap) of afmalloc and zsmalloc on
# the same workload in one boot of Debian's kernel, recorded for the README.
bench-zswap: setup
	mkdir -p $(or $(OUT),$(TOP)/bench/results/zswap-stock)
	set -o pipefail; $(TOP)/tests/vm/zswap-stock.sh 2>&1 | \
		tee $(or $(OUT),$(TOP)/bench/results/zswap-stock)/zswap.log

module:
	@test -d $(KDIR) || { echo "error: no kernel build dir $(KDIR); install linux-headers-$$(uname -r) or set KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) CONFIG_AFMALLOC=m modules

module-clean:
	$(MAKE) -C $(KDIR) M=$(TOP) clean

checkpatch:
	$(TIMED) checkpatch $(TOP)/scripts/checkpatch.sh

docs:
	$(TIMED) docs $(TOP)/scripts/docs.sh
